# SPDX-License-Identifier: MIT
# ProfileScope's attribution of allocations to the thread that started a scope
# and to other threads (ScopeResult::other_thread_*), on real jemalloc hooks.
heapgate_add_test(scope_threads_test JEMALLOC
  SOURCES integration/scope_threads_test.cpp
  LABELS scope)
