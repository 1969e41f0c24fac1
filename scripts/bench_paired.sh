#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# heapgate's modes against `off`, and the anchors against the same `off`, in
# paired rounds: every round runs every row of every workload once, each run a
# whole process timed by bench/anchor_measure (wall, and user+system CPU of
# the process and its children, from wait4), the rows of a workload one right
# after the other, their order rotated from round to round. A row's ratio is
# the median of its per-round ratios to that round's `off`, so a machine whose
# speed drifts from minute to minute (this project's VMs do, by up to 30%)
# disturbs the ratio much less than the absolute times. `off`'s own median is
# printed beside every ratio.
#
# Workloads (default sizes; --check uses a few thousand entries):
#   map 1M       bench/anchor_suite (map_workload.h: 500,000 map entries = 1M allocations)
#   map 3M       the same, HEAPGATE_ANCHOR_ENTRIES=1500000 (3M allocations)
#   mixed 2.7M   bench/mixed_suite Mixed.StringsAndVectors (mixed_workload.h: strings of
#                16-511 characters and vectors of 4-1024 bytes in a map, 900,000
#                entries = 2.7M allocations, 65,536 entries live at most)
#   8 threads    Mixed.EightThreads: the mixed workload split over 8 threads, one window
#   outside      no window: the map workload (3M) in a program linked with jemalloc and
#                heapgate (bench/outside_window.cpp), with no window ever opened and after
#                one window closed (both counting paths), against the same workload
#                linked with jemalloc alone
# Rows: heapgate off (the control: the same GoogleTest binary, nothing
# measured), counters and exact through both counting paths (entry points, the
# default; jemalloc's hooks, HEAPGATE_COUNT_WITH=hooks), and the anchors on the
# same workload as a plain program: jemalloc (LD_PRELOAD), LeakSanitizer,
# heaptrack, Valgrind massif.
#
# Quiet minimum: the lowest `off` median (CPU and wall) ever seen per machine
# (hostname, nproc, CPU model) and workload is kept in
# ${XDG_CACHE_HOME:-$HOME/.cache}/heapgate/quiet-min.tsv (HEAPGATE_QUIET_MIN_FILE
# overrides). When this run's `off` median is more than 20% above it, the
# workload's ratios are not printed: the machine is slow now (other jobs, a slow
# minute of the VM), and ratios from such minutes are what misled earlier
# tables. Run again later. A workload's key holds its binary and size; if
# `off` itself became slower for good (a change to the GoogleTest binary or the
# workload), delete that workload's lines from the file.
#
#   scripts/bench_paired.sh                 build bench_paired, 9 rounds, print the tables
#   scripts/bench_paired.sh --rounds N      N rounds (HEAPGATE_BENCH_ROUNDS)
#   scripts/bench_paired.sh --no-anchors    heapgate's rows only (minutes instead of ~20)
#   scripts/bench_paired.sh --only LIST     some workloads: comma-separated of
#                                           map1m,map3m,mixed,threads,outside
#   scripts/bench_paired.sh --check         1 round, tiny workloads, its own quiet-minimum
#                                           file seeded so that the first workload is refused:
#                                           exit 1 unless every row whose tool is installed
#                                           gives numbers, counters and exact count the
#                                           workloads' allocations exactly on both paths,
#                                           and the refusal shows (ctest bench_paired.check)
#   --bin-dir DIR                           use the binaries in DIR (build/bench) instead of
#                                           configuring and building them
# Also run by scripts/bench.sh --paired. Environment: HEAPGATE_BUILD_DIR,
# HEAPGATE_BUILD_JOBS as in scripts/bench.sh; HEAPGATE_QUIET_MIN_FILE.
# heaptrack and valgrind are used when installed (scripts/bench_anchors.sh
# installs them); their rows say "missing" otherwise. hyperfine is not needed:
# it runs all runs of one command before the next, which is not paired.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
prog="bench_paired.sh"
die() { echo "heapgate: $prog: $*" >&2; exit 2; }

