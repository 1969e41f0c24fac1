#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The zoo: builds open-source GoogleTest suites with heapgate on its documented
# path (heapgate::gtest_main, or heapgate::gtest::init/install_listener in a
# suite's own main), then runs each test binary as a user would:
#   off      --heapgate_mode=off
#   run 1    --heapgate_baselines=B --heapgate_report=R1   (records the baselines)
#   run 2..  the same baselines, reports R2.. (gated: every failing verdict is false)
#   planted  the same baselines with HEAPGATE_PLANT=1 (one more allocation in one test)
# and prints one table. Recipes: bench/real_suites/zoo/<suite>/ (README.md there).
#
# usage: zoo.sh [--only NAME,...] [--runs N] [--src DIR] [--out DIR]
#               [--heapgate DIR] [--build-only] [--no-build] [--report-only] [--list]
#   --runs N      gated runs after the recording run (default 3)
#   --src DIR     the suites' source trees, DIR/<suite> (default $ZOO_SRC or /work/zoo-src)
#   --out DIR     builds, baselines, reports, logs (default $ZOO_OUT or /tmp/heapgate-zoo)
#   --heapgate DIR heapgate's sources the suites build (default $HEAPGATE_SOURCE_DIR or this checkout)
#   --build-only  configure and build, do not run; --no-build: run what is built
#   --report-only summarise the last runs' reports again (nothing built or run)
#   --runner BIN  run each binary through `BIN run -j J` (the CI templates' path:
#                 sharded, reports merged) instead of running it directly; J is
#                 --shards (default 2); off is `BIN run --mode off` with the same shards
#   --no-plant    skip the planted run (to repeat gated runs only)
#   --busy N      N busy loops (one per core) run beside every run: a loaded machine
# Builds run under `nice -n 10` with -j2 (ZOO_JOBS); runs are not niced.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
zoo=$here/zoo
heapgate_src=${HEAPGATE_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
src_root=${ZOO_SRC:-/work/zoo-src}
out_root=${ZOO_OUT:-/tmp/heapgate-zoo}
runs=3
only=""
do_build=1
do_run=1
do_exec=1
jobs=${ZOO_JOBS:-2}
runner=""
shards=2
plant=1
busy=0
all_suites=(c-ares uriparser zlib-ng SQLiteCpp fmt dispenso crc32c snappy yaml-cpp marl leveldb cpp-httplib)

while [ $# -gt 0 ]; do
  case "$1" in
    --only) only=$2; shift 2 ;;
    --only=*) only=${1#--only=}; shift ;;
    --runs) runs=$2; shift 2 ;;
    --runs=*) runs=${1#--runs=}; shift ;;
    --src) src_root=$2; shift 2 ;;
    --out) out_root=$2; shift 2 ;;
    --heapgate) heapgate_src=$2; shift 2 ;;
    --build-only) do_run=0; shift ;;
    --no-build) do_build=0; shift ;;
    --report-only) do_build=0; do_exec=0; shift ;;
    --runner) runner=$2; shift 2 ;;
    --shards) shards=$2; shift 2 ;;
    --no-plant) plant=0; shift ;;
    --busy) busy=$2; shift 2 ;;
    --list) printf '%s\n' "${all_suites[@]}"; exit 0 ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "zoo.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

suites=("${all_suites[@]}")
if [ -n "$only" ]; then IFS=, read -r -a suites <<< "$only"; fi
mkdir -p "$out_root"

now() { date +%s.%N; }
log() { echo "[zoo $(date +%H:%M:%S)] $*" >&2; }

# Applies a patch to the source tree unless it is already applied.
apply_patch() {  # apply_patch SRC PATCHFILE [git apply args...]
  local src=$1 patch=$2; shift 2
  if git -C "$src" apply "$@" --reverse --check "$patch" 2>/dev/null; then return 0; fi
  if git -C "$src" apply "$@" --check "$patch" 2>/dev/null; then git -C "$src" apply "$@" "$patch" && return 0; fi
  echo "patch $patch does not apply to $src (is it at the recipe's commit?)" >&2
  return 1
}

