// SPDX-License-Identifier: MIT
// heapgate::doctest_main: doctest's implementation and a main() that runs
// the suite gated. main() lives in this translation unit on purpose: a
// static library's object that nothing references is dropped by the linker
// (docs/platform-facts.md §2).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "heapgate/doctest.h"

int main(int argc, char** argv) { return heapgate::run_doctest(argc, argv); }
