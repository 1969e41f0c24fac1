// SPDX-License-Identifier: MIT
// The exact re-run child (--heapgate_internal_child=N): the suite run starts
// it (explainers.cpp) to run tests again in exact mode, and reads back the
// records it writes. It judges nothing; it only collects stacks.
#pragma once

#include "heapgate/profile.h"
#include "heapgate/report.h"
#include "plugin_run.h"

namespace heapgate::harness {

/// The stacks the parent will show, from the test's exact-mode profile, and
/// every call site of a test that gates them. A growth child run in exact
/// mode (to explain a leak that grows) brings its stacks the same way.
/// `in_memory`: the scope's profile, not written (--heapgate_internal_call_sites):
/// only the call sites are kept.
void collect_stacks(TestRecord& record, PluginRun& run, const Profile* in_memory = nullptr);

}  // namespace heapgate::harness
