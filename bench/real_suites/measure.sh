#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Measures one gated GoogleTest binary as a user runs it: off, then gated twice
# (the first run records the baseline, the second compares), then gated with
# --heapgate_explain=false. Prints wall times and the verdict counts.
# usage: measure.sh NAME BINARY [gtest args...]
set -u
name=$1; bin=$2; shift 2
out=${HEAPGATE_REAL_SUITES_OUT:-/tmp/heapgate-real-suites}/$name
rm -rf "$out"; mkdir -p "$out"
t() { /usr/bin/time -f "%e" -o "$out/$1.time" "${@:2}" > "$out/$1.log" 2>&1; echo "$1: exit $? wall $(cat "$out/$1.time") s"; }
t off "$bin" "$@" --heapgate_mode=off
t gated1 "$bin" "$@" --heapgate_baselines="$out/baselines" --heapgate_report="$out/r1"
t gated2 "$bin" "$@" --heapgate_baselines="$out/baselines" --heapgate_report="$out/r2"
t noexplain "$bin" "$@" --heapgate_baselines="$out/baselines" --heapgate_report="$out/r3" --heapgate_explain=false
for r in r1 r2; do
  python3 - "$out/$r" <<'PY'
import json, glob, sys, collections
for f in glob.glob(sys.argv[1] + "/*.json"):
    rep = json.load(open(f))
    c = collections.Counter(t["verdict"] for t in rep["tests"])
    print(sys.argv[1].rsplit("/", 1)[1], dict(c), "gtest_failed:", sum(t["gtest_failed"] for t in rep["tests"]))
    for t in rep["tests"]:
        if t["verdict"] in ("leaked", "regressed", "over_budget", "unavailable"):
            print("  ", t["verdict"], t["name"], "|", t["message"].split("\n")[0][:200])
            for s in t["stacks"][:2]:
                print("      ", " < ".join(s["frames"][:3])[:200])
        elif t.get("growth"):
            print("   note", t["name"], "|", t["message"].split("\n")[0][:160])
PY
done
