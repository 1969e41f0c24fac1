// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A suite with one test whose counts differ from run to run, as a test does
// whose background thread's work depends on timing, and one that never
// varies. The variation is scripted so the calibration test is not itself
// flaky: each run of Noisy.Varies bumps a counter in NOISY_COUNTER_FILE and
// allocates 1 + (counter % 3) blocks. NOISY_EXTRA=1 plants one more
// allocation in Steady.Fixed: the regression calibration must not hide.
//
// Carry.* model state one test leaves for the next, as a shared work queue
// whose next push needs a new node only at a node boundary: Carry.After's
// count depends on how many items Carry.Before queued (NOISY_CARRY, 3 unless
// set); alone, its first run in a process starts at a boundary and its
// second does not. NOISY_AFTER_EXTRA=1 plants one more allocation in
// Carry.After.
//
// Timed.Throughput models a test whose work follows timing (it works for a
// fixed time): the first run that finds NOISY_TIMED_FILE at 0 allocates 1
// block, every later run 201 (child processes run it too, so which run comes
// when is not scripted); without the variable, 1 block every run.
//
// FirstProcess.Only allocates one more 4 KiB block only in the first process
// that finds no file at NOISY_MARKER (and makes it): the suite's own run
// regresses, a fresh process to confirm it does not.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "scripted_counts.h"

namespace {

using heapgate::sample::allocate_and_free;

int next_count() { return heapgate::sample::next_count("NOISY_COUNTER_FILE"); }

}  // namespace

TEST(Noisy, Varies) {
  const int count = next_count();  // before measuring matters not: the file I/O is counted too, equally each run
  allocate_and_free(1 + count % 3);
}

TEST(Steady, Fixed) {
  const bool extra = std::getenv("NOISY_EXTRA") != nullptr;
  allocate_and_free(extra ? 4 : 3);
}

namespace {

// Items ever pushed onto the modelled queue; four fit in a node.
int g_queued = 0;

int carried_items() {
  const char* carry = std::getenv("NOISY_CARRY");
  return carry == nullptr ? 3 : std::atoi(carry);
}

}  // namespace

TEST(Carry, Before) { g_queued += carried_items(); }

TEST(Carry, After) {
  if (g_queued % 4 == 0) allocate_and_free(1);  // a new node
  ++g_queued;
  if (std::getenv("NOISY_AFTER_EXTRA") != nullptr) allocate_and_free(1);
}

TEST(Timed, Throughput) {
  const int count = heapgate::sample::next_count("NOISY_TIMED_FILE");
  allocate_and_free(count == 0 ? 1 : 201);
}

TEST(FirstProcess, Only) {
  const char* marker = std::getenv("NOISY_MARKER");
  if (marker != nullptr && !std::ifstream(marker)) {
    std::ofstream(marker) << "seen\n";
    heapgate::sample::g_sink = std::malloc(4096);
    std::free(heapgate::sample::g_sink);
  }
}
