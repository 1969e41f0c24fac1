// SPDX-License-Identifier: MIT
// Frame text and name shortening (heapgate/frame_text.h). Each shortening
// keeps its own scanner: they disagree on purpose (what a template argument
// list becomes, whether parameters stay), and each one's output is relied on
// (frame classes, call-site keys in baselines, labels in reports).
#include "heapgate/frame_text.h"

#include <array>
#include <cctype>
#include <cstddef>
#include <utility>
#include <vector>

namespace heapgate {

// ---- A frame: "function at file:line".

namespace {

constexpr std::string_view kLocationSeparator = " at ";

}  // namespace

std::string join_frame(std::string_view function, std::string_view location) {
  std::string frame(function);
  if (location.empty()) return frame;
  frame.reserve(function.size() + kLocationSeparator.size() + location.size());
  frame += kLocationSeparator;
  frame += location;
  return frame;
}

FrameParts split_frame(std::string_view frame) {
  const std::size_t at = frame.rfind(kLocationSeparator);
  if (at == std::string_view::npos) return {std::string(frame), {}};
  return {std::string(frame.substr(0, at)), std::string(frame.substr(at + kLocationSeparator.size()))};
}

// ---- bare_function_name, strip_return_type: names to match against lists.

namespace {

constexpr std::string_view kAnonymous = "(anonymous namespace)";
constexpr std::string_view kOperatorSymbols = "<>=!+-*/%^&|~,";

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool is_ident(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

// True when an operator name ("operator<<", "operator new[]") starts at s[i].
bool operator_at(std::string_view s, std::size_t i) {
  if (s.compare(i, 8, "operator") != 0) return false;
  if (i > 0 && (is_ident(s[i - 1]))) return false;
  return i + 8 < s.size() && !is_ident(s[i + 8]);
}

// The end of the operator name that starts at s[i].
std::size_t operator_end(std::string_view s, std::size_t i) {
  std::size_t j = i + 8;
  std::string_view rest = s.substr(j);
  for (std::string_view word : {std::string_view(" new"), std::string_view(" delete")}) {
    if (starts_with(rest, word) && (rest.size() == word.size() || !is_ident(rest[word.size()]))) {
      j += word.size();
      if (s.compare(j, 2, "[]") == 0) j += 2;
      return j;
    }
  }
  if (starts_with(rest, "()") || starts_with(rest, "[]")) return j + 2;
  if (!rest.empty() && rest[0] == ' ') {
    // A conversion operator ("operator unsigned long"): up to its "(".
    auto paren = s.find('(', j);
    return paren == std::string_view::npos ? s.size() : paren;
  }
  while (j < s.size() && kOperatorSymbols.find(s[j]) != std::string_view::npos) ++j;
  return j;
}

// Removes template argument lists, keeping operator names intact.
std::string strip_templates(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  int angle = 0;
  for (std::size_t i = 0; i < s.size();) {
    if (angle == 0 && operator_at(s, i)) {
      std::size_t end = operator_end(s, i);
      out.append(s.substr(i, end - i));
      i = end;
      continue;
    }
    const char c = s[i++];
    if (c == '<') {
      ++angle;
    } else if (c == '>' && angle > 0) {
      --angle;
    } else if (angle == 0) {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string bare_function_name(std::string_view demangled) {
  const std::string s = strip_templates(demangled);
  // The parameter list is the last top-level "(...)" group; the return type
  // (template functions) ends at the last top-level space before it.
  std::size_t params = std::string::npos;
  std::size_t name_start = 0;
  int paren = 0;
  int brace = 0;
  bool seen_operator = false;  // spaces after an operator name belong to it
  for (std::size_t i = 0; i < s.size();) {
    const bool top = paren == 0 && brace == 0;
    if (top && s.compare(i, kAnonymous.size(), kAnonymous) == 0) {
      i += kAnonymous.size();
      continue;
    }
    if (top && operator_at(s, i)) {
      i = operator_end(s, i);
      seen_operator = true;
      continue;
    }
    const char c = s[i];
    if (c == '(') {
      if (top) params = i;
      ++paren;
    } else if (c == ')' && paren > 0) {
      --paren;
    } else if (c == '{') {
      ++brace;
    } else if (c == '}' && brace > 0) {
      --brace;
    } else if (c == ' ' && top && params == std::string::npos && !seen_operator) {
      name_start = i + 1;
    }
    ++i;
  }
  std::size_t end = params == std::string::npos ? s.size() : params;
  if (name_start > end) name_start = 0;
  return s.substr(name_start, end - name_start);
}

std::string_view strip_return_type(std::string_view s) {
  // The return type ends at the last top-level space before the first
  // top-level "(" (the parameters, or those of an enclosing function).
  std::size_t last_space = std::string_view::npos;
  int angle = 0;
  for (std::size_t i = 0; i < s.size();) {
    if (angle == 0 && s.compare(i, kAnonymous.size(), kAnonymous) == 0) {
      i += kAnonymous.size();
      continue;
    }
    if (operator_at(s, i)) break;  // nothing after an operator name is a return type
    const char c = s[i];
    if (c == '<') {
      ++angle;
    } else if (c == '>' && angle > 0) {
      --angle;
    } else if (angle == 0 && (c == '(' || c == '{')) {
      break;
    } else if (angle == 0 && c == ' ') {
      last_space = i;
    }
    ++i;
  }
  return last_space == std::string_view::npos ? s : s.substr(last_space + 1);
}

// ---- elide_template_arguments: failure messages and call-site keys.

std::string elide_template_arguments(std::string_view name) {
  std::string out;
  int depth = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    // The '<' of "operator<" and "operator<=" is a name, not a template
    // bracket. Only that first one: "operator<<" reads as "operator<" and
    // template arguments (frame_text.h says why that stays).
    if (c == '<' && i >= 8 && name.compare(i - 8, 8, "operator") == 0) {
      out += c;
      continue;
    }
    if (c == '<') {
      if (depth++ == 0) out += "<\u2026";
      continue;
    }
    if (c == '>' && depth > 0) {
      if (--depth == 0) out += '>';
      continue;
    }
    if (depth == 0) out += c;
  }
  return out;
}

// ---- short_function_name: labels where space is short.

namespace {

// libstdc++ spells its aliases out in demangled names; these are what a
// reader wrote in the source.
constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kAliases{{
    {"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >", "std::string"},
    {"std::basic_string<char, std::char_traits<char>, std::allocator<char> >", "std::string"},
    {"std::basic_string_view<char, std::char_traits<char> >", "std::string_view"},
    {"std::__cxx11::", "std::"},
}};

// Template arguments that are the defaults of standard containers: leaving
// them out changes no meaning a reader needs (`std::vector<int>`).
constexpr std::array<std::string_view, 6> kDefaultArguments{
    "std::allocator<", "std::char_traits<", "std::less<", "std::hash<", "std::equal_to<", "std::default_delete<"};

// Operator symbols, longer first so "<<=" is not read as "<" and "<=".
constexpr std::array<std::string_view, 40> kOperatorTokens{
    "<<=", ">>=", "<=>", "->*", "()", "[]", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
    "++",  "--",  "+=",  "-=",  "*=", "/=", "%=", "^=", "&=", "|=", "->", "<",  ">",  "+",
    "-",   "*",   "/",   "%",   "^",  "&",  "|",  "~",  "!",  "=",  ",",  " "};

// Kept in full when at most this long and without nested template arguments.
constexpr std::size_t kShortArguments = 20;

std::string replace_aliases(std::string_view in) {
  std::string text(in);
  for (const auto& [from, to] : kAliases) {
    for (std::size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) {
      text.replace(at, from.size(), to);
    }
  }
  return text;
}

bool is_open(char c) { return c == '<' || c == '(' || c == '[' || c == '{'; }
bool is_close(char c) { return c == '>' || c == ')' || c == ']' || c == '}'; }

// The index just past the bracket group that opens at `text[open]`, or npos
// when it is not closed. Any bracket kind nests; '<' after "operator" does not
// open (operator<, operator<<, operator<=>) and '>' after '-' does not close.
std::size_t group_end(std::string_view text, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<' && i >= 8 && text.compare(i - 8, 8, "operator") == 0) continue;
    if (c == '>' && i > 0 && text[i - 1] == '-') continue;
    if (is_open(c)) ++depth;
    if (is_close(c) && --depth == 0) return i + 1;
  }
  return std::string_view::npos;
}

// Splits at commas outside brackets.
std::vector<std::string_view> split_arguments(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (is_open(text[i])) {
      const std::size_t end = group_end(text, i);
      if (end == std::string_view::npos) break;
      i = end - 1;
    } else if (text[i] == ',') {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(text.substr(start));
  for (auto& a : out) {
    while (!a.empty() && a.front() == ' ') a.remove_prefix(1);
    while (!a.empty() && a.back() == ' ') a.remove_suffix(1);
  }
  return out;
}

std::string abbreviate(std::string_view text, bool top_level);

// `<...>` of a template: kept when short and flat, else `<…>`.
std::string template_arguments(std::string_view inside) {
  std::string joined;
  const std::vector<std::string_view> args = split_arguments(inside);
  for (std::size_t k = 0; k < args.size(); ++k) {
    bool is_default = false;
    for (std::string_view d : kDefaultArguments) is_default = is_default || args[k].substr(0, d.size()) == d;
    if (k > 0 && is_default) continue;
    joined += (joined.empty() ? "" : ", ") + abbreviate(args[k], false);
  }
  if (joined.size() <= kShortArguments && joined.find('<') == std::string::npos) {
    // "std::vector<char>" rather than "std::vector<char >".
    while (!joined.empty() && joined.back() == ' ') joined.pop_back();
    return "<" + joined + ">";
  }
  return "<\xE2\x80\xA6>";
}

// One pass over a name: template arguments shortened; at the top level the
// parameter list and what follows it are dropped.
std::string abbreviate(std::string_view text, bool top_level) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == 'o' && text.compare(i, 8, "operator") == 0 &&
        (i == 0 || !std::isalnum(static_cast<unsigned char>(text[i - 1])))) {
      // The operator's symbol is its name ("operator<<", "operator()"); what
      // follows it may open template arguments ("operator+<char, …>").
      std::size_t j = i + 8;
      for (std::string_view token : kOperatorTokens) {
        if (text.compare(j, token.size(), token) == 0) {
          j += token.size();
          break;
        }
      }
      out.append(text.substr(i, j - i));
      i = j - 1;
      continue;
    }
    if (!is_open(c)) {
      out += c;
      continue;
    }
    const std::size_t end = group_end(text, i);
    if (end == std::string_view::npos) {
      out.append(text.substr(i));  // unbalanced: keep the rest as it is
      break;
    }
    const std::string_view inside = text.substr(i + 1, end - i - 2);
    if (c == '<') {
      out += template_arguments(inside);
    } else if (c == '(' && top_level && text.compare(end, 2, "::") != 0) {
      // The parameter list: the rest is qualifiers (const, &&, [clone .cold]).
      break;
    } else {
      out.append(text.substr(i, end - i));  // (anonymous namespace), {lambda()#1}, [abi:cxx11]
    }
    i = end - 1;
  }
  return out;
}

// The name after a return type: what follows the last space outside
// brackets, unless that space belongs to "operator new" and the like.
std::string without_return_type(const std::string& name) {
  std::size_t limit = name.size();
  for (std::size_t at = name.find("operator"); at != std::string::npos; at = name.find("operator", at + 1)) {
    if (at == 0 || !std::isalnum(static_cast<unsigned char>(name[at - 1]))) {
      limit = at;
      break;
    }
  }
  std::size_t cut = std::string::npos;
  int depth = 0;
  for (std::size_t i = 0; i < limit; ++i) {
    if (is_open(name[i])) ++depth;
    if (is_close(name[i]) && depth > 0) --depth;
    if (name[i] == ' ' && depth == 0) cut = i;
  }
  return cut == std::string::npos ? name : name.substr(cut + 1);
}

}  // namespace

std::string short_function_name(std::string_view function) {
  const std::string name = without_return_type(abbreviate(replace_aliases(function), true));
  return name.empty() ? std::string(function) : name;
}

std::string short_frame_label(std::string_view frame) { return short_function_name(split_frame(frame).function); }

}  // namespace heapgate