check=0 bin="" anchors=1 only="" rounds="${HEAPGATE_BENCH_ROUNDS:-}"
while (($#)); do
  case "$1" in
    --check) check=1 ;;
    --no-anchors) anchors=0 ;;
    --rounds)
      (($# >= 2)) || die "--rounds needs a number; fix: --rounds 9"
      rounds="$2"; shift ;;
    --only)
      (($# >= 2)) || die "--only needs a list; fix: --only map1m,mixed"
      only=",$2,"; shift ;;
    --bin-dir)
      (($# >= 2)) || die "--bin-dir needs a directory; fix: --bin-dir build/bench"
      bin="$2"; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1'; fix: see $0 --help" ;;
  esac
  shift
done
if [[ -z "$rounds" ]]; then rounds=$((check ? 1 : 9)); fi
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "rounds: expected a positive whole number, got '$rounds'; fix: --rounds 9"
if [[ -n "$only" ]]; then
  for w in ${only//,/ }; do
    [[ "$w" =~ ^(map1m|map3m|mixed|threads|outside)$ ]] ||
      die "--only: unknown workload '$w'; fix: a comma-separated list of map1m,map3m,mixed,threads,outside"
  done
fi
wanted() { [[ -z "$only" || "$only" == *",$1,"* ]]; }

if [[ -z "$bin" ]]; then
  build="${HEAPGATE_BUILD_DIR:-$here/build}"
  cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEAPGATE_BUILD_BENCHMARK=ON >/dev/null
  cmake --build "$build" -j "${HEAPGATE_BUILD_JOBS:-$(nproc)}" --target bench_paired
  bin="$build/bench"
fi
[[ -d "$bin" ]] || die "$bin: no such directory; fix: --bin-dir build/bench"
bin=$(cd "$bin" && pwd)
[[ "$bin" != *" "* ]] || die "$bin: the path has a space, which the row commands cannot hold; fix: build elsewhere"
measure="$bin/anchor_measure"
for b in anchor_measure anchor_suite mixed_suite; do
  [[ -x "$bin/$b" ]] || die "$bin: no $b; fix: cmake --build build --target bench_paired"
done

# ldconfig lives in /sbin, which a user's PATH may lack.
jemalloc=$({ ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true; } |
  awk '$1 == "libjemalloc.so.2" {print $NF; exit}')

work=$(mktemp -d "${TMPDIR:-/tmp}/heapgate-paired.XXXXXX")
trap 'rm -rf "$work"' EXIT

cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs || true)
machine="$(uname -n) nproc=$(nproc) ${cpu_model:-unknown CPU}"
machine=${machine//$'\t'/ }
if ((check)); then
  # Its own file, never the machine's: tiny workloads say nothing about the machine.
  quiet_file="$work/quiet-min.tsv"
else
  quiet_file="${HEAPGATE_QUIET_MIN_FILE:-${XDG_CACHE_HOME:-$HOME/.cache}/heapgate/quiet-min.tsv}"
fi

# --- workloads and rows -------------------------------------------------------
# A workload: label, quiet-minimum key, what its baseline row is. A row: its
# workload, name, why it cannot run ("" when it can), the allocations its
# report must count ("=N", ">=N" or ""), and the command, split on spaces.
wlabel=() wkey=() wbase=() wshort=()
rw=() rname=() rmissing=() rexpect=() rcmd=()
workload() { wshort+=("$1"); wlabel+=("$2"); wkey+=("$3"); wbase+=("$4"); }
row() { rw+=($((${#wlabel[@]} - 1))); rname+=("$1"); rmissing+=("$2"); rexpect+=("$3"); rcmd+=("$4"); }
need_bin() { [[ -x "$bin/$1" ]] || echo "$1 not built ($2)"; }
need_tool() { command -v "$1" >/dev/null || echo "$1 not installed; fix: apt-get install $1"; }
need_jemalloc() { [[ -n "$jemalloc" ]] || echo "libjemalloc.so.2 not found; fix: apt-get install libjemalloc2"; }
flags="--heapgate_explain=false"

# heapgate_rows W VAR=N SUITE FILTER EXPECT: off, counters and exact on both paths.
heapgate_rows() {
  local w=$1 size=$2 suite=$3 filter=$4 expect=$5
  local cmd="env $size $bin/$suite $flags --heapgate_report=$work/report-$w $filter"
  row "heapgate off" "" "" "$cmd --heapgate_mode=off"
  row "counters, entry points" "" "$expect" "$cmd --heapgate_mode=counters"
  row "counters, jemalloc hooks" "" "$expect" "${cmd/env /env HEAPGATE_COUNT_WITH=hooks } --heapgate_mode=counters"
  row "exact, entry points" "" "$expect" "$cmd --heapgate_mode=exact"
  row "exact, jemalloc hooks" "" "$expect" "${cmd/env /env HEAPGATE_COUNT_WITH=hooks } --heapgate_mode=exact"
}
# anchor_rows W VAR=N PLAIN LEAK: the plain program under jemalloc and the tools.
anchor_rows() {
  ((anchors)) || return 0
  local w=$1 size=$2 plain=$3 leak=$4
  row "jemalloc, plain program" "$(need_jemalloc)" "" "env $size LD_PRELOAD=$jemalloc $bin/$plain"
  row "LeakSanitizer" "$(need_bin "$leak" 'the compiler cannot link -fsanitize=leak')" "" "env $size $bin/$leak"
  row "heaptrack" "$(need_tool heaptrack)" "" "env $size heaptrack -o $work/heaptrack-$w $bin/$plain"
  row "Valgrind massif" "$(need_tool valgrind)" "" \
    "env $size valgrind --tool=massif --massif-out-file=$work/massif-$w.out $bin/$plain"
}
allocs() { awk -v n="$1" 'BEGIN { if (n >= 1e6) printf "%.3gM", n / 1e6; else printf "%d", n }'; }

if ((check)); then e1=2000 e3=3000 em=3000 et=3000 eo=2000; else e1=500000 e3=1500000 em=900000 et=900000 eo=1500000; fi
if wanted map1m; then
  workload map1m "map $(allocs $((2 * e1))): anchor_suite, $e1 map entries = $((2 * e1)) allocations" \
    "anchor_suite entries=$e1" "heapgate off"
  heapgate_rows map1m "HEAPGATE_ANCHOR_ENTRIES=$e1" anchor_suite "" "=$((2 * e1))"
  anchor_rows map1m "HEAPGATE_ANCHOR_ENTRIES=$e1" anchor_workload anchor_workload_leak
fi
if wanted map3m; then
  workload map3m "map $(allocs $((2 * e3))): anchor_suite, $e3 map entries = $((2 * e3)) allocations" \
    "anchor_suite entries=$e3" "heapgate off"
  heapgate_rows map3m "HEAPGATE_ANCHOR_ENTRIES=$e3" anchor_suite "" "=$((2 * e3))"
  anchor_rows map3m "HEAPGATE_ANCHOR_ENTRIES=$e3" anchor_workload anchor_workload_leak
fi
if wanted mixed; then
  workload mixed "mixed $(allocs $((3 * em))): mixed_suite Mixed.StringsAndVectors, $em entries = $((3 * em)) allocations of mixed sizes" \
    "mixed_suite Mixed.StringsAndVectors entries=$em" "heapgate off"
  heapgate_rows mixed "HEAPGATE_MIXED_ENTRIES=$em" mixed_suite --gtest_filter=Mixed.StringsAndVectors "=$((3 * em))"
  anchor_rows mixed "HEAPGATE_MIXED_ENTRIES=$em" mixed_workload mixed_workload_leak
fi
if wanted threads; then
  workload threads "8 threads: mixed_suite Mixed.EightThreads, $et entries over 8 threads in one window = $((3 * et))+ allocations" \
    "mixed_suite Mixed.EightThreads entries=$et" "heapgate off"
  heapgate_rows threads "HEAPGATE_MIXED_ENTRIES=$et" mixed_suite --gtest_filter=Mixed.EightThreads ">=$((3 * et))"
fi
if wanted outside; then
  workload outside "outside any window: the map workload, $eo entries = $((2 * eo)) allocations, no window open" \
    "outside_window entries=$eo" "jemalloc alone"
  for b in anchor_workload_jemalloc outside_window; do
    [[ -x "$bin/$b" ]] || die "$bin: no $b; fix: cmake --build build --target bench_paired"
  done
  row "jemalloc alone" "" "" "env HEAPGATE_ANCHOR_ENTRIES=$eo $bin/anchor_workload_jemalloc"
  row "heapgate linked, no window ever" "" "" "env HEAPGATE_ANCHOR_ENTRIES=$eo $bin/outside_window"
  row "after one window, entry points" "" "" "env HEAPGATE_ANCHOR_ENTRIES=$eo $bin/outside_window --window-first"
  row "after one window, jemalloc hooks" "" "" \
    "env HEAPGATE_ANCHOR_ENTRIES=$eo HEAPGATE_COUNT_WITH=hooks $bin/outside_window --window-first"
fi
((${#wlabel[@]})) || die "no workload selected"

# Each workload's baseline row, and its rows in order.
base_row=() wrows=()
for w in "${!wlabel[@]}"; do
  wrows+=("")
  for i in "${!rname[@]}"; do
    ((rw[i] == w)) || continue
    wrows[w]+="$i "
    [[ "${rname[$i]}" == "${wbase[$w]}" ]] && base_row[w]=$i
  done
done

# --- the runs ---------------------------------------------------------------
load() { awk '{print $1 ", " $2 ", " $3}' /proc/loadavg; }
load_before=$(load)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "== machine: $(nproc) cores, ${cpu_model:-unknown CPU}, Linux $(uname -r), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), host $(uname -n)"
echo "== $started; load average (1, 5, 15 min) before: $load_before"
echo "== $rounds round(s) of ${#rname[@]} rows in ${#wlabel[@]} workloads; quiet minima: $quiet_file"

status=()  # per row: "" (running), "missing: ...", "failed: ..."
for i in "${!rname[@]}"; do
  status+=("${rmissing[$i]:+missing: ${rmissing[$i]}}")
  : >"$work/runs$i"
done
failed=0
# check_count I: the row's report counts the workload's allocations (rexpect).
check_count() {
  local i=$1 expect=${rexpect[$1]} w=${wshort[${rw[$1]}]} report got
  [[ -n "$expect" ]] || return 0
  for report in "$work/report-$w"/*.json; do break; done
  got=$(grep -o '"allocations": [0-9]*' "$report" 2>/dev/null | head -n 1 | awk '{print $2}')
  if [[ -z "$got" ]]; then echo "no report with allocations in $work/report-$w"; return 1; fi
  case "$expect" in
    ">="*) ((got >= ${expect#>=})) || { echo "the report counts $got allocations, expected at least ${expect#>=}"; return 1; } ;;
    *) ((got == ${expect#=})) || { echo "the report counts $got allocations, expected ${expect#=}"; return 1; } ;;
  esac
}
for ((r = 0; r < rounds; r++)); do
  for w in "${!wlabel[@]}"; do
    read -r -a rows <<<"${wrows[$w]}"
    n=${#rows[@]}
    for ((k = 0; k < n; k++)); do
      i=${rows[$(((k + r) % n))]}  # the order rotates from round to round
      [[ -z "${status[$i]}" ]] || continue
      rm -f "$work/one" "$work/report-${wshort[$w]}"/*.json
      # Every run starts from the same environment: no preloads, no allocator
      # or heapgate settings inherited from the caller.
      # shellcheck disable=SC2086  # the commands are word lists built above, no user input
      if ! env -i PATH="$PATH" HOME="$HOME" ${TMPDIR:+TMPDIR=$TMPDIR} LANG=C.UTF-8 \
          "$measure" "$work/one" ${rcmd[$i]} >"$work/row$i.log" 2>&1; then
        failed=1
        status[i]="failed: exit $(awk '{print $4}' "$work/one" 2>/dev/null || echo '?'): $(tail -n 1 "$work/row$i.log")"
        continue
      fi
      echo "$r $(cat "$work/one")" >>"$work/runs$i"
      if ! why=$(check_count "$i"); then
        failed=1
        status[i]="failed: $why"
      fi
      rm -f "$work"/heaptrack-* "$work"/massif-*
    done
  done
  echo "   round $((r + 1))/$rounds done, load average $(load)"
done
load_after=$(load)

# --- the tables -------------------------------------------------------------
# Per row: median wall and CPU, largest RSS; per-round ratios to the baseline
# row of the same round: median, lowest and highest.
median() { sort -g | awk '{v[NR]=$1} END {if (!NR) print ""; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
col() { awk -v c="$2" '{print $c}' "$1"; }
ratios() {  # ratios ROW BASE COLUMN: per-round ratio lines
  awk -v c="$3" 'NR == FNR { base[$1] = $c; next } ($1 in base) && base[$1] > 0 { print $c / base[$1] }' \
    "$work/runs$2" "$work/runs$1"
}
fmt_time() { awk -v s="$1" 'BEGIN { if (s == "") print "—"; else if (s >= 10) printf "%.1f s", s; else if (s >= 1) printf "%.2f s", s; else printf "%.0f ms", s * 1000 }'; }
fmt_ratio() { awk -v x="$1" 'BEGIN { if (x == "") print "—"; else printf((x >= 10) ? "%.0fx" : "%.2fx", x) }'; }
ms() { awk -v s="$1" 'BEGIN { printf "%.0f", s * 1000 }'; }

# The quiet minima, read once: "machine<TAB>workload<TAB>cpu_ms<TAB>wall_ms<TAB>date".
declare -A quiet_cpu=() quiet_wall=()
if ((check)); then
  # Seeded so that the first workload's `off` is far above its "quiet minimum":
  # the refusal must show.
  printf '%s\t%s\t1\t1\t%s\n' "$machine" "${wkey[0]}" "seeded by --check" >"$quiet_file"
fi
if [[ -r "$quiet_file" ]]; then
  while IFS=$'\t' read -r m k c wl _; do
    [[ "$m" == "$machine" && "$c" =~ ^[0-9]+$ && "$wl" =~ ^[0-9]+$ ]] || continue
    [[ -z "${quiet_cpu[$k]:-}" || "$c" -lt "${quiet_cpu[$k]}" ]] && quiet_cpu[$k]=$c
    [[ -z "${quiet_wall[$k]:-}" || "$wl" -lt "${quiet_wall[$k]}" ]] && quiet_wall[$k]=$wl
  done <"$quiet_file"
fi
new_minima=()
refused=()
declare -A summary=()  # "w|row name" -> ratio cell

echo
echo "## paired rounds: $(nproc) cores, ${cpu_model:-unknown CPU}, Linux $(uname -r), $started"
echo
echo "load average (1, 5, 15 min): $load_before before, $load_after after; $rounds round(s); CPU = user+system of the process and its children"
((check)) && echo "(--check: tiny workloads, one round: these numbers show that the script works, not what anything costs)"
for w in "${!wlabel[@]}"; do
  b=${base_row[$w]}
  echo
  echo "### ${wlabel[$w]}"
  echo
  refused+=(0)
  if [[ -n "${status[$b]}" || ! -s "$work/runs$b" ]]; then
    echo "${wbase[$w]}: ${status[$b]:-no runs}; no ratio printed"
    refused[w]=1
    continue
  fi
  off_cpu=$(col "$work/runs$b" 3 | median)
  off_wall=$(col "$work/runs$b" 2 | median)
  off_cpu_ms=$(ms "$off_cpu") off_wall_ms=$(ms "$off_wall")
  k=${wkey[$w]}
  qc=${quiet_cpu[$k]:-} qw=${quiet_wall[$k]:-}
  slow=""
  if [[ -n "$qc" ]] && ((off_cpu_ms * 100 > qc * 120)); then
    slow="off took $off_cpu_ms ms (CPU), more than 20% above this machine's quiet minimum $qc ms"
  elif [[ -n "$qw" ]] && ((off_wall_ms * 100 > qw * 120)); then
    slow="off took $off_wall_ms ms (wall), more than 20% above this machine's quiet minimum $qw ms"
  fi
  min_cpu=$off_cpu_ms min_wall=$off_wall_ms
  [[ -n "$qc" ]] && ((qc < min_cpu)) && min_cpu=$qc
  [[ -n "$qw" ]] && ((qw < min_wall)) && min_wall=$qw
  if [[ "$min_cpu" != "$qc" || "$min_wall" != "$qw" ]]; then
    new_minima+=("$(printf '%s\t%s\t%s\t%s\t%s' "$machine" "$k" "$min_cpu" "$min_wall" "$(date -u +%Y-%m-%dT%H:%MZ)")")
  fi
  quiet_note="quiet minimum on this machine: ${qc:-none yet} ms CPU, ${qw:-none yet} ms wall"
  [[ -z "$qc" ]] && quiet_note="no quiet minimum on this machine yet: this run sets it"
  echo "${wbase[$w]}: median $(fmt_time "$off_cpu") CPU, $(fmt_time "$off_wall") wall; $quiet_note"
  if [[ -n "$slow" ]]; then
    echo
    echo "$slow: the machine is slow now, no ratio printed"
    refused[w]=1
    continue
  fi
  echo
  echo "| row | median CPU | median wall | peak RSS | CPU / ${wbase[$w]}: median of rounds (range) | wall / ${wbase[$w]} | ${wbase[$w]} (CPU, wall) |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  for i in ${wrows[$w]}; do
    if [[ -n "${status[$i]}" || ! -s "$work/runs$i" ]]; then
      echo "| ${rname[$i]} | ${status[$i]:-no runs} | | | | | |"
      summary["$w|${rname[$i]}"]="${status[$i]%%:*}"
      continue
    fi
    cpu=$(col "$work/runs$i" 3 | median)
    wall=$(col "$work/runs$i" 2 | median)
    rss=$(col "$work/runs$i" 4 | sort -g | tail -n 1)
    rc=$(ratios "$i" "$b" 3 | median)
    rlo=$(ratios "$i" "$b" 3 | sort -g | head -n 1)
    rhi=$(ratios "$i" "$b" 3 | sort -g | tail -n 1)
    rwall=$(ratios "$i" "$b" 2 | median)
    range=""
    ((rounds > 1)) && range=" ($(fmt_ratio "$rlo")–$(fmt_ratio "$rhi"))"
    echo "| ${rname[$i]} | $(fmt_time "$cpu") | $(fmt_time "$wall") | $(awk -v k="$rss" 'BEGIN { printf "%.0f MB", k / 1024 }') |" \
      "**$(fmt_ratio "$rc")**$range | $(fmt_ratio "$rwall") | $(fmt_time "$off_cpu"), $(fmt_time "$off_wall") |"
    summary["$w|${rname[$i]}"]=$rc
  done
done

# The summary: one line per workload, `off` beside the ratios, and the targets.
cols=("counters, entry points" "counters, jemalloc hooks" "exact, entry points" "exact, jemalloc hooks")
((anchors)) && cols+=("jemalloc, plain program" "LeakSanitizer" "heaptrack" "Valgrind massif")
echo
echo "### summary: CPU ratios to \`off\` (median of per-round ratios), \`off\`'s median CPU beside them"
echo
header="| workload | off (CPU) |" rule="|---|---:|"
for c in "${cols[@]}"; do header+=" $c |"; rule+="---:|"; done
echo "$header"
echo "$rule"
verdict() {  # verdict W ROW LIMIT: the row's ratio, and whether it is within LIMIT
  local v=${summary["$1|$2"]:-}
  [[ "$v" =~ ^[0-9] ]] || { echo "no number"; return; }
  awk -v v="$v" -v l="$3" 'BEGIN { printf "%.2fx %s", v, (v <= l ? "yes" : "NO") }'
}
targets=()
for w in "${!wlabel[@]}"; do
  b=${base_row[$w]}
  line="| ${wlabel[$w]%%:*} |"
  if ((refused[w])); then
    echo "$line slow now: no ratio printed |"
    continue
  fi
  line+=" $(fmt_time "$(col "$work/runs$b" 3 | median)") |"
  if [[ "${wshort[$w]}" == outside ]]; then
    line+=" with heapgate linked, outside any window: $(fmt_ratio "${summary["$w|heapgate linked, no window ever"]:-}") (no window ever opened),"
    line+=" $(fmt_ratio "${summary["$w|after one window, entry points"]:-}") (after a window, entry points),"
    line+=" $(fmt_ratio "${summary["$w|after one window, jemalloc hooks"]:-}") (after a window, jemalloc hooks) |"
    echo "$line"
    continue
  fi
  for c in "${cols[@]}"; do
    v=${summary["$w|$c"]:-}
    if [[ "$v" =~ ^[0-9] ]]; then line+=" $(fmt_ratio "$v") |"; else line+=" ${v:-—} |"; fi
  done
  echo "$line"
  targets+=("${wlabel[$w]%%:*}: counters ≤ 1.15x off: $(verdict "$w" "counters, entry points" 1.15) (entry points), $(verdict "$w" "counters, jemalloc hooks" 1.15) (hooks); exact ≤ 2x off: $(verdict "$w" "exact, entry points" 2) (entry points), $(verdict "$w" "exact, jemalloc hooks" 2) (hooks)")
done
if ((${#targets[@]})) && ! ((check)); then
  echo
  for t in "${targets[@]}"; do echo "- $t"; done
fi

# Lower minima are kept (a refused run is never lower than its minimum).
if ((${#new_minima[@]})) && ! ((failed)); then
  mkdir -p "$(dirname "$quiet_file")"
  printf '%s\n' "${new_minima[@]}" >>"$quiet_file"
  echo
  echo "quiet minima updated in $quiet_file"
fi

if ((check)); then
  ((refused[0])) || { echo "heapgate: $prog --check: the first workload's ratios were printed despite its seeded quiet minimum" >&2; failed=1; }
  for w in "${!wlabel[@]}"; do
    ((w == 0 || !refused[w])) || { echo "heapgate: $prog --check: ${wlabel[$w]}: refused without a quiet minimum" >&2; failed=1; }
  done
fi
for i in "${!rname[@]}"; do
  [[ "${status[$i]}" != failed* ]] || echo "heapgate: $prog: ${wlabel[${rw[$i]}]%%:*}, ${rname[$i]}: ${status[$i]}" >&2
done
exit "$failed"