# The planted site (file:line) from the HEAPGATE_PLANT_SITE marker a plant patch puts on its line.
plant_site() {  # plant_site SRC FILE-IN-SRC
  local n; n=$(grep -n 'HEAPGATE_PLANT_SITE' "$1/$2" | head -1 | cut -d: -f1)
  [ -n "$n" ] && echo "$(basename "$2"):$n"
}

run_suite() {
  local suite=$1 rdir=$zoo/$1
  local ZOO_REPO="" ZOO_COMMIT="" ZOO_KIND="" ZOO_CMAKE_SOURCE=wrapper ZOO_RUN_DIR=scratch
  local ZOO_PLANT_TEST="" ZOO_PLANT_FILE="" ZOO_PLANT_SITE="" ZOO_NEW=1
  local -a ZOO_PATCHES=() ZOO_CMAKE_ARGS=() ZOO_TARGETS=() ZOO_BINARIES=() ZOO_ARGS=()
  if [ ! -f "$rdir/recipe.sh" ]; then echo "zoo.sh: no recipe $rdir/recipe.sh" >&2; return 1; fi
  # shellcheck source=/dev/null
  . "$rdir/recipe.sh"
  local src=$src_root/$suite out=$out_root/$suite
  mkdir -p "$out"
  # this suite's table row and notes (the table gathers the suites of this invocation)
  local rows=$out/row.jsonl notes=$out/notes.txt
  : > "$rows"; : > "$notes"
  if [ ! -d "$src/.git" ] && [ ! -f "$src/.git" ]; then
    echo "skip $suite: no source at $src; get the public repository $ZOO_REPO at commit $ZOO_COMMIT into it (zoo/README.md, \"Getting the sources\")"
    printf '{"suite":"%s","skipped":"no source at %s"}\n' "$suite" "$src" >> "$rows"
    return 0
  fi
  local head; head=$(git -C "$src" rev-parse HEAD 2>/dev/null)
  [ "$head" = "$ZOO_COMMIT" ] || log "$suite: source is at $head, the recipe was made at $ZOO_COMMIT"
  local p
  for p in "${ZOO_PATCHES[@]}"; do
    local file=${p%%:*} args=""
    [ "$file" != "$p" ] && args=${p#*:}
    # shellcheck disable=SC2086
    if ! apply_patch "$src" "$rdir/$file" $args; then
      printf '{"suite":"%s","skipped":"patch %s does not apply"}\n' "$suite" "$file" >> "$rows"; return 0
    fi
  done
  [ -z "$ZOO_PLANT_SITE" ] && [ -n "$ZOO_PLANT_FILE" ] && ZOO_PLANT_SITE=$(plant_site "$src" "$ZOO_PLANT_FILE")

  local build=$out/build
  if [ "$do_build" = 1 ]; then
    local cmake_src=$src
    [ "$ZOO_CMAKE_SOURCE" = wrapper ] && cmake_src=$rdir
    log "$suite: configure and build (${ZOO_TARGETS[*]})"
    local t0; t0=$(now)
    local -a launcher=()
    # ccache (if installed) shares heapgate's objects between the suites' builds.
    if command -v ccache > /dev/null; then
      launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
      export CCACHE_DIR=${CCACHE_DIR:-$out_root/.ccache} CCACHE_BASEDIR=$out_root CCACHE_NOHASHDIR=1
    fi
    if ! nice -n 10 cmake -S "$cmake_src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DSUITE_SOURCE_DIR="$src" -DHEAPGATE_SOURCE_DIR="$heapgate_src" "${launcher[@]}" "${ZOO_CMAKE_ARGS[@]}" \
        > "$out/configure.log" 2>&1; then
      log "$suite: configure failed, see $out/configure.log"
      printf '{"suite":"%s","skipped":"configure failed (%s)"}\n' "$suite" "$out/configure.log" >> "$rows"; return 0
    fi
    if ! nice -n 10 cmake --build "$build" -j "$jobs" --target "${ZOO_TARGETS[@]}" > "$out/build.log" 2>&1; then
      log "$suite: build failed, see $out/build.log"
      printf '{"suite":"%s","skipped":"build failed (%s)"}\n' "$suite" "$out/build.log" >> "$rows"; return 0
    fi
    log "$suite: built in $(awk -v a="$(now)" -v b="$t0" 'BEGIN{printf "%.1f", a-b}') s"
  fi
  [ "$do_run" = 1 ] || return 0

  [ "$do_exec" = 1 ] && run_binaries
  [ -f "$out/times.tsv" ] || return 0
  python3 "$zoo/zoo_report.py" --suite "$suite" --out "$out" --runs "$runs" --kind "$ZOO_KIND" \
    --commit "$ZOO_COMMIT" --new "$ZOO_NEW" --plant-test "$ZOO_PLANT_TEST" --plant-site "$ZOO_PLANT_SITE" \
    --rows "$rows" --notes "$notes"
}

# run_suite's runs of each binary (uses its locals: out, build, src, ZOO_*).
run_binaries() {
  local b
  for b in "${ZOO_BINARIES[@]}"; do
    if [ ! -x "$build/$b" ]; then
      printf '{"suite":"%s","skipped":"%s not built"}\n' "$suite" "$b" >> "$rows"; rm -f "$out/times.tsv"; return 0
    fi
  done
  rm -rf "$out/baselines" "$out/reports" "$out/logs" "$out/work"
  mkdir -p "$out/baselines" "$out/reports" "$out/logs" "$out/work"
  local times=$out/times.tsv
  : > "$times"
  local -a run_names=(off r1)
  local k
  for ((k = 2; k <= runs + 1; k++)); do run_names+=("r$k"); done
  [ "$plant" = 1 ] && run_names+=(plant)
  local -a busy_pids=()
  local i
  for ((i = 0; i < busy; i++)); do
    (while :; do :; done) &
    busy_pids+=($!)
  done
  for b in "${ZOO_BINARIES[@]}"; do
    local bin=$build/$b name; name=$(basename "$b")
    local r
    for r in "${run_names[@]}"; do
      local -a extra=() envs=()
      case "$r" in
        off) extra=(--heapgate_mode=off) ;;
        plant) extra=(--heapgate_baselines="$out/baselines" --heapgate_report="$out/reports/$r"); envs=(HEAPGATE_PLANT=1) ;;
        *) extra=(--heapgate_baselines="$out/baselines" --heapgate_report="$out/reports/$r") ;;
      esac
      if [ -n "$runner" ]; then
        # The same runs through `heapgate run`: baselines and reports as its flags.
        case "$r" in
          off) extra=(--mode off --allow-unmeasured --baselines "$out/work/off-baselines" --report "$out/reports/off") ;;
          *) extra=(--baselines "$out/baselines" --report "$out/reports/$r") ;;
        esac
        extra=("$runner" run -j "$shards" --progress none "${extra[@]}" --)
      fi
      local cwd=$out/work/$r
      [ "$ZOO_RUN_DIR" = source ] && cwd=$src
      mkdir -p "$cwd"
      log "$suite: $name $r"
      local t0 t1 rc
      t0=$(now)
      if [ -n "$runner" ]; then
        (cd "$cwd" && env "${envs[@]}" "${extra[@]}" "$bin" "${ZOO_ARGS[@]}") > "$out/logs/$name.$r.log" 2>&1
      else
        (cd "$cwd" && env "${envs[@]}" "$bin" "${ZOO_ARGS[@]}" "${extra[@]}") > "$out/logs/$name.$r.log" 2>&1
      fi
      rc=$?
      t1=$(now)
      printf '%s\t%s\t%s\t%s\n' "$name" "$r" "$(awk -v a="$t1" -v b="$t0" 'BEGIN{printf "%.2f", a-b}')" "$rc" >> "$times"
    done
  done
  [ ${#busy_pids[@]} -gt 0 ] && kill "${busy_pids[@]}" 2> /dev/null
  return 0
}

for s in "${suites[@]}"; do
  run_suite "$s"
done
if [ "$do_run" = 1 ]; then
  rows=$out_root/rows.jsonl notes=$out_root/notes.txt
  : > "$rows"; : > "$notes"
  for s in "${suites[@]}"; do
    [ -f "$out_root/$s/row.jsonl" ] && cat "$out_root/$s/row.jsonl" >> "$rows"
    [ -f "$out_root/$s/notes.txt" ] && cat "$out_root/$s/notes.txt" >> "$notes"
  done
  python3 "$zoo/zoo_report.py" --table "$rows" --runs "$runs"
  echo
  cat "$notes"
fi
exit 0
