#!/bin/sh
# SPDX-License-Identifier: MIT
# heapgate's CI gate: one step that gates GoogleTest binaries linked with
# heapgate::gtest_main and leaves everything CI publishes in one directory.
#
#   ci/gate.sh [-b BASELINES] [-r REPORT] [-m MODE] [-j JOBS] [-H HEAPGATE] [-F CHECK] -- TEST_BINARY [gtest args...]
#   ci/gate.sh [options] -C BUILD_DIR        # every heapgate binary of a ctest build directory
#
# The heapgate command line is -H, else $HEAPGATE, else `heapgate` on PATH,
# else the one the build directory -C built (heapgate embedded through
# FetchContent or add_subdirectory with HEAPGATE_BUILD_RUNNER=ON).
#
# CI must not pass a run that measured nothing, so the gate is strict: a test
# that cannot be measured fails (heapgate run --strict). -U turns that off and
# lets a run without jemalloc or profiling pass. -F is heapgate run
# --fingerprint (warn, strict or ignore): what a baseline recorded in another
# environment (compiler, libstdc++, jemalloc, build type) does to the run.
#
# Runs `heapgate run` (sharded over JOBS processes, jemalloc preloaded when a
# binary lacks it), then writes into REPORT (default heapgate-report):
#   <binary>.json         the merged report (heapgate.report/2), the input of `heapgate accept`
#   <binary>.junit.xml    publish with your CI's JUnit step
#   <binary>.md           appended to $GITHUB_STEP_SUMMARY on GitHub Actions
#   <binary>.html         one self-contained page with flame graphs of the differences
#   profiles/, shards/    raw heap profiles of failing tests, and the test logs
# Exits with the gate's code (heapgate::GateExit, the README's table): 0 pass,
# 1 regression, leak, budget or failed test or a test that could not be
# measured, 2 bad usage or bad input, 3 nothing measured (unless -U),
# 5 a test binary crashed, hung, exited mid-test or was killed.
set -eu

usage="usage: ci/gate.sh [-b DIR] [-r DIR] [-m MODE] [-j JOBS] [-H HEAPGATE] [-F CHECK] [-U] (-C BUILD_DIR | -- TEST_BINARY [args])"
baselines=baselines
report=heapgate-report
mode=counters
jobs=${HEAPGATE_JOBS:-2}
heapgate=${HEAPGATE:-}
ctest_dir=
allow=--strict
fingerprint=warn
while [ $# -gt 0 ]; do
  case "$1" in
    -b) baselines=$2; shift 2 ;;
    -r) report=$2; shift 2 ;;
    -m) mode=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    -H) heapgate=$2; shift 2 ;;
    -C) ctest_dir=$2; shift 2 ;;
    -F) fingerprint=$2; shift 2 ;;
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
# An embedded heapgate's build directory is in the project's CMake cache
# (project() records it), wherever FetchContent or add_subdirectory put it.
if [ -z "$heapgate" ] && [ -n "$ctest_dir" ] && [ -f "$ctest_dir/CMakeCache.txt" ]; then
  embedded=$(sed -n 's/^heapgate_BINARY_DIR:STATIC=//p' "$ctest_dir/CMakeCache.txt")
  if [ -n "$embedded" ] && [ -x "$embedded/runner/heapgate" ]; then
    heapgate=$embedded/runner/heapgate
  fi
fi
if [ -z "$heapgate" ] || [ ! -x "$heapgate" ]; then
  echo "ci/gate.sh: -H: the heapgate command line was not found; fix: configure heapgate with -DHEAPGATE_BUILD_RUNNER=ON and build, install heapgate, or pass -H path/to/heapgate (or set HEAPGATE)" >&2
  exit 2
fi

status=0
run_args="run $allow --fingerprint $fingerprint --mode $mode --jobs $jobs --baselines $baselines --report $report"
if [ -n "$ctest_dir" ]; then
  echo "+ $heapgate $run_args --ctest-dir $ctest_dir"
  "$heapgate" run $allow --fingerprint "$fingerprint" --mode "$mode" --jobs "$jobs" --baselines "$baselines" --report "$report" --ctest-dir "$ctest_dir" || status=$?
else
  echo "+ $heapgate $run_args -- $*"
  "$heapgate" run $allow --fingerprint "$fingerprint" --mode "$mode" --jobs "$jobs" --baselines "$baselines" --report "$report" -- "$@" || status=$?
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
