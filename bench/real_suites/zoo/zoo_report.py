#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Summarises one zoo suite's runs (reports/<run>/<binary>.json, times.tsv) into
a table row (rows.jsonl) and notes, or prints the table of all rows (--table).

Verdicts: pass/improved/new/skipped/missing are fine; regressed, leaked,
over_budget and unavailable in a gated run of an unchanged build are false
verdicts. A test with gtest_failed and no failing verdict failed its own
assertions (the suite's flakiness, not the gate's)."""
import argparse
import collections
import fnmatch
import glob
import json
import os
import sys

BAD = ("regressed", "leaked", "over_budget", "unavailable")


def first_line(message):
    for line in (message or "").split("\n"):
        if line.strip() and not line.startswith("heapgate: "):
            return line.strip()[:220]
    return (message or "").split("\n")[0][:220]


def libc_hint(t):
    frames = " ".join(f for s in t.get("stacks", []) for f in s.get("frames", []))
    for word in ("__add_to_environ", "setenv", "putenv", "getenv", "locale", "nss", "getpw", "getaddrinfo", "gethostby", "dlopen",
                 "_dl_", "tzset", "localtime", "strftime", "iconv", "pthread_create", "__cxa_thread_atexit"):
        if word in frames or word in (t.get("message") or ""):
            return word
    return ""


def kind_hint(t):
    h = []
    if t.get("other_threads"):
        h.append("company")
    lh = libc_hint(t)
    if lh:
        h.append("libc:" + lh)
    return ",".join(h) or "own-thread"


def load_run(out, run):
    tests, missing = [], []
    d = os.path.join(out, "reports", run)
    files = sorted(glob.glob(os.path.join(d, "*.json")))
    for f in files:
        try:
            rep = json.load(open(f))
        except (OSError, ValueError) as e:
            missing.append(f"{os.path.basename(f)}: unreadable ({e})")
            continue
        b = os.path.basename(f)[:-5]
        for t in rep.get("tests", []):
            t["_binary"] = b
            tests.append(t)
    return tests, files


def summarise(a):
    out = a.out
    times = collections.defaultdict(float)
    rcs = collections.defaultdict(list)
    binaries = []
    for line in open(os.path.join(out, "times.tsv")):
        b, r, s, rc = line.rstrip("\n").split("\t")
        times[r] += float(s)
        rcs[r].append(int(rc))
        if b not in binaries:
            binaries.append(b)
    gated = [f"r{k}" for k in range(2, a.runs + 2)]
    notes = [f"== {a.suite} ({a.kind}; commit {a.commit[:12]}; binaries: {', '.join(binaries)})"]
    row = {"suite": a.suite, "new": a.new == "1", "kind": a.kind, "commit": a.commit, "binaries": binaries}
    r1, r1_files = load_run(out, "r1")
    row["tests"] = len(r1)
    if len(r1_files) < len(binaries):
        notes.append(f"  run 1 wrote {len(r1_files)} reports for {len(binaries)} binaries (exit codes {rcs['r1']})")
    row["r1_bad"] = sum(t["verdict"] in BAD for t in r1)
    for t in r1:
        if t["verdict"] in BAD:
            notes.append(f"  run 1 {t['verdict']}: {t['name']} [{t['_binary']}] [{kind_hint(t)}] | {first_line(t['message'])}")
    row["false"] = []
    row["own_failures"] = []
    false_names = collections.Counter()
    for r in ["r1"] + gated:
        tests, files = load_run(out, r)
        if r != "r1":
            if len(files) < len(binaries):
                notes.append(f"  {r}: {len(files)} reports for {len(binaries)} binaries (exit codes {rcs[r]})")
            bad = [t for t in tests if t["verdict"] in BAD]
            row["false"].append(len(bad))
            for t in bad:
                false_names[t["name"]] += 1
                notes.append(f"  {r} {t['verdict']}: {t['name']} [{t['_binary']}] [{kind_hint(t)}] | {first_line(t['message'])}")
            c = collections.Counter(t["verdict"] for t in tests)
            notes.append(f"  {r}: {dict(c)}; exit codes {rcs[r]}")
        own = [t for t in tests if t.get("gtest_failed") and t["verdict"] not in BAD]
        row["own_failures"].append(len(own))
        for t in own:
            notes.append(f"  {r} own failure (verdict {t['verdict']}): {t['name']} [{t['_binary']}]")
    if rcs.get("off") and any(rcs["off"]):
        notes.append(f"  off: exit codes {rcs['off']} (the suite's own failures with the gate off)")
    # the planted run
    plant, _ = load_run(out, "plant")
    hits = [t for t in plant if a.plant_test and fnmatch.fnmatchcase(t["name"], a.plant_test)]
    caught = [t for t in hits if t["verdict"] == "regressed"]
    row["plant_caught"] = f"{len(caught)}/{len(hits)}" if len(hits) > 1 else ("yes" if caught else ("no" if hits else "not run"))
    row["plant_site"] = a.plant_site
    row["site_named"] = bool(caught) and all(a.plant_site and a.plant_site in t["message"] for t in caught)
    # not in the message, but in the report's top stacks of the exact re-run
    row["site_in_stacks"] = bool(caught) and all(
        a.plant_site and any(a.plant_site in f for s in t.get("stacks", []) for f in s.get("frames", [])) for t in caught)
    for t in hits:
        notes.append(f"  planted ({a.plant_site}): {t['name']} {t['verdict']} | {first_line(t['message'])}")
        lines = t["message"].split("\n")
        named = [l for l in lines if a.plant_site and a.plant_site in l]
        # the site the message names instead: the first call-site line
        sites = [l for l in lines if l.lstrip().startswith(("+", "-")) and " at " in l]
        for line in (named or sites)[:2]:
            notes.append(f"    {'names the site' if named else 'names instead'}: {line.strip()[:220]}")
    extra = [t for t in plant if t["verdict"] in BAD and t not in hits]
    row["plant_extra"] = len(extra)
    for t in extra:
        notes.append(f"  planted run, other {t['verdict']}: {t['name']} [{kind_hint(t)}] | {first_line(t['message'])}")
    # growth notes in run 1 (one-time setup judged level), for the record
    growth = [t["name"] for t in r1 if t.get("growth") or t.get("setup_residue")]
    if growth:
        notes.append(f"  run 1 growth checks ({len(growth)}): {', '.join(growth[:8])}{' ...' if len(growth) > 8 else ''}")
    row["off_s"] = round(times["off"], 2)
    row["first_s"] = round(times["r1"], 2)
    row["gated_s"] = [round(times[r], 2) for r in gated]
    row["plant_s"] = round(times["plant"], 2)
    row["exit_codes"] = {r: rcs[r] for r in ["off", "r1"] + gated + ["plant"]}
    with open(a.rows, "a") as f:
        f.write(json.dumps(row) + "\n")
    with open(a.notes, "a") as f:
        f.write("\n".join(notes) + "\n")


def table(rows_path, runs):
    rows = [json.loads(l) for l in open(rows_path) if l.strip()]
    hdr = ["suite", "new", "tests", "run1 bad", f"false r2..r{runs + 1}", "own fails r1..", "plant caught",
           "site named", "off s", "first/off", "gated/off"]
    lines = []
    for r in rows:
        if "skipped" in r:
            lines.append([r["suite"], "", "", "", "", "", "", "", "", "", "skipped: " + r["skipped"]])
            continue
        off = r["off_s"] or float("nan")
        g = r["gated_s"]
        gmean = sum(g) / len(g) if g else float("nan")
        lines.append([
            r["suite"], "yes" if r["new"] else "no", str(r["tests"]), str(r["r1_bad"]),
            "/".join(str(x) for x in r["false"]), "/".join(str(x) for x in r["own_failures"]),
            r["plant_caught"] + (f" (+{r['plant_extra']} other)" if r.get("plant_extra") else ""),
            ("yes " if r["site_named"] else "stacks only " if r.get("site_in_stacks") else "no ") + (r["plant_site"] or ""),
            f"{r['off_s']:.2f}", f"{r['first_s'] / off:.2f}x",
            f"{gmean / off:.2f}x ({min(g) / off:.2f}-{max(g) / off:.2f})" if g else "",
        ])
    w = [max(len(h), *(len(l[i]) for l in lines)) if lines else len(h) for i, h in enumerate(hdr)]
    print("| " + " | ".join(h.ljust(w[i]) for i, h in enumerate(hdr)) + " |")
    print("|" + "|".join("-" * (x + 2) for x in w) + "|")
    for l in lines:
        print("| " + " | ".join(c.ljust(w[i]) for i, c in enumerate(l)) + " |")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--table")
    p.add_argument("--suite")
    p.add_argument("--out")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--kind", default="")
    p.add_argument("--commit", default="")
    p.add_argument("--new", default="1")
    p.add_argument("--plant-test", default="")
    p.add_argument("--plant-site", default="")
    p.add_argument("--rows")
    p.add_argument("--notes")
    a = p.parse_args()
    if a.table:
        table(a.table, a.runs)
    else:
        summarise(a)


if __name__ == "__main__":
    sys.exit(main())
