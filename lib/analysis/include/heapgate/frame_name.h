// SPDX-License-Identifier: MIT
// A frame of a normalized stack as a shared, immutable name. Header-only;
// the one string per distinct text is made by Symbolizer::frame_name()
// (lib/analysis/src/symbolizer.cpp).
#pragma once

#include <cstddef>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

namespace heapgate {

/// One frame of a normalized stack: an immutable, shared string.
///
/// A profile of 50,000 stacks holds about a million frames but only a few
/// thousand distinct names, so frames share their text: copying a FrameName
/// copies a reference (no allocation), and names made by one Symbolizer (see
/// Symbolizer::frame_name) share one string per distinct text, which makes
/// comparing stacks of two profiles mostly pointer comparisons.
///
/// Reads like a `const std::string`: converts implicitly to
/// `const std::string&`, compares by content with FrameName, std::string,
/// std::string_view and C strings, and prints with `<<`. Thread-safe to copy
/// and read from several threads (the count is atomic; the text never changes).
class FrameName {
 public:
  /// The empty name.
  FrameName() = default;
  /// A name with its own copy of `text` (implicit, so `{"f()", "main"}` builds a stack).
  FrameName(std::string text) : text_(std::make_shared<const std::string>(std::move(text))) {}  // NOLINT
  FrameName(std::string_view text) : FrameName(std::string(text)) {}                            // NOLINT
  FrameName(const char* text) : FrameName(std::string(text)) {}                                 // NOLINT

  /// The text; valid as long as any copy of this FrameName exists.
  const std::string& str() const noexcept { return text_ ? *text_ : empty_string(); }
  operator const std::string&() const noexcept { return str(); }  // NOLINT(google-explicit-constructor)
  std::string_view view() const noexcept { return str(); }
  const char* c_str() const noexcept { return str().c_str(); }
  std::size_t size() const noexcept { return str().size(); }
  bool empty() const noexcept { return str().empty(); }
  /// True when both share one string (then they are equal; the converse need not hold).
  bool same_storage(const FrameName& other) const noexcept { return text_ == other.text_; }

  friend bool operator==(const FrameName& a, const FrameName& b) noexcept {
    return a.text_ == b.text_ || a.str() == b.str();
  }
  friend bool operator!=(const FrameName& a, const FrameName& b) noexcept { return !(a == b); }
  /// Orders by content (std::string's order).
  friend bool operator<(const FrameName& a, const FrameName& b) noexcept {
    return a.text_ != b.text_ && a.str() < b.str();
  }
  friend bool operator>(const FrameName& a, const FrameName& b) noexcept { return b < a; }
  friend bool operator<=(const FrameName& a, const FrameName& b) noexcept { return !(b < a); }
  friend bool operator>=(const FrameName& a, const FrameName& b) noexcept { return !(a < b); }

  friend bool operator==(const FrameName& a, std::string_view b) noexcept { return a.view() == b; }
  friend bool operator==(std::string_view a, const FrameName& b) noexcept { return a == b.view(); }
  friend bool operator!=(const FrameName& a, std::string_view b) noexcept { return a.view() != b; }
  friend bool operator!=(std::string_view a, const FrameName& b) noexcept { return a != b.view(); }
  friend bool operator==(const FrameName& a, const std::string& b) noexcept { return a.view() == b; }
  friend bool operator==(const std::string& a, const FrameName& b) noexcept { return a == b.view(); }
  friend bool operator!=(const FrameName& a, const std::string& b) noexcept { return a.view() != b; }
  friend bool operator!=(const std::string& a, const FrameName& b) noexcept { return a != b.view(); }
  friend bool operator==(const FrameName& a, const char* b) noexcept { return a.view() == b; }
  friend bool operator==(const char* a, const FrameName& b) noexcept { return a == b.view(); }
  friend bool operator!=(const FrameName& a, const char* b) noexcept { return a.view() != b; }
  friend bool operator!=(const char* a, const FrameName& b) noexcept { return a != b.view(); }

  friend std::ostream& operator<<(std::ostream& os, const FrameName& name) { return os << name.str(); }

 private:
  static const std::string& empty_string() noexcept {
    static const std::string kEmpty;
    return kEmpty;
  }

  std::shared_ptr<const std::string> text_;
};

}  // namespace heapgate
