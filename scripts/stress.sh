#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The longer run of heapgate's stress tests (ctest's `stress` label runs them
# short): counting windows opened and closed while threads start, allocate
# and exit, for a million rounds in `counters` and 100,000 in `exact`; then
# the 500-test echo suite (a server thread pool and a client thread per test,
# half of them detached) under the gate 20 times, and once more in `exact`:
# no hang, no crash, the same counts every run.
#   scripts/stress.sh                 build (build/), then run everything
#   HEAPGATE_STRESS_ROUNDS=N          rounds of the churn test (default 1000000)
#   HEAPGATE_STRESS_RUNS=N            gated runs of the echo suite (default 20)
# Exit 0 when every part passed. Takes a few minutes on 2 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build="${HEAPGATE_BUILD_DIR:-$here/build}"
rounds="${HEAPGATE_STRESS_ROUNDS:-1000000}"
runs="${HEAPGATE_STRESS_RUNS:-20}"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target thread_churn_test thread_churn_exact_test echo_suite echo_gate_test

step() {
  echo "+ $*"
  local start=$SECONDS
  "$@"
  echo "  passed in $((SECONDS - start)) s"
}
step env HEAPGATE_STRESS_ROUNDS="$rounds" "$build/tests/thread_churn_test"
step env HEAPGATE_STRESS_ROUNDS=$((rounds / 10)) HEAPGATE_STRESS_MODE=exact "$build/tests/thread_churn_exact_test"
step env HEAPGATE_STRESS_RUNS="$runs" "$build/tests/echo_gate_test"
echo "stress: all passed"
