#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The anchors side by side: one allocation-heavy workload (bench/map_workload.h,
# a std::map<int, std::string> built and destroyed, 2 allocations per entry)
# run under glibc's malloc, jemalloc, LeakSanitizer, AddressSanitizer,
# heaptrack, Valgrind memcheck and massif, jemalloc profiling every
# allocation, and as a GoogleTest test linked with heapgate::gtest_main in
# --heapgate_mode=off, counters and exact. Prints a Markdown table: median wall
# and median CPU (user+system) time of N runs, CPU time relative to glibc (and,
# for heapgate's rows, to heapgate off: the same GoogleTest machinery with
# nothing measured), and the largest peak RSS of the runs. Ratios are computed
# here, from the measurements of bench/anchor_measure (wait4). The rows take
# turns (every row once, then again), so load that comes and goes during the
# run is shared among them.
#
#   scripts/bench_anchors.sh           build bench_anchors, install heaptrack and
#                                      valgrind with apt-get if missing, run, print
#   scripts/bench_anchors.sh --check   tiny workload, one run per row, no install;
#                                      a row whose tool is missing says so, every
#                                      other row must produce numbers, and heapgate's
#                                      counters and exact rows must count exactly the
#                                      workload's allocations (exit 1 otherwise)
#   --bin-dir DIR                      use the anchor binaries in DIR (build/bench)
#                                      instead of configuring and building them
# Also run by scripts/bench.sh (all of it) and scripts/bench.sh --anchors (only this).
# Environment: HEAPGATE_BENCH_REPEAT runs per row (default 3; --check: 1),
# HEAPGATE_ANCHOR_ENTRIES map entries (default 500000 = 1M allocations; --check:
# 2000), HEAPGATE_BUILD_DIR, HEAPGATE_BUILD_JOBS as in scripts/bench.sh.
# heaptrack and valgrind are installed here only, never by scripts/setup.sh:
# only this benchmark needs them.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
check=0
bin=""
while (($#)); do
  case "$1" in
    --check) check=1 ;;
    --bin-dir)
      if (($# < 2)); then
        echo "heapgate: bench_anchors.sh: --bin-dir needs a directory; fix: --bin-dir build/bench" >&2
        exit 2
      fi
      bin="$2"
      shift ;;
    *)
      echo "heapgate: bench_anchors.sh: unknown argument '$1'; fix: use --check and/or --bin-dir DIR" >&2
      exit 2 ;;
  esac
  shift
done

if ((check)); then
  repeat="${HEAPGATE_BENCH_REPEAT:-1}"
  entries="${HEAPGATE_ANCHOR_ENTRIES:-2000}"
else
  repeat="${HEAPGATE_BENCH_REPEAT:-3}"
  entries="${HEAPGATE_ANCHOR_ENTRIES:-500000}"
fi
if ! [[ "$repeat" =~ ^[1-9][0-9]*$ ]]; then
  echo "heapgate: bench_anchors.sh: HEAPGATE_BENCH_REPEAT: expected a positive whole number, got '$repeat'; fix: HEAPGATE_BENCH_REPEAT=3" >&2
  exit 2
fi
if ! [[ "$entries" =~ ^[1-9][0-9]*$ ]] || ((entries > 100000000)); then
  echo "heapgate: bench_anchors.sh: HEAPGATE_ANCHOR_ENTRIES: expected a whole number from 1 to 100000000, got '$entries'; fix: HEAPGATE_ANCHOR_ENTRIES=500000" >&2
  exit 2
fi
export HEAPGATE_ANCHOR_ENTRIES="$entries"

if [[ -z "$bin" ]]; then
  build="${HEAPGATE_BUILD_DIR:-$here/build}"
  cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEAPGATE_BUILD_BENCHMARK=ON >/dev/null
  cmake --build "$build" -j "${HEAPGATE_BUILD_JOBS:-$(nproc)}" --target bench_anchors
  bin="$build/bench"
fi
bin=$(cd "$bin" && pwd)
measure="$bin/anchor_measure"
if [[ ! -x "$measure" || ! -x "$bin/anchor_workload" ]]; then
  echo "heapgate: bench_anchors.sh: $bin: no anchor_measure or anchor_workload; fix: cmake --build build --target bench_anchors" >&2
  exit 2
fi

# The tools are measured, not built against: install them only if missing,
# and go on without them if that fails (their rows then say so).
if ((!check)) && { ! command -v heaptrack >/dev/null || ! command -v valgrind >/dev/null; }; then
  sudo=""
  if [[ $(id -u) != 0 ]] && command -v sudo >/dev/null; then sudo="sudo"; fi
  echo "== installing heaptrack and valgrind (apt-get)"
  $sudo apt-get install -y --no-install-recommends heaptrack valgrind ||
    { $sudo apt-get update && $sudo apt-get install -y --no-install-recommends heaptrack valgrind; } ||
    echo "heapgate: bench_anchors.sh: apt-get could not install heaptrack and valgrind; their rows are left out" >&2
fi

# ldconfig lives in /sbin, which a user's PATH may lack.
jemalloc=$({ ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true; } |
  awk '$1 == "libjemalloc.so.2" {print $NF; exit}')

work=$(mktemp -d "${TMPDIR:-/tmp}/heapgate-anchors.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Each row: name, then why it cannot run ("" when it can), then the command,
# split on spaces when run (so the build and temp directories must have none).
# Every run starts from the same environment: no preloads, no allocator or
# heapgate settings inherited from the caller.
names=() missing=() commands=()
row() { names+=("$1"); missing+=("$2"); commands+=("$3"); }
need_bin() { [[ -x "$bin/$1" ]] || echo "$1 not built ($2)"; }
need_tool() { command -v "$1" >/dev/null || echo "$1 not installed; fix: apt-get install $1"; }
need_jemalloc() { [[ -n "$jemalloc" ]] || echo "libjemalloc.so.2 not found; fix: apt-get install libjemalloc2"; }
suite="$bin/anchor_suite --heapgate_explain=false --heapgate_report=$work/report"
row "glibc malloc" "" "$bin/anchor_workload"
row "jemalloc (LD_PRELOAD)" "$(need_jemalloc)" "env LD_PRELOAD=$jemalloc $bin/anchor_workload"
row "LeakSanitizer" "$(need_bin anchor_workload_leak 'the compiler cannot link -fsanitize=leak')" "$bin/anchor_workload_leak"
row "AddressSanitizer" "$(need_bin anchor_workload_address 'the compiler cannot link -fsanitize=address')" "$bin/anchor_workload_address"
row "heaptrack" "$(need_tool heaptrack)" "heaptrack -o $work/heaptrack $bin/anchor_workload"
row "Valgrind massif" "$(need_tool valgrind)" "valgrind --tool=massif --massif-out-file=$work/massif.out $bin/anchor_workload"
row "Valgrind memcheck" "$(need_tool valgrind)" "valgrind --tool=memcheck --leak-check=full --error-exitcode=99 $bin/anchor_workload"
row "jemalloc, profiling every allocation" "$(need_jemalloc)" \
  "env LD_PRELOAD=$jemalloc MALLOC_CONF=prof:true,lg_prof_sample:0 $bin/anchor_workload"
for mode in off counters exact; do
  row "heapgate $mode" "$(need_bin anchor_suite 'GoogleTest and heapgate::gtest_main not built')" \
    "$suite --heapgate_mode=$mode"
done

# median FILE COLUMN: the median of a column of numbers (mean of the middle two for an even count).
median() { awk -v c="$2" '{print $c}' "$1" | sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

# /proc/loadavg rather than uptime: minimal Debian images lack procps.
load() { awk '{print $1 ", " $2 ", " $3}' /proc/loadavg; }
load_before=$(load)
failed=0
# Round robin: repetition r runs every row once before repetition r+1, so a
# change in the machine's load during the run falls on all rows alike rather
# than on whichever rows were running then.
status=()  # per row: "" (running), "missing: ...", "failed: ..."
for i in "${!names[@]}"; do
  status+=("${missing[$i]:+missing: ${missing[$i]}}")
  : >"$work/runs$i"
done
for ((r = 0; r < repeat; r++)); do
  for i in "${!names[@]}"; do
    [[ -z "${status[$i]}" ]] || continue
    rm -f "$work/one"
    # shellcheck disable=SC2086  # the commands are word lists built above, no user input
    if ! env -u LD_PRELOAD -u MALLOC_CONF -u HEAPGATE_MODE -u ASAN_OPTIONS -u LSAN_OPTIONS \
        "$measure" "$work/one" ${commands[$i]} >"$work/row$i.log" 2>&1; then
      failed=1
      status[i]="failed: exit $(awk '{print $4}' "$work/one" 2>/dev/null || echo '?'): $(tail -n 1 "$work/row$i.log")"
      continue
    fi
    cat "$work/one" >>"$work/runs$i"
    # heapgate's measuring rows must have counted the workload itself: 2 allocations per entry.
    if [[ "${names[$i]}" == "heapgate counters" || "${names[$i]}" == "heapgate exact" ]] &&
      ! grep -q "\"allocations\": $((2 * entries))," "$work/report/anchor_suite.json"; then
      failed=1
      status[i]="failed: the report does not count $((2 * entries)) allocations"
    fi
  done
done
results=()  # per row: "wall cpu rss_kib", or why there are no numbers
for i in "${!names[@]}"; do
  if [[ -n "${status[$i]}" ]]; then
    results+=("${status[$i]}")
  else
    results+=("$(median "$work/runs$i" 1) $(median "$work/runs$i" 2) $(sort -g -k3 "$work/runs$i" | tail -n 1 | awk '{print $3}')")
  fi
done
load_after=$(load)

cpu_of() { [[ "${results[$1]}" =~ ^[0-9] ]] && echo "${results[$1]}" | awk '{print $2}'; }
glibc_cpu=$(cpu_of 0 || true)
off_cpu=""
for i in "${!names[@]}"; do [[ "${names[$i]}" == "heapgate off" ]] && off_cpu=$(cpu_of "$i" || true); done

echo
echo "anchors: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), Linux $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load average (1, 5, 15 min): $load_before before, $load_after after"
echo "workload: $entries map entries = $((2 * entries)) allocations and frees; median of $repeat run(s) per row; peak RSS: largest run"
echo
echo "| anchor | median wall | median CPU (user+sys) | CPU vs glibc | CPU vs heapgate off | peak RSS |"
echo "|---|---:|---:|---:|---:|---:|"
for i in "${!names[@]}"; do
  if ! [[ "${results[$i]}" =~ ^[0-9] ]]; then
    echo "| ${names[$i]} | ${results[$i]} | | | | |"
    continue
  fi
  read -r wall cpu rss <<<"${results[$i]}"
  vs_off=""
  [[ "${names[$i]}" == heapgate* ]] && vs_off="$off_cpu"
  awk -v name="${names[$i]}" -v wall="$wall" -v cpu="$cpu" -v rss="$rss" -v glibc="$glibc_cpu" -v off="$vs_off" '
    function ratio(a, b) { if (b == "" || b <= 0) return "—"; return sprintf(a / b >= 10 ? "%.0fx" : "%.1fx", a / b) }
    function secs(s) { return sprintf(s >= 10 ? "%.1f s" : s >= 1 ? "%.2f s" : "%.0f ms", s >= 1 ? s : s * 1000) }
    BEGIN { printf "| %s | %s | %s | %s | %s | %.0f MB |\n", name, secs(wall), secs(cpu), ratio(cpu, glibc),
                   off == "" ? "" : ratio(cpu, off), rss / 1024 }'
done
exit "$failed"
