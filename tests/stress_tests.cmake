# SPDX-License-Identifier: MIT
# Never crash or hang the suite heapgate measures (docs/design.md §3): counting
# windows under thread churn, through heapgate's own API. Label `stress`; the
# churn tests, minutes of one core, also `long`; scripts/stress.sh runs the
# same binaries for longer.
heapgate_add_test(thread_churn_test JEMALLOC
  SOURCES stress/thread_churn_test.cpp
  ENVIRONMENT HEAPGATE_STRESS_ROUNDS=100000
  LABELS stress long)
heapgate_add_test(thread_churn_exact_test JEMALLOC
  SOURCES stress/thread_churn_test.cpp
  ENVIRONMENT HEAPGATE_STRESS_ROUNDS=4000 HEAPGATE_STRESS_MODE=exact
  LABELS stress long)
# A threaded GoogleTest suite (500 tests, a server thread pool and a client
# thread each) run under the gate several times: no hang, no crash, the same
# counts every run (stress/echo_gate_test.cpp).
add_executable(echo_suite stress/echo_suite.cpp)
target_link_libraries(echo_suite PRIVATE heapgate::gtest_main heapgate_warnings)
heapgate_add_test(echo_gate_test JEMALLOC
  SOURCES stress/echo_gate_test.cpp
  LABELS stress)
add_dependencies(echo_gate_test echo_suite)
