// SPDX-License-Identifier: MIT
// The doctest face: doctest 2.4 suites gated as GoogleTest suites are. Link
// heapgate::doctest_main for a drop-in main(); a suite with its own main()
// defines DOCTEST_CONFIG_IMPLEMENT and returns heapgate::run_doctest()
// from it.
#pragma once

// The refusals come before any include: a build that trips one stops here,
// with nothing else in the way.
#if defined(DOCTEST_VERSION_MAJOR) && (DOCTEST_VERSION_MAJOR != 2 || DOCTEST_VERSION_MINOR < 4)
#error "heapgate::doctest needs doctest 2.4 or a later 2.x (listeners and test_case_end's stats); fix: update doctest"
#endif
#if defined(DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN)
#error \
    "heapgate/doctest.h: DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN gives doctest's own main(), which runs every test unmeasured; fix: link heapgate::doctest_main and drop it, or define DOCTEST_CONFIG_IMPLEMENT and return heapgate::run_doctest(argc, argv) from your main()"
#endif

#include "heapgate/harness.h"

// Not in a namespace heapgate::doctest: doctest's macros name `doctest::`
// unqualified, which inside namespace heapgate (or after `using namespace
// heapgate`) would find that one instead of doctest's.
namespace heapgate {

/// Runs the doctest suite with heapgate gating every test case: what
/// `doctest::Context(argc, argv).run()` does in an own main(), plus the
/// `--heapgate_*` flags (heapgate/harness.h), which it removes from argv
/// before doctest reads it. One measurement window per TEST_CASE, its
/// subcases included (a child process can select a test case, not a
/// subcase). Returns the exit status: doctest's, or 1 when only heapgate
/// failed a test. Call it once, from main, before any thread starts.
int run_doctest(int argc, char** argv);

}  // namespace heapgate
