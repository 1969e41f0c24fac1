#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's test command: builds what scripts/setup.sh left unbuilt (the
# heapgate command line, the tests; nothing when it is built) and runs every
# test. Arguments go to ctest, e.g. `scripts/test.sh -L unit`.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build="${HEAPGATE_BUILD_DIR:-$here/build}"
if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "scripts/test.sh: $build is not configured; run scripts/setup.sh first" >&2
  exit 2
fi
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure -j2 "$@"
