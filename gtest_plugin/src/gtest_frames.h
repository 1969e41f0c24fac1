// SPDX-License-Identifier: MIT
// What GoogleTest allocates for every test, told apart by its stacks: the
// GoogleTest face answers Face::is_framework_stack() with it, so the engine
// leaves those stacks out of the call sites it measures and out of what
// explains a failure. The engine and the gate know no test framework.
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
/// `stacks` without those is_gtest_overhead() holds, in their order.
std::vector<StackSample> without_gtest_overhead(std::vector<StackSample> stacks);

}  // namespace heapgate::gtest
