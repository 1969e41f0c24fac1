#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# GET /memory-profiler/state at 200 and 1,000 req/s, idle and profiling, and
# 1,000 idle kept-alive clients (bench/http_load.cpp), for this tree and for
# an older commit, in alternating rounds so that both see the same machine.
# The older commit is exported with `git archive` into a scratch directory
# (no worktree is touched), given this tree's bench/http_load.cpp, and only
# bench_http_load is built there.
#
#   scripts/bench_http.sh BASE_COMMIT [ROUNDS] [SECONDS]
#
# Needs this tree built in build/ (bench_http_load). Prints each round's
# tables, labelled; docs/performance.md takes the medians. The server's CPU
# time per request is the column that other load on the machine disturbs
# least; latency percentiles on a shared machine need several rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?"usage: scripts/bench_http.sh BASE_COMMIT [ROUNDS] [SECONDS]"}
rounds=${2:-3}
seconds=${3:-10}
after=build/bench/bench_http_load
if [ ! -x "$after" ]; then
  echo "scripts/bench_http.sh: $after is missing; fix: cmake --build build --target bench_http_load" >&2
  exit 2
fi
scratch=${HEAPGATE_BENCH_HTTP_DIR:-${TMPDIR:-/tmp}/heapgate-bench-http-$(git rev-parse --short "$base")}
if [ ! -f "$scratch/build/CMakeCache.txt" ]; then
  rm -rf "$scratch" && mkdir -p "$scratch"
  git archive "$base" | tar -x -C "$scratch"
  cp bench/http_load.cpp bench/CMakeLists.txt "$scratch/bench/"
  cmake -S "$scratch" -B "$scratch/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEAPGATE_BUILD_TESTS=OFF \
    -DHEAPGATE_BUILD_RUNNER=OFF -DHEAPGATE_BUILD_EXAMPLES=OFF -DHEAPGATE_BUILD_GTEST=OFF \
    -DHEAPGATE_INSTALL=OFF >/dev/null
fi
# Both sides measure with this tree's http_load.cpp.
cmp -s bench/http_load.cpp "$scratch/bench/http_load.cpp" || cp bench/http_load.cpp "$scratch/bench/"
nice -n 10 cmake --build "$scratch/build" -j"${HEAPGATE_BUILD_JOBS:-2}" --target bench_http_load >/dev/null
before=$scratch/build/bench/bench_http_load
for round in $(seq 1 "$rounds"); do
  for side in before after; do
    binary=$before
    [ "$side" = after ] && binary=$after
    echo "== round $round, $side ($(uptime | sed 's/.*load average: /load /'))"
    "$binary" --seconds "$seconds"
  done
done
