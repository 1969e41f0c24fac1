#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# heapgate's performance suite: builds bench/ into build/, runs each benchmark
# (their own tables), then prints the ratios recorded in docs/performance.md.
# Takes a few minutes, most of it jeprof, plus ~10 minutes of anchors (exact
# mode, memcheck and jemalloc profiling every allocation on 1M allocations).
#   scripts/bench.sh ["STACKS ..."]   (default "10000 50000" distinct stacks per profile)
#   scripts/bench.sh --anchors         only the anchors: scripts/bench_anchors.sh (the same
#                                      workload under glibc, jemalloc, the sanitizers,
#                                      heaptrack, Valgrind and heapgate's modes), which the
#                                      full run also ends with
#   scripts/bench.sh --paired [ARGS]   only the paired rounds: scripts/bench_paired.sh (off,
#                                      counters and exact on both counting paths, and the
#                                      anchors jemalloc, LSan, heaptrack and massif, in
#                                      rounds, on 1M, 3M and mixed-size workloads, 8 threads
#                                      and outside any window; ratios to off with off's time
#                                      beside them, none when off is >20% above this
#                                      machine's quiet minimum). ARGS go to that script
#                                      (--rounds N, --no-anchors, --only LIST, --check);
#                                      not part of the full run (~20 minutes on its own)
# HEAPGATE_BUILD_DIR picks the build directory, HEAPGATE_BUILD_JOBS the
# compile jobs (default: one per core).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
if [[ "${1:-}" == "--anchors" ]]; then exec "$here/scripts/bench_anchors.sh"; fi
if [[ "${1:-}" == "--paired" ]]; then shift; exec "$here/scripts/bench_paired.sh" "$@"; fi
build="${HEAPGATE_BUILD_DIR:-$here/build}"
stacks="${1:-10000 50000}"
jobs="${HEAPGATE_BUILD_JOBS:-$(nproc)}"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEAPGATE_BUILD_BENCHMARK=ON >/dev/null
targets=(bench_scope bench_scope_noprof profile_gen bench_diff bench_listener bench_summary heapgate_cli)
if grep -q '^HEAPGATE_BUILD_HTTP:BOOL=ON' "$build/CMakeCache.txt"; then targets+=(bench_http); fi
cmake --build "$build" -j "$jobs" --target "${targets[@]}"

work=$(mktemp -d "${TMPDIR:-/tmp}/heapgate-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r), $(date -u +%Y-%m-%d)"
echo "== ProfileScope cost and per-allocation overhead (jemalloc defaults, then ready for exact mode)"
"$build/bench/bench_scope_noprof" --benchmark_filter='Plain|counters' --benchmark_out="$work/scope_noprof.json"
"$build/bench/bench_scope" --benchmark_out="$work/scope.json"

diff_outputs=()
for n in $stacks; do
  echo "== heapgate diff of two $n-stack profiles from two processes vs jeprof --text --base"
  "$build/bench/profile_gen" --dump "$work/base.heap" --stacks "$n"
  "$build/bench/profile_gen" --dump "$work/current.heap" --stacks "$n" --extra 100
  "$build/bench/bench_diff" "$build/runner/heapgate" "$build/bench/profile_gen" "$work/base.heap" \
    "$work/current.heap" --benchmark_out="$work/diff_$n.json"
  diff_outputs+=("diff_$n=$work/diff_$n.json")
done

echo "== the GoogleTest listener per mode (1,000 trivial tests; one heavy test)"
"$build/bench/bench_listener" --benchmark_out="$work/listener.json"

if [[ -x "$build/bench/bench_http" ]]; then
  echo "== GET /memory-profiler/state (heapgate::http)"
  "$build/bench/bench_http" --benchmark_out="$work/http.json"
fi

echo "== ratios"
"$build/bench/bench_summary" scope="$work/scope.json" scope_noprof="$work/scope_noprof.json" \
  "${diff_outputs[@]}" listener="$work/listener.json" http="$work/http.json"

echo "== the anchors: one workload under other allocators and tools, and under heapgate"
"$here/scripts/bench_anchors.sh"
