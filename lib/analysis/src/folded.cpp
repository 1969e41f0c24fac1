// SPDX-License-Identifier: MIT
// parse_folded() and write_folded() (heapgate/folded.h): the folded-text grammar and the escaping
// that makes every written line parse back; folded_stacks() of a profile or diff, root first.
#include "heapgate/folded.h"

#include <charconv>
#include <cmath>

namespace heapgate {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }

// The grammar of a folded value, checked before from_chars, which would also
// take "inf", "nan" and hex floats.
bool is_decimal_number(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  std::size_t digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    std::size_t exp_digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

std::string quoted(std::string_view s) {
  constexpr std::size_t kMax = 80;
  std::string out = "\"";
  out += s.size() > kMax ? std::string(s.substr(0, kMax)) + "..." : std::string(s);
  out += '"';
  return out;
}

// flamegraph.pl splits frames at ';' and records at line breaks: a frame name
// keeps its meaning with ':' and a space in their place. The leaf's trailing
// blanks would join the blanks before the value, where every reader (this
// one too) drops them, so they are dropped here; a frame left empty, which no
// reader accepts, is written "?".
void append_frame(std::string& out, std::string_view frame, bool leaf) {
  const std::size_t start = out.size();
  for (char c : frame) {
    if (c == ';') c = ':';
    if (c == '\n' || c == '\r') c = ' ';
    out += c;
  }
  if (leaf) {
    while (out.size() > start && is_blank(out.back())) out.pop_back();
  }
  if (out.size() == start) out += '?';
}

}  // namespace

bool operator==(const FoldedStack& a, const FoldedStack& b) noexcept {
  return a.frames == b.frames && a.value == b.value;
}
bool operator!=(const FoldedStack& a, const FoldedStack& b) noexcept { return !(a == b); }

Result<std::vector<FoldedStack>> parse_folded(std::string_view text, std::string_view source) {
  std::vector<FoldedStack> out;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    // Built on failure only: a profile's folded text can have a million lines.
    auto bad_line = [&](std::string what) {
      return fail(make_error(ErrorCode::parse_error, std::string(source) + ":" + std::to_string(line_no),
                             std::move(what), "write one stack per line: root;caller;leaf VALUE"));
    };
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    while (!line.empty() && is_blank(line.back())) line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;

    std::size_t sep = line.find_last_of(" \t");
    if (sep == std::string_view::npos) {
      return bad_line("found " + quoted(line) + "; expected \"STACK VALUE\" (a space and a number after the stack)");
    }
    std::string_view value_text = line.substr(sep + 1);
    std::string_view stack = line.substr(0, sep);
    while (!stack.empty() && is_blank(stack.back())) stack.remove_suffix(1);
    if (!is_decimal_number(value_text)) {
      return bad_line("found " + quoted(value_text) + " after the last space; expected a number (e.g. 4096, -12, 2.5)");
    }
    if (stack.empty()) {
      return bad_line("found only the value " + quoted(value_text) +
                      "; expected a stack of ';'-separated frames before it");
    }
    FoldedStack entry;
    const bool plus = value_text.front() == '+';
    auto parsed =
        std::from_chars(value_text.data() + (plus ? 1 : 0), value_text.data() + value_text.size(), entry.value);
    if (parsed.ec != std::errc() || !std::isfinite(entry.value)) {
      return bad_line("value " + quoted(value_text) + " is out of range; expected a finite number");
    }
    std::size_t start = 0;
    for (std::size_t k = 1;; ++k) {
      std::size_t semi = stack.find(';', start);
      std::string_view frame =
          stack.substr(start, semi == std::string_view::npos ? std::string_view::npos : semi - start);
      if (frame.empty()) {
        return bad_line("frame " + std::to_string(k) + " of " + quoted(stack) +
                        " is empty; expected a name between every two ';'");
      }
      entry.frames.emplace_back(frame);
      if (semi == std::string_view::npos) break;
      start = semi + 1;
    }
    out.push_back(std::move(entry));
  }
  return out;
}

std::vector<FoldedStack> folded_stacks(const NormalizedProfile& profile, ProfileMetric metric) {
  std::vector<FoldedStack> out;
  for (const NormalizedStack& s : profile.stacks) {
    const double value = profile_metric_value(s.scaled, metric);
    if (value == 0) continue;
    FoldedStack f;
    f.value = value;
    for (auto it = s.frames.rbegin(); it != s.frames.rend(); ++it) f.frames.push_back(it->str());
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<FoldedStack> folded_stacks(const ProfileDiff& diff, ProfileMetric metric) {
  std::vector<FoldedStack> out;
  for (const StackDelta& e : diff.entries) {
    const double value = profile_metric_value(e.delta, metric);
    if (value == 0) continue;
    FoldedStack f;
    f.value = value;
    for (auto it = e.frames.rbegin(); it != e.frames.rend(); ++it) f.frames.push_back(it->str());
    out.push_back(std::move(f));
  }
  return out;
}

std::string write_folded(const std::vector<FoldedStack>& stacks) {
  std::string out;
  for (const FoldedStack& s : stacks) {
    const long long value = std::llround(s.value);
    if (value == 0 || s.frames.empty()) continue;
    for (std::size_t i = 0; i < s.frames.size(); ++i) {
      if (i > 0) out += ';';
      append_frame(out, s.frames[i], i + 1 == s.frames.size());
    }
    out += ' ';
    out += std::to_string(value);
    out += '\n';
  }
  return out;
}

std::string render_folded(const ProfileDiff& diff, ProfileMetric metric) {
  return write_folded(folded_stacks(diff, metric));
}

std::string render_folded(const NormalizedProfile& profile, ProfileMetric metric) {
  return write_folded(folded_stacks(profile, metric));
}

}  // namespace heapgate
