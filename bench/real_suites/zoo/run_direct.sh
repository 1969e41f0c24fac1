#!/bin/bash
# SPDX-License-Identifier: MIT
# A Catch2 or doctest suite run directly, as the README says (zoo.sh drives
# GoogleTest suites only): `off` three times, the recording run, five gated
# runs, the planted +1 (HEAPGATE_PLANT) and the planted leak (HEAPGATE_PLANT_LEAK).
# run_direct.sh OUTDIR BINARY [args...]: off x3, run1, 5 gated, plant, leak plant.
set -u
out=$1; bin=$2; shift 2
name=$(basename "$bin")
mkdir -p "$out/logs"; rm -rf "$out/baselines" "$out/reports"; : > "$out/times.tsv"
t() { local label=$1; shift; local s=$(date +%s.%N); "$@" > "$out/logs/$label.log" 2>&1; local rc=$?; local e=$(date +%s.%N); printf '%s\t%.3f\trc=%d\n' "$label" "$(echo "$e - $s" | bc)" $rc | tee -a "$out/times.tsv"; }
for i in 1 2 3; do t off$i "$bin" --heapgate_mode=off "$@"; done
t run1 "$bin" --heapgate_baselines="$out/baselines" --heapgate_report="$out/reports/run1" "$@"
for i in 2 3 4 5 6; do t run$i "$bin" --heapgate_baselines="$out/baselines" --heapgate_report="$out/reports/run$i" "$@"; done
t plant env HEAPGATE_PLANT=1 "$bin" --heapgate_baselines="$out/baselines" --heapgate_report="$out/reports/plant" "$@"
t leak env HEAPGATE_PLANT_LEAK=1 "$bin" --heapgate_baselines="$out/baselines" --heapgate_report="$out/reports/leak" "$@"
