#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `heapgate record` against the tools a developer reaches for to find a leak
# in a program that knows nothing of them (docs/performance.md, "heapgate
# record against heaptrack and Valgrind"). Two programs, each run as it is
# (`off`), under `heapgate record --mode counters` and `--mode exact`,
# heaptrack, `valgrind --tool=massif` and `valgrind --leak-check=full`
# (memcheck):
#   anchor        bench/anchor_workload: a std::map<int, std::string> of
#                 HEAPGATE_ANCHOR_ENTRIES (default 500000) entries built and
#                 destroyed, 2 allocations per entry, glibc's malloc when off
#   clang-format  Debian's clang-format (a dynamically linked C++ program on
#                 libLLVM) formatting nlohmann/json.hpp (1.45M allocations)
# Prints a Markdown table: median wall time and its ratio to `off`, median CPU
# (user+system, wait4, descendants included) and the largest peak RSS of any
# one process of the run (bench/anchor_measure). heapgate's rows are the whole
# command, the summary after the program included; the "program only" rows
# run the program with the same preloads and no summary. Rows take turns, so
# load that comes and goes is shared among them.
#
#   bench/record_tools.sh [--bin-dir DIR] [--only anchor|clang-format]
# DIR holds anchor_workload and anchor_measure (default build/bench) and
# ../runner/heapgate, ../lib/measure/libheapgate_record.so.
# Environment: HEAPGATE_BENCH_REPEAT runs per row (default 3).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin="$here/build/bench"
only=""
while (($#)); do
  case "$1" in
    --bin-dir) bin="$2"; shift ;;
    --only) only="$2"; shift ;;
    *) echo "heapgate: record_tools.sh: unknown argument '$1'; fix: use --bin-dir DIR and/or --only WORKLOAD" >&2; exit 2 ;;
  esac
  shift
done
repeat="${HEAPGATE_BENCH_REPEAT:-3}"
measure="$bin/anchor_measure"
heapgate="$bin/../runner/heapgate"
library="$bin/../lib/measure/libheapgate_record.so"
for f in "$measure" "$bin/anchor_workload" "$heapgate" "$library"; do
  if [ ! -x "$f" ] && [ ! -f "$f" ]; then
    echo "heapgate: record_tools.sh: $f is missing; fix: cmake --build build --target anchor_measure anchor_workload heapgate_cli heapgate_record" >&2
    exit 2
  fi
done
for tool in heaptrack valgrind clang-format; do
  command -v "$tool" > /dev/null || { echo "heapgate: record_tools.sh: $tool not found; fix: apt-get install $tool" >&2; exit 2; }
done
jemalloc=$(ldconfig -p | awk '/libjemalloc.so.2 /{print $NF; exit}')
input=/usr/include/nlohmann/json.hpp
[ -f "$input" ] || { echo "heapgate: record_tools.sh: $input missing; fix: apt-get install nlohmann-json3-dev" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/heapgate-record-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
export HEAPGATE_ANCHOR_ENTRIES="${HEAPGATE_ANCHOR_ENTRIES:-500000}"

rows=(off counters exact counters_program exact_program heaptrack massif memcheck)
label() {
  case "$1" in
    off) echo "off (the program alone)" ;;
    counters) echo "heapgate record --mode counters" ;;
    exact) echo "heapgate record (exact)" ;;
    counters_program) echo "… counters, program only (no summary)" ;;
    exact_program) echo "… exact, program only (no summary)" ;;
    heaptrack) echo "heaptrack" ;;
    massif) echo "valgrind --tool=massif" ;;
    memcheck) echo "valgrind --leak-check=full (memcheck)" ;;
  esac
}

# run WORKLOAD ROW RUN: one measured run, its line appended to $work/WORKLOAD.ROW
run() {
  local workload=$1 row=$2 n=$3
  local -a program
  if [ "$workload" = anchor ]; then program=("$bin/anchor_workload"); else program=(clang-format "$input"); fi
  local out="$work/$workload.$row.$n"
  rm -rf "$out.d"
  local -a cmd
  case "$row" in
    off) cmd=("${program[@]}") ;;
    counters) cmd=("$heapgate" record --mode counters -o "$out.d" -- "${program[@]}") ;;
    exact) cmd=("$heapgate" record -o "$out.d" -- "${program[@]}") ;;
    counters_program | exact_program)
      mkdir -p "$out.d"
      cmd=(env "LD_PRELOAD=$library:$jemalloc" "HEAPGATE_RECORD_DIR=$out.d" "HEAPGATE_RECORD_MODE=${row%_program}"
        "${program[@]}") ;;
    heaptrack) cmd=(heaptrack -o "$out.heaptrack" "${program[@]}") ;;
    massif) cmd=(valgrind -q --tool=massif "--massif-out-file=$out.massif" "${program[@]}") ;;
    memcheck) cmd=(valgrind -q --leak-check=full "--log-file=$out.memcheck" "${program[@]}") ;;
  esac
  "$measure" "$work/$workload.$row.line" "${cmd[@]}" > /dev/null 2> "$out.stderr" || {
    echo "heapgate: record_tools.sh: $workload/$row failed; its stderr:" >&2
    cat "$out.stderr" >&2
    exit 1
  }
  cat "$work/$workload.$row.line" >> "$work/$workload.$row"
  rm -rf "$out.d" "$out".heaptrack* "$out.massif" "$out.memcheck"
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

workloads=(anchor clang-format)
[ -n "$only" ] && workloads=("$only")
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for workload in "${workloads[@]}"; do
  for ((n = 1; n <= repeat; ++n)); do
    for row in "${rows[@]}"; do run "$workload" "$row" "$n"; done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); $repeat run(s) per row; anchor: $HEAPGATE_ANCHOR_ENTRIES entries"
echo
echo "| workload | tool | median wall | vs off | median CPU | peak RSS |"
echo "|---|---|---:|---:|---:|---:|"
for workload in "${workloads[@]}"; do
  off_wall=$(awk '{print $1}' "$work/$workload.off" | median)
  for row in "${rows[@]}"; do
    wall=$(awk '{print $1}' "$work/$workload.$row" | median)
    cpu=$(awk '{print $2}' "$work/$workload.$row" | median)
    rss=$(awk '{print $3}' "$work/$workload.$row" | sort -g | tail -1)
    awk -v w="$workload" -v t="$(label "$row")" -v wall="$wall" -v off="$off_wall" -v cpu="$cpu" -v rss="$rss" \
      'BEGIN {printf "| %s | %s | %.2f s | %.2fx | %.2f s | %d MB |\n", w, t, wall, wall / off, cpu, rss / 1024}'
  done
done
