// SPDX-License-Identifier: MIT
// What the running test asked for through the HEAPGATE_* macros
// (heapgate/harness.h), for the listener to read when the test ends.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "heapgate/harness.h"

namespace heapgate::harness {

inline constexpr std::size_t kMetricCount = 5;

/// Plain data, so that declaring a budget never allocates inside the
/// measured scope. Reset when each test starts.
struct TestRequests {
  std::array<std::uint64_t, kMetricCount> limits{};
  std::array<bool, kMetricCount> limited{};
  int leak_check = -1;  ///< -1: the run's default; 0: leaks allowed; 1: leaks are failures
  bool gate_call_sites = false;
};

/// The running test's requests (budgets.cpp).
TestRequests& test_requests() noexcept;

/// The running test `test` gates its call sites: it asked to
/// (HEAPGATE_GATE_CALL_SITES) or --heapgate_gate_call_sites selects it.
bool gates_call_sites(const std::string& test, const Options& options);

/// `test` is measured alone too: --heapgate_measure_alone, unless
/// --heapgate_measure_alone_skip selects it.
bool measures_alone(const std::string& test, const Options& options);

}  // namespace heapgate::harness
