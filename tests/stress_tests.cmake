# SPDX-License-Identifier: MIT
# Never crash or hang the suite heapgate measures (docs/design.md §3): counting
# windows under thread churn, through heapgate's own API. Label `stress`;
# scripts/stress.sh runs the same binaries for longer.
heapgate_add_test(thread_churn_test JEMALLOC
  SOURCES stress/thread_churn_test.cpp
  ENVIRONMENT HEAPGATE_STRESS_ROUNDS=100000
  LABELS stress)
heapgate_add_test(thread_churn_exact_test JEMALLOC
  SOURCES stress/thread_churn_test.cpp
  ENVIRONMENT HEAPGATE_STRESS_ROUNDS=4000 HEAPGATE_STRESS_MODE=exact
  LABELS stress)
