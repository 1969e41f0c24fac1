#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# heapgate's performance suite: builds bench/ into build/ and prints the numbers
# recorded in docs/performance.md. Takes a few minutes (jeprof is slow).
#   scripts/bench.sh [STACKS]   (default 50000 distinct stacks per profile)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build="${HEAPGATE_BUILD_DIR:-$here/build}"
stacks="${1:-50000}"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEAPGATE_BUILD_BENCHMARK=ON >/dev/null
cmake --build "$build" -j "$(nproc)" --target bench_scope bench_scope_noprof profile_gen bench_diff bench_listener

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r)"
echo "== ProfileScope cost and per-allocation overhead (jemalloc defaults, then ready for exact mode)"
"$build/bench/bench_scope_noprof" --benchmark_filter='Plain|counters'
"$build/bench/bench_scope"

work=$(mktemp -d "${TMPDIR:-/tmp}/heapgate-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "== parse+symbolize+diff of two $stacks-stack profiles from two processes vs jeprof --text --base"
"$build/bench/profile_gen" --dump "$work/base.heap" --stacks "$stacks"
"$build/bench/profile_gen" --dump "$work/current.heap" --stacks "$stacks" --extra 100
"$build/bench/bench_diff" "$build/bench/profile_gen" "$work/base.heap" "$work/current.heap"

echo "== the GoogleTest listener per mode (1,000 trivial tests; one heavy test)"
"$build/bench/bench_listener"
