// SPDX-License-Identifier: MIT
// What every fuzz target shares: the input as text, and a property check
// that aborts (so libFuzzer keeps the input as crash-<sha>) with the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace heapgate::fuzz {

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

[[noreturn]] inline void property_failed(const char* file, int line, const char* property) {
  std::fprintf(stderr, "heapgate fuzz: %s:%d: property does not hold: %s\n", file, line, property);
  std::abort();
}

}  // namespace heapgate::fuzz

/// Aborts, naming `cond`, when a property of the code under test is false.
#define HEAPGATE_FUZZ_CHECK(cond) ((cond) ? (void)0 : ::heapgate::fuzz::property_failed(__FILE__, __LINE__, #cond))
