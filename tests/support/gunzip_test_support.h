// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Reading back the gzipped pprof files heapgate writes (tests only; needs zlib).
#pragma once

#include <zlib.h>

#include <string>

#include <gtest/gtest.h>

namespace heapgate::testing {

/// The uncompressed bytes of a whole gzip stream; a test failure if it is not one.
inline std::string gunzip(const std::string& bytes) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  int status = Z_OK;
  char buffer[64 * 1024];
  while (status == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    status = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - z.avail_out);
  }
  EXPECT_EQ(status, Z_STREAM_END) << "not a complete gzip stream";
  inflateEnd(&z);
  return out;
}

}  // namespace heapgate::testing
