// SPDX-License-Identifier: MIT
// The words of heapgate's closed enums, spelled once per enum. Header-only.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "heapgate/error.h"

namespace heapgate {

/// One value of a closed enum and the word flags, JSON and messages spell it with.
template <typename Enum>
struct VocabularyWord {
  Enum value;
  std::string_view word;
};

/// An enum's words, in the order messages list them: the one place they are
/// spelled, so to_string, parsing and "expected one of …" cannot disagree.
template <typename Enum, std::size_t N>
using Vocabulary = std::array<VocabularyWord<Enum>, N>;

/// The word of `value`; `fallback` for a value the vocabulary leaves out
/// (a value no text names, or one cast from an out-of-range integer).
template <typename Enum, std::size_t N>
constexpr std::string_view word_of(const Vocabulary<Enum, N>& vocabulary, Enum value,
                                   std::string_view fallback) noexcept {
  for (const auto& entry : vocabulary) {
    if (entry.value == value) return entry.word;
  }
  return fallback;
}

/// The value `text` spells exactly (case matters), if any.
template <typename Enum, std::size_t N>
constexpr std::optional<Enum> value_of(const Vocabulary<Enum, N>& vocabulary, std::string_view text) noexcept {
  for (const auto& entry : vocabulary) {
    if (entry.word == text) return entry.value;
  }
  return std::nullopt;
}

/// The values in the vocabulary's order, for an enum whose list of values
/// walks its words too.
template <typename Enum, std::size_t N>
constexpr std::array<Enum, N> values_of(const Vocabulary<Enum, N>& vocabulary) noexcept {
  std::array<Enum, N> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = vocabulary[i].value;
  return out;
}

namespace detail {
// The length of the words joined as list_words() joins them.
template <typename Enum, std::size_t N>
std::size_t listed_size(const Vocabulary<Enum, N>& vocabulary, std::string_view last_separator) noexcept {
  std::size_t size = 0;
  for (std::size_t i = 0; i < N; ++i)
    size += vocabulary[i].word.size() + (i == 0 ? 0 : i + 1 == N ? last_separator.size() : 2);
  return size;
}
// Appends the words joined as list_words() joins them.
template <typename Enum, std::size_t N>
void append_words(std::string& out, const Vocabulary<Enum, N>& vocabulary, std::string_view last_separator) {
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0) out += i + 1 == N ? last_separator : std::string_view(", ");
    out += vocabulary[i].word;
  }
}
}  // namespace detail

/// The words joined by ", " with `last_separator` before the last one:
/// "a, b, c" by default, "a, b or c" with " or ".
template <typename Enum, std::size_t N>
std::string list_words(const Vocabulary<Enum, N>& vocabulary, std::string_view last_separator = ", ") {
  std::string out;
  out.reserve(detail::listed_size(vocabulary, last_separator));  // one allocation
  detail::append_words(out, vocabulary, last_separator);
  return out;
}

/// The value `text` spells, or the one error every vocabulary answers an
/// unknown word with: `parse_error` at `where`, `unknown <noun> "<text>";
/// expected one of <the words>`, fix `write e.g. <example>`. The message is
/// built in one allocation.
template <typename Enum, std::size_t N>
Result<Enum> parse_word(const Vocabulary<Enum, N>& vocabulary, std::string_view text, std::string_view where,
                        std::string_view noun, std::string_view example) {
  if (auto value = value_of(vocabulary, text)) return *value;
  constexpr std::string_view kUnknown = "unknown ", kQuote = " \"", kExpected = "\"; expected one of ";
  std::string what;
  what.reserve(kUnknown.size() + noun.size() + kQuote.size() + text.size() + kExpected.size() +
               detail::listed_size(vocabulary, ", "));
  what.append(kUnknown).append(noun).append(kQuote).append(text).append(kExpected);
  detail::append_words(what, vocabulary, ", ");
  return fail(
      make_error(ErrorCode::parse_error, std::string(where), std::move(what), "write e.g. " + std::string(example)));
}

}  // namespace heapgate
