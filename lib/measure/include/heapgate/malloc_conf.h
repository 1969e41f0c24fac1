// SPDX-License-Identifier: MIT
// HEAPGATE_DEFINE_MALLOC_CONF(): jemalloc's start-up options set from the program's
// own code. Header-only.
#pragma once

#include "heapgate/allocator.h"

/// Defines jemalloc's `malloc_conf` symbol in the program so that jemalloc
/// starts with `conf` (e.g. heapgate::kExactMallocConf), without anyone typing
/// MALLOC_CONF. jemalloc reads the symbol once, at its first allocation; the
/// MALLOC_CONF environment variable, read later, still overrides it.
///
/// Use it once, at namespace scope, in the executable's own sources (a static
/// library's object that nothing else references is dropped by the linker).
/// When jemalloc arrives only through LD_PRELOAD, it sees the symbol only if
/// the executable exports it: link with `-Wl,--export-dynamic-symbol=malloc_conf`.
#define HEAPGATE_DEFINE_MALLOC_CONF(conf)                                        \
  extern "C" {                                                                   \
  __attribute__((used, visibility("default"))) const char* malloc_conf = (conf); \
  }                                                                              \
  static_assert(true, "require a semicolon")

/// Starts the program ready for `exact` and `sampled` scopes (profiling
/// compiled in, inactive until a scope starts it, every allocation sampled).
/// While no profiling scope is active, jemalloc only checks a flag per sampling event.
#define HEAPGATE_ENABLE_EXACT_MODE() HEAPGATE_DEFINE_MALLOC_CONF(::heapgate::kExactMallocConf)
