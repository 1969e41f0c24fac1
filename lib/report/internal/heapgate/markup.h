// SPDX-License-Identifier: MIT
// Escaping for heapgate's markup: the SVG flame graph, the HTML report and
// the history's trend pages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace heapgate::detail {

/// The length of the valid UTF-8 sequence starting at `text[i]` (1..4), or 0
/// when it is invalid there (bad lead or continuation byte, overlong form,
/// surrogate, beyond U+10FFFF, cut off) or encodes U+FFFE/U+FFFF, which XML
/// does not allow either.
inline std::size_t utf8_sequence_length(std::string_view text, std::size_t i) noexcept {
  const auto c = static_cast<unsigned char>(text[i]);
  if (c < 0x80) return 1;
  std::size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (len == 0 || i + len > text.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return 0;
  }
  const auto c1 = static_cast<unsigned char>(text[i + 1]);
  if (len == 3) {
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0)) return 0;
    if (c == 0xEF && c1 == 0xBF && static_cast<unsigned char>(text[i + 2]) >= 0xBE) return 0;
  }
  if (len == 4 && ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90))) return 0;
  return len;
}

/// `text` as XML or HTML character data or a quoted attribute value: the five
/// markup characters become entities. A name from a profile may hold any
/// bytes, and one bad byte makes an XML parser reject the whole file, so
/// control characters other than tab and line feed, and invalid UTF-8, each
/// become U+FFFD.
inline std::string escape_markup(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    const std::size_t len = utf8_sequence_length(text, i);
    if (len == 0 || (len == 1 && static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') || c == '\x7f') {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.append(text, i, len);
    }
    i += len;
  }
  return out;
}

}  // namespace heapgate::detail
