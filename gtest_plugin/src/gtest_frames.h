// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// What GoogleTest allocates for every test, told apart by its stacks: the
// plugin leaves those stacks out of the call sites it measures and, through
// its explainer (Explainer::is_framework_stack()), out of what explains a
// failure. The gate itself knows no test framework.
#pragma once

#include <vector>

#include "heapgate/frame_name.h"

#include "heapgate/stack_sample.h"

namespace heapgate::gtest {

/// A stack made by GoogleTest for every test rather than by the test: the
/// fixture object itself ("[framework]", all its frames GoogleTest's), or
/// testing::Test's flag saver, built while the generated test class and its
/// fixtures are default-constructed. Read after normalize_profile() dropped
/// GoogleTest's own frames: leading std:: frames are skipped, and what is
/// left must be "[framework]" or a chain of default constructors that ends
/// in the generated `..._Test()` class. A stack with nothing left (no
/// frames, or std:: frames only) is one too.
bool is_gtest_overhead(const StackSample& stack);
/// How many of `frames` (innermost first) is_gtest_overhead() and
/// call_sites_of() read: through the first frame of the program's own that is
/// not a default constructor (both have decided there), or all of them.
std::size_t frames_deciding_call_site(const std::vector<FrameName>& frames);

/// `stacks` without those is_gtest_overhead() holds, in their order.
std::vector<StackSample> without_gtest_overhead(std::vector<StackSample> stacks);

}  // namespace heapgate::gtest
