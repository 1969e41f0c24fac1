#!/bin/sh
# SPDX-License-Identifier: MIT
# heapgate's CI gate for one GoogleTest binary linked with heapgate::gtest_main.
#
#   ci/gate.sh [-b BASELINES_DIR] [-r REPORT_DIR] [-m MODE] -- TEST_BINARY [gtest args...]
#
# Runs the binary under the gate (counters mode by default), writes the JSON,
# JUnit and Markdown reports into REPORT_DIR (default heapgate-report), appends
# the Markdown summary to $GITHUB_STEP_SUMMARY when GitHub Actions provides
# one, and exits with the test binary's code: 0 pass, 1 a test failed (leak,
# budget, regression or its own assertions), 2 bad flags.
set -eu

baselines=baselines
report=heapgate-report
mode=counters
while [ $# -gt 0 ]; do
  case "$1" in
    -b) baselines=$2; shift 2 ;;
    -r) report=$2; shift 2 ;;
    -m) mode=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "ci/gate.sh: unknown option $1; usage: ci/gate.sh [-b DIR] [-r DIR] [-m MODE] -- TEST_BINARY [args]" >&2; exit 2 ;;
  esac
done
if [ $# -eq 0 ]; then
  echo "ci/gate.sh: no test binary; usage: ci/gate.sh [-b DIR] [-r DIR] [-m MODE] -- TEST_BINARY [args]" >&2
  exit 2
fi
binary=$1
shift
if [ ! -x "$binary" ]; then
  echo "ci/gate.sh: $binary is not an executable; build the tests first" >&2
  exit 2
fi

mkdir -p "$baselines" "$report"
set -x
status=0
"$binary" --heapgate_mode="$mode" --heapgate_baselines="$baselines" --heapgate_report="$report" "$@" || status=$?
set +x

summary="$report/$(basename "$binary").md"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$summary" ]; then
  cat "$summary" >> "$GITHUB_STEP_SUMMARY"
fi
echo "ci/gate.sh: $(basename "$binary") exited $status; reports in $report/"
exit "$status"
