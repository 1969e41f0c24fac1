// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// `exact` mode's own stack walk (lib/measure/src/frame_walker.h) against
// libunwind's unw_backtrace, which it stands in for: from the first frame
// both share (each starts at its own call), the same return addresses,
// through frames of every shape the compiler makes here, or -1 and
// libunwind's stack instead.
#include <alloca.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "frame_walker.h"
#include "heapgate/unwinder_control.h"

namespace heapgate::detail {
namespace {

constexpr int kMax = 256;

// What a comparison found: ours and libunwind's, from the caller of both_walks() on.
struct Walks {
  std::vector<void*> ours;
  std::vector<void*> theirs;
  bool walked = false;  // ours did not hand over to libunwind
  // Ours from its first frame, and the hashes it gave of them (if any).
  std::vector<void*> all;
  std::vector<std::uint64_t> hashes;
};

__attribute__((noinline)) Walks both_walks(WalkMemory* memory = nullptr) {
  void* ours[kMax];
  void* theirs[kMax];
  WalkHashes hashes;
  const int n = walk_stack(ours, kMax, memory, &hashes);
  const int m = libunwind_backtrace()(theirs, kMax);
  // Each walk's first frame is its own call site in this function.
  Walks w;
  w.walked = n >= 0;
  for (int i = 0; i < m && n > 1; ++i) {
    if (theirs[i] == ours[1]) {
      w.theirs.assign(theirs + i, theirs + m);
      break;
    }
  }
  if (n > 1) w.ours.assign(ours + 1, ours + n);
  if (n > 0) w.all.assign(ours, ours + n);
  if (hashes.whole) w.hashes.assign(hashes.of, hashes.of + std::min(n, kWalkHashes));
  return w;
}

void expect_same(const Walks& w, const char* where) {
  ASSERT_TRUE(w.walked) << where << ": handed over to libunwind";
  EXPECT_GT(w.ours.size(), 3u) << where;
  EXPECT_EQ(w.ours, w.theirs) << where;
  // A hash given for a frame is that of the stack from it outward, however
  // much of the walk was reused.
  for (std::size_t i = 0; i < w.hashes.size(); ++i) {
    EXPECT_EQ(w.hashes[i], stack_hash(w.all.data() + i, static_cast<int>(w.all.size() - i)))
        << where << ", frame " << i;
  }
}

// Recursion that is not a loop: each level uses its result after the call.
__attribute__((noinline)) int deep(int depth, Walks* out) {
  if (depth == 0) {
    *out = both_walks();
    return 0;
  }
  std::string keep(static_cast<std::size_t>(depth), 'd');
  return deep(depth - 1, out) + static_cast<int>(keep.size());
}

// A frame whose size is known only at run time: its CFA comes from rbp.
__attribute__((noinline)) int with_alloca(int bytes, Walks* out) {
  auto* buffer = static_cast<char*>(alloca(static_cast<std::size_t>(bytes)));
  std::memset(buffer, 1, static_cast<std::size_t>(bytes));
  asm volatile("" : : "r"(buffer) : "memory");
  *out = both_walks();
  return buffer[bytes - 1];
}

TEST(FrameWalker, SameStackAsLibunwind) {
  if (!frame_walker_ready() || libunwind_backtrace() == nullptr) GTEST_SKIP() << "no frame walker or no libunwind";
  Walks w;
  (void)deep(0, &w);
  expect_same(w, "shallow");
  (void)deep(60, &w);
  expect_same(w, "60 levels deep");
  EXPECT_GT(w.ours.size(), 60u);
  (void)with_alloca(4000, &w);
  expect_same(w, "below a frame with alloca");
}

TEST(FrameWalker, SameStackOnAnotherThread) {
  if (!frame_walker_ready() || libunwind_backtrace() == nullptr) GTEST_SKIP() << "no frame walker or no libunwind";
  Walks w;
  std::thread([&w] { (void)deep(10, &w); }).join();
  expect_same(w, "a std::thread");
}

// A thread's walks share their outer frames; some calls differ below them.
WalkMemory g_memory;
volatile int g_sink = 0;
__attribute__((noinline)) void leaf(Walks* out) {
  *out = both_walks(&g_memory);
  g_sink = g_sink + 1;
}
// Two callers with frames of one size: leaf's frame is at the same place
// with the same return address under both, and only the callers' own return
// addresses, above it, tell them apart.
__attribute__((noinline)) void caller_a(Walks* out) {
  leaf(out);
  g_sink = g_sink + 2;
}
__attribute__((noinline)) void caller_b(Walks* out) {
  leaf(out);
  g_sink = g_sink + 3;
}
__attribute__((noinline)) int deep_then(int depth, Walks* out, bool a) {
  if (depth == 0) {
    if (a) {
      caller_a(out);
    } else {
      caller_b(out);
    }
    return 0;
  }
  std::string keep(static_cast<std::size_t>(depth), 'm');
  return deep_then(depth - 1, out, a) + static_cast<int>(keep.size());
}

TEST(FrameWalker, ReusesOnlyCallersStillOnTheStack) {
  if (!frame_walker_ready() || libunwind_backtrace() == nullptr) GTEST_SKIP() << "no frame walker or no libunwind";
  Walks w;
  for (int round = 0; round < 4; ++round) {
    (void)deep_then(20, &w, true);
    expect_same(w, "under caller_a");
    EXPECT_EQ(w.hashes.size(), static_cast<std::size_t>(kWalkHashes));
    EXPECT_GT(g_memory.count, 20);
    (void)deep_then(20, &w, false);
    expect_same(w, "under caller_b, after caller_a");
    EXPECT_EQ(w.hashes.size(), static_cast<std::size_t>(kWalkHashes));
    (void)deep_then(5, &w, false);
    expect_same(w, "shallower");
    (void)deep(3, &w);
    expect_same(w, "without memory, between walks with it");
  }
  std::thread([&w] { (void)deep_then(3, &w, true); }).join();
  expect_same(w, "another thread's stack, with this thread's memory");
}

TEST(FrameWalker, TruncatesAtTheMaximumAsLibunwindDoes) {
  if (!frame_walker_ready()) GTEST_SKIP() << "no frame walker";
  void* frames[3];
  EXPECT_EQ(walk_stack(frames, 3, nullptr), 3);
  // Cut short, with a memory: no hash of a stack it did not return whole.
  WalkMemory memory;
  WalkHashes hashes;
  hashes.whole = true;
  EXPECT_EQ(walk_stack(frames, 3, &memory, &hashes), 3);
  EXPECT_FALSE(hashes.whole);
}

Walks g_in_handler;
void handler(int) { g_in_handler = both_walks(); }

// A signal frame is not one its rules step through: the stack goes to
// libunwind, or, walked, is libunwind's.
TEST(FrameWalker, ASignalHandlersStackIsLibunwinds) {
  if (!frame_walker_ready() || libunwind_backtrace() == nullptr) GTEST_SKIP() << "no frame walker or no libunwind";
  struct sigaction action {};
  action.sa_handler = handler;
  struct sigaction previous {};
  ASSERT_EQ(::sigaction(SIGUSR1, &action, &previous), 0);
  ASSERT_EQ(::raise(SIGUSR1), 0);
  ASSERT_EQ(::sigaction(SIGUSR1, &previous, nullptr), 0);
  EXPECT_FALSE(g_in_handler.walked) << "a signal frame was stepped through";
}

// A fiber's entry, as marl's: hand-written assembly without unwind
// information, with no frame chain below it (rbp holds what is no frame).
// It calls `fn` with the stack aligned as a call expects.
extern "C" void heapgate_test_call_without_cfi(void (*fn)());
asm(R"(
  .text
  .globl heapgate_test_call_without_cfi
  .type heapgate_test_call_without_cfi, @function
heapgate_test_call_without_cfi:
  push %rbp
  mov $16, %rbp
  call *%rdi
  pop %rbp
  ret
heapgate_test_call_without_cfi_end:
  .size heapgate_test_call_without_cfi, heapgate_test_call_without_cfi_end - heapgate_test_call_without_cfi
)");

Walks g_on_fiber;

extern "C" __attribute__((noinline)) void walk_on_fiber() {
  void* frames[kMax];
  const int n = walk_stack(frames, kMax, nullptr, nullptr);
  g_on_fiber.walked = n >= 0;
  if (n > 0) g_on_fiber.all.assign(frames, frames + n);
}

// Code without unwind information ends the walk with the frames inside it:
// libunwind, asked instead, guessed past it on marl's fiber stacks and read
// unmapped memory.
TEST(FrameWalker, CodeWithoutUnwindInformationEndsTheStack) {
  if (!frame_walker_ready()) GTEST_SKIP() << "no frame walker";
  heapgate_test_call_without_cfi(&walk_on_fiber);
  ASSERT_TRUE(g_on_fiber.walked) << "handed over to libunwind";
  ASSERT_GE(g_on_fiber.all.size(), 2u);
  const auto start = reinterpret_cast<std::uintptr_t>(&heapgate_test_call_without_cfi);
  const auto last = reinterpret_cast<std::uintptr_t>(g_on_fiber.all.back());
  EXPECT_GT(last, start);
  EXPECT_LT(last, start + 16) << "the walk did not end in the code without unwind information";
}

}  // namespace
}  // namespace heapgate::detail
