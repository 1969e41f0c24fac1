// SPDX-License-Identifier: MIT
// The usable size jemalloc gives a request, computed instead of asked.
#pragma once

#include <cstddef>
#include <cstdint>

namespace heapgate::detail {

// The allocation hooks need every block's usable size. Asking jemalloc
// (sallocx) walks its address map, ~7% of what counting costs on an
// allocation-heavy test. But jemalloc passes the hooks of malloc and operator
// new the size requested, and those of sized frees (operator delete(void*,
// size_t), which the standard containers call) the size given back, and for
// both the usable size is the request rounded up to jemalloc's size class.
// The classes are jemalloc's default layout on 64-bit Linux: 8, then
// multiples of 16 up to 128, then four per doubling. Since a build of jemalloc
// may be configured otherwise, the layout is used only after checking every
// class up to kMaxSize against jemalloc's own nallocx.
class SizeClasses {
 public:
  using NallocxFn = std::size_t (*)(std::size_t, int);
  static constexpr std::uint64_t kMaxSize = std::uint64_t{4} << 20;

  // Checks the layout against `nallocx` (jemalloc's answer for a request);
  // true if it matches, and only then does usable() answer.
  bool init(NallocxFn nallocx) noexcept {
    known_ = false;
    if (nallocx == nullptr) return false;
    for (std::uint64_t size = 1; size <= kMaxSize;) {
      const std::uint64_t usize = round_up(size);
      if (nallocx(size, 0) != usize || nallocx(usize, 0) != usize) return false;
      size = usize + 1;
    }
    known_ = true;
    return true;
  }

  // The usable size of a plain request of `size` bytes; 0 if not known here
  // (the layout did not check out, a request of 0, or above kMaxSize).
  std::uint64_t usable(std::uint64_t size) const noexcept {
    if (!known_ || size == 0 || size > kMaxSize) return 0;
    return round_up(size);
  }

 private:
  static std::uint64_t round_up(std::uint64_t size) noexcept {
    if (size <= 8) return 8;
    if (size <= 128) return (size + 15) & ~std::uint64_t{15};
    const unsigned group = 63 - static_cast<unsigned>(__builtin_clzll(size - 1));
    const std::uint64_t step = std::uint64_t{1} << (group - 2);
    return (size + step - 1) & ~(step - 1);
  }

  bool known_ = false;
};

}  // namespace heapgate::detail
