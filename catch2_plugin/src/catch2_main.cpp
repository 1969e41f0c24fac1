// SPDX-License-Identifier: MIT
// heapgate::catch2_main: Catch2's implementation and a main() that runs the
// session gated. main() lives in this translation unit on purpose: a static
// library's object that nothing references is dropped by the linker
// (docs/platform-facts.md §2).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "heapgate/catch2.h"

int main(int argc, char** argv) { return heapgate::catch2::run(argc, argv); }
