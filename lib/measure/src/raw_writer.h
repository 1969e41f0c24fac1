// SPDX-License-Identifier: MIT
// Text written straight to a file descriptor from a fixed buffer, without
// allocating: whole-process recording (process_recorder.cpp) writes its files from
// fatal signals' handlers too, when the interrupted code may hold the
// allocator's locks. Only async-signal-safe calls (write).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace heapgate::detail {

class RawWriter {
 public:
  explicit RawWriter(int fd) noexcept : fd_(fd) {}
  RawWriter(const RawWriter&) = delete;
  RawWriter& operator=(const RawWriter&) = delete;

  void put(std::string_view text) noexcept {
    while (!text.empty()) {
      if (used_ == sizeof buf_) flush();
      const std::size_t n = text.size() < sizeof buf_ - used_ ? text.size() : sizeof buf_ - used_;
      std::memcpy(buf_ + used_, text.data(), n);
      used_ += n;
      text.remove_prefix(n);
    }
  }
  void put(char c) noexcept { put(std::string_view(&c, 1)); }

  // Decimal, or hexadecimal without a prefix (as write_profile prints them).
  void number(std::uint64_t v, int base = 10) noexcept {
    char digits[24];
    int n = 0;
    do {
      const unsigned d = static_cast<unsigned>(v % static_cast<unsigned>(base));
      digits[n++] = static_cast<char>(d < 10 ? '0' + d : 'a' + d - 10);
      v /= static_cast<unsigned>(base);
    } while (v != 0);
    char out[24];
    for (int i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
    put(std::string_view(out, static_cast<std::size_t>(n)));
  }

  // A JSON string, quoted; bytes outside printable ASCII as \u00XX.
  void json_string(std::string_view text) noexcept {
    put('"');
    for (unsigned char c : text) {
      if (c == '"' || c == '\\') {
        put('\\');
        put(static_cast<char>(c));
      } else if (c < 0x20 || c >= 0x7f) {
        const char hex[] = "0123456789abcdef";
        const char esc[] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        put(std::string_view(esc, sizeof esc));
      } else {
        put(static_cast<char>(c));
      }
    }
    put('"');
  }

  // Copies a whole file (e.g. /proc/self/maps) into the output.
  void copy_file(const char* path) noexcept {
    const int in = ::open(path, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
      failed_ = true;
      return;
    }
    flush();
    for (;;) {
      const ssize_t n = ::read(in, buf_, sizeof buf_);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (n < 0) failed_ = true;
        break;
      }
      used_ = static_cast<std::size_t>(n);
      flush();
    }
    ::close(in);
  }

  /// Writes what is buffered; false if any write failed so far.
  bool flush() noexcept {
    std::size_t at = 0;
    while (at < used_) {
      const ssize_t n = ::write(fd_, buf_ + at, used_ - at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        failed_ = true;
        break;
      }
      at += static_cast<std::size_t>(n);
    }
    used_ = 0;
    return !failed_;
  }

 private:
  int fd_;
  bool failed_ = false;
  std::size_t used_ = 0;
  char buf_[8192];
};

}  // namespace heapgate::detail
