#!/bin/sh
# SPDX-License-Identifier: MIT
# heapgate's CI gate: one step that gates GoogleTest binaries linked with
# heapgate::gtest_main and leaves everything CI publishes in one directory.
#
#   ci/gate.sh [-b BASELINES] [-r REPORT] [-m MODE] [-j JOBS] [-H HEAPGATE] -- TEST_BINARY [gtest args...]
#   ci/gate.sh [options] -C BUILD_DIR        # every heapgate binary of a ctest build directory
#
# Runs `heapgate run` (sharded over JOBS processes, jemalloc preloaded when a
# binary lacks it), then writes into REPORT (default heapgate-report):
#   <binary>.json         heapgate.report/1, the input of `heapgate accept`
#   <binary>.junit.xml    publish with your CI's JUnit step
#   <binary>.md           appended to $GITHUB_STEP_SUMMARY on GitHub Actions
#   <binary>.html         one self-contained page with flame graphs of the differences
#   profiles/, shards/    raw heap profiles of failing tests, and the test logs
# Exits with the gate's code: 0 pass, 1 regression, leak, budget or failed
# test, 2 bad usage, bad input or a crash, 3 nothing measured (unless -U,
# which lets a run without jemalloc or profiling pass).
set -eu

usage="usage: ci/gate.sh [-b DIR] [-r DIR] [-m MODE] [-j JOBS] [-H HEAPGATE] [-U] (-C BUILD_DIR | -- TEST_BINARY [args])"
baselines=baselines
report=heapgate-report
mode=counters
jobs=${HEAPGATE_JOBS:-2}
heapgate=${HEAPGATE:-}
ctest_dir=
allow=
while [ $# -gt 0 ]; do
  case "$1" in
    -b) baselines=$2; shift 2 ;;
    -r) report=$2; shift 2 ;;
    -m) mode=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    -H) heapgate=$2; shift 2 ;;
    -C) ctest_dir=$2; shift 2 ;;
    -U) allow=--allow-unmeasured; shift ;;
    --) shift; break ;;
    *) echo "ci/gate.sh: unknown option $1; $usage" >&2; exit 2 ;;
  esac
done
if [ -z "$ctest_dir" ] && [ $# -eq 0 ]; then
  echo "ci/gate.sh: no test binary; $usage" >&2
  exit 2
fi
if [ -z "$heapgate" ]; then
  heapgate=$(command -v heapgate || true)
fi
if [ -z "$heapgate" ] || [ ! -x "$heapgate" ]; then
  echo "ci/gate.sh: the heapgate command line was not found; install heapgate, or pass -H path/to/heapgate (or set HEAPGATE)" >&2
  exit 2
fi

status=0
if [ -n "$ctest_dir" ]; then
  "$heapgate" run $allow --mode "$mode" --jobs "$jobs" --baselines "$baselines" --report "$report" --ctest-dir "$ctest_dir" || status=$?
else
  "$heapgate" run $allow --mode "$mode" --jobs "$jobs" --baselines "$baselines" --report "$report" -- "$@" || status=$?
fi

# The HTML pages and the step summary, for whatever reports the run wrote.
for json in "$report"/*.json; do
  [ -f "$json" ] || continue
  stem=${json%.json}
  "$heapgate" report html "$json" -o "$stem.html" ||
    echo "ci/gate.sh: could not render $stem.html; the JSON, JUnit and Markdown reports are there" >&2
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$stem.md" ]; then
    cat "$stem.md" >> "$GITHUB_STEP_SUMMARY"
  fi
done
echo "ci/gate.sh: heapgate run exited $status; reports in $report/"
exit "$status"
