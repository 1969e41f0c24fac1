# SPDX-License-Identifier: MIT
# ProfileScope's attribution of allocations to the thread that started a scope
# and to other threads (ScopeResult::other_thread_*), on real jemalloc hooks.
heapgate_add_test(scope_threads_test JEMALLOC
  SOURCES integration/scope_threads_test.cpp
  LABELS scope)
# The fork test holds the hooks' locks through their internal header.
target_include_directories(scope_threads_test PRIVATE ${PROJECT_SOURCE_DIR}/lib/measure/src)
