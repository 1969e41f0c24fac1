#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds heapgate's libFuzzer targets with clang (ASan + UBSan) and runs each
# for SECONDS (default 60) over its seeds (docs/fuzzing.md):
#   scripts/fuzz.sh [SECONDS] [TARGET...]    all targets when none is named
#   scripts/fuzz.sh --build                  build only
#   scripts/fuzz.sh --list                   the target names
# New inputs libFuzzer finds go to $HEAPGATE_FUZZ_CORPUS/<target>/ (default
# <build>/corpus), never into the checked-in seeds; a crash is saved there as
# crash-<sha1>, to reproduce with <build>/<target>_fuzz <file>.
# Environment: HEAPGATE_FUZZ_BUILD_DIR (default build/fuzz),
# HEAPGATE_FUZZ_CORPUS, HEAPGATE_FUZZ_NO_BUILD=1 (run what is built),
# HEAPGATE_FUZZ_FRESH=1 (empty the scratch corpus first: start from the seeds),
# HEAPGATE_FUZZ_CMAKE_ARGS (extra configure arguments), HEAPGATE_BUILD_JOBS,
# CC/CXX (default clang/clang++).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build="${HEAPGATE_FUZZ_BUILD_DIR:-$here/build/fuzz}"
corpus="${HEAPGATE_FUZZ_CORPUS:-$build/corpus}"
jobs="${HEAPGATE_BUILD_JOBS:-$(nproc)}"

usage() {
  echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...] | --build | --list" >&2
  exit 2
}

# The names and extra seed directories, from the list CMake uses too.
targets_file="$here/tests/fuzz/targets.cmake"
all_targets=$(sed -n '/^set(HEAPGATE_FUZZ_TARGETS/,/^)/p' "$targets_file" | sed '1d;$d' | awk '{print $1}')
extra_seeds() {
  sed -n "s/^set(HEAPGATE_FUZZ_SEEDS_$1 \(.*\))\$/\1/p" "$targets_file"
}

build_only=0
case "${1:-}" in
  --list) echo "$all_targets"; exit 0 ;;
  --build) build_only=1; shift ;;
  -*) usage ;;
esac
seconds=60
if [ $build_only -eq 0 ] && [ $# -gt 0 ]; then
  case "$1" in
    ''|*[!0-9]*) ;;
    *) seconds=$1; shift ;;
  esac
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || read -r -d '' -a targets <<<"$all_targets" || true
for t in "${targets[@]}"; do
  if ! grep -qx "$t" <<<"$all_targets"; then
    echo "heapgate: scripts/fuzz.sh: unknown target '$t'; fix: use one of $(echo $all_targets)" >&2
    exit 2
  fi
done

if [ "${HEAPGATE_FUZZ_NO_BUILD:-0}" != 1 ]; then
  launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  # A build directory configured with another compiler cannot switch: CMake
  # keeps the first one. Configure it afresh then.
  cmake -S "$here/tests/fuzz" -B "$build" -DCMAKE_C_COMPILER="${CC:-clang}" -DCMAKE_CXX_COMPILER="${CXX:-clang++}" \
    "${launcher[@]}" ${HEAPGATE_FUZZ_CMAKE_ARGS:-} >/dev/null
  if ! grep -q '^HEAPGATE_FUZZ:BOOL=ON' "$build/CMakeCache.txt"; then
    echo "heapgate: scripts/fuzz.sh: fuzz targets not built with ${CXX:-clang++}; fix: see the configure" \
         "message above (apt-get install clang libclang-rt-14-dev, or run scripts/setup.sh)" >&2
    exit 2
  fi
  cmake --build "$build" -j "$jobs" --target $(printf '%s_fuzz ' "${targets[@]}")
fi
[ $build_only -eq 0 ] || exit 0

status=0
for t in "${targets[@]}"; do
  scratch="$corpus/$t"
  [ "${HEAPGATE_FUZZ_FRESH:-0}" != 1 ] || rm -rf "$scratch"
  mkdir -p "$scratch"
  seeds=("$here/tests/fuzz/corpus/$t")
  for d in $(extra_seeds "$t"); do seeds+=("$here/$d"); done
  echo "== $t: ${seconds}s over ${seeds[*]#$here/}"
  # The scratch directory comes first: libFuzzer writes new inputs into the
  # first directory only. -timeout: one input running 10 s is a hang.
  if ! "$build/${t}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$scratch/" "$scratch" "${seeds[@]}"; then
    echo "heapgate: fuzz target $t failed; reproduce: $build/${t}_fuzz $scratch/crash-<sha1> (see above)" >&2
    status=1
  fi
done
exit $status
