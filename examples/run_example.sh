#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the examples built in BUILD_DIR and checks that heapgate caught what
# they do wrong on purpose: a leak in a plain program (request_leak), and a
# GoogleTest suite (example_cache_test) with a leak, a test over its budget and
# a regression against its committed baseline.
set -uo pipefail
build="${1:?usage: examples/run_example.sh BUILD_DIR}"
here=$(cd "$(dirname "$0")" && pwd)
failed=0

expect() {  # expect NAME STATUS WANTED
  if [ "$2" -eq "$3" ]; then
    echo "== $1: exit code $2, as intended"
  else
    echo "run_example.sh: $1 exited $2, expected $3" >&2
    failed=1
  fi
}

program="$build/examples/request_leak"
if [ ! -x "$program" ]; then
  echo "run_example.sh: $program is missing; build with HEAPGATE_BUILD_EXAMPLES=ON" >&2
  exit 2
fi
echo "+ $program"
"$program"
expect "request_leak caught the leak" $? 1

suite="$build/examples/example_cache_test"
if [ -x "$suite" ]; then
  report="$build/examples/report"
  rm -rf "$report"
  echo "+ $suite --heapgate_baselines=$here/gtest/baselines --heapgate_report=$report"
  "$suite" --heapgate_baselines="$here/gtest/baselines" --heapgate_report="$report"
  expect "example_cache_test failed its gate" $? 1
  for verdict in leaked over_budget regressed; do
    if ! grep -q "\"verdict\": \"$verdict\"" "$report/example_cache_test.json"; then
      echo "run_example.sh: no test was $verdict in $report/example_cache_test.json" >&2
      failed=1
    fi
  done
  echo "== CI summary ($report/example_cache_test.md):"
  cat "$report/example_cache_test.md"
fi
exit $failed
