#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs the shell steps of heapgate's CI templates (ci/templates) against the
sample consumer project beside this file, the way the CI would.

The steps are extracted from the templates themselves (YAML for GitHub
Actions and GitLab CI, the `sh '''...'''` blocks of the Jenkinsfile), never
copied, and run in order in a scratch checkout, each in the shell that CI uses,
until one fails. Substituted are only what a CI machine provides and this one
cannot: the FetchContent download (CMAKE_ARGS gets
-DFETCHCONTENT_SOURCE_DIR_HEAPGATE=<this source tree>), the package
installation (apt-get steps are skipped: this machine has the packages, which
is checked), the compiler cache's location (a directory that survives between
runs, as CI's cache does) and the benchmark binary (the consumer's). One
substitution is for time alone: the build type is Debug, not the templates'
RelWithDebInfo (a later -DCMAKE_BUILD_TYPE in CMAKE_ARGS wins). A cold build of
heapgate as the consumer's subproject is most of this test's time, and -O0
compiles in about a third of the CPU of -O2 -g; heapgate's own build and the
packaging tests build it optimised, and the steps, the gate's verdicts and the
stacks' lines are the same.

  run_ci_templates.py packages --source DIR
      every template's HEAPGATE_PACKAGES holds what `scripts/setup.sh --print-packages` prints
  run_ci_templates.py run --source DIR --work DIR --ccache DIR [--template NAME...]
      for each template: a first run records the baselines (exit 0), two unchanged
      runs pass (exit 0; the consumer has a threaded test whose counts vary with
      timing, CountWordsParallel), a planted allocation regression fails the
      gate with exit 1 and leaves the JUnit failure and the HTML page

Exit 0 when every check holds; 1 with one line per failed check otherwise.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATES = {
    "github": "ci/templates/github-actions.yml",
    "gitlab": "ci/templates/gitlab-ci.yml",
    "jenkins": "ci/templates/Jenkinsfile",
}
# What the consumer's planted regression changes (src/wordcount.cpp).
PLANT_FROM = "constexpr bool kSkipReserve = false;"
PLANT_TO = "constexpr bool kSkipReserve = true;"


class Job:
    """One template's job: its environment and its shell steps, in order."""

    def __init__(self, name, env, steps, one_shell=False):
        self.name = name
        self.env = env      # {name: value} as the template sets them
        self.steps = steps  # [(step name, shell argv prefix, script)]
        self.one_shell = one_shell  # the steps are lines of one shell script (GitLab)


def fail(message):
    print(f"heapgate: run_ci_templates.py: {message}", file=sys.stderr)
    sys.exit(1)


def github_job(text):
    doc = yaml.safe_load(text)
    jobs = doc.get("jobs") or {}
    if len(jobs) != 1:
        fail(f"github-actions.yml: jobs: expected one job, got {len(jobs)}")
    (job_name, job), = jobs.items()
    env = {k: str(v) for k, v in (doc.get("env") or {}).items()}
    env.update({k: str(v) for k, v in (job.get("env") or {}).items()})
    shell = (((job.get("defaults") or {}).get("run") or {}).get("shell")
             or ((doc.get("defaults") or {}).get("run") or {}).get("shell") or "bash")
    # The commands GitHub runs for `shell: bash` and `shell: sh`.
    argv = {"bash": ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c"], "sh": ["sh", "-e", "-c"]}.get(shell)
    if argv is None:
        fail(f"github-actions.yml: defaults.run.shell: {shell} is not bash or sh")
    steps = []
    for i, step in enumerate(job.get("steps") or []):
        if "run" not in step:
            continue  # an action (checkout, cache, upload): CI's, not shell
        if step.get("if") not in (None, "always()"):
            fail(f"github-actions.yml: step {i}: condition {step['if']!r} cannot be evaluated here")
        steps.append((step.get("name", f"step {i}"), argv, step["run"]))
    return Job(f"github:{job_name}", env, steps)


def gitlab_job(text):
    doc = yaml.safe_load(text)
    env = {k: str(v) for k, v in (doc.get("variables") or {}).items()}
    jobs = {k: v for k, v in doc.items() if isinstance(v, dict) and "script" in v}
    if len(jobs) != 1:
        fail(f"gitlab-ci.yml: expected one job with a script, got {len(jobs)}")
    (job_name, job), = jobs.items()
    env.update({k: str(v) for k, v in (job.get("variables") or {}).items()})
    # GitLab runs before_script and script as one shell script that stops at
    # the first failing command; apt-get lines are filtered out by the caller.
    lines = list(job.get("before_script") or []) + list(job["script"])
    argv = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c"]
    return Job(f"gitlab:{job_name}", env, [(f"script line {i}", argv, line) for i, line in enumerate(lines)],
               one_shell=True)


def jenkins_job(text):
    block = re.search(r"environment\s*\{(.*?)\n  \}", text, re.S)
    if not block:
        fail("Jenkinsfile: no environment { } block")
    env = {}
    for line in block.group(1).splitlines():
        line = line.strip()
        if not line or line.startswith("//"):
            continue
        m = re.fullmatch(r"([A-Z_][A-Z0-9_]*)\s*=\s*'([^'\\]*)'", line)
        if not m:
            fail(f"Jenkinsfile: environment: cannot read {line!r}; fix: NAME = 'value', one a line")
        env[m.group(1)] = m.group(2)
    steps = []
    # Stages in order, each with its sh steps ('''…''', '…' or "…").
    stage_starts = [(m.start(), m.group(1)) for m in re.finditer(r"stage\('([^']*)'\)", text)]
    sh_re = re.compile(r"\bsh\s+(?:'''(.*?)'''|'([^'\n]*)'|\"([^\"\n]*)\")", re.S)
    for m in sh_re.finditer(text):
        script = next(g for g in m.groups() if g is not None)
        if "\\" in script:
            # Groovy would unescape it; keep the templates free of that.
            fail("Jenkinsfile: an sh step contains a backslash; fix: write the command without one")
        if m.group(3) is not None and "$" in script:
            fail("Jenkinsfile: an sh \"...\" step uses $ (Groovy interpolates it); fix: use sh '''...'''")
        stage = [name for start, name in stage_starts if start < m.start()]
        # Jenkins runs sh steps with `sh -xe`.
        steps.append((stage[-1] if stage else "?", ["sh", "-xe", "-c"], script))
    return Job("jenkins", env, steps)


def load_job(source, template):
    with open(os.path.join(source, TEMPLATES[template]), encoding="utf-8") as f:
        text = f.read()
    return {"github": github_job, "gitlab": gitlab_job, "jenkins": jenkins_job}[template](text)


def print_packages(source):
    out = subprocess.run([os.path.join(source, "scripts/setup.sh"), "--print-packages"],
                         check=True, capture_output=True, text=True).stdout.split()
    if not out:
        fail("scripts/setup.sh --print-packages printed nothing")
    return out


def check_packages(source):
    wanted = print_packages(source)
    errors = []
    for template in TEMPLATES:
        job = load_job(source, template)
        have = job.env.get("HEAPGATE_PACKAGES", "").split()
        missing = [p for p in wanted if p not in have]
        if missing:
            errors.append(f"{TEMPLATES[template]}: HEAPGATE_PACKAGES lacks {' '.join(missing)} "
                          f"(scripts/setup.sh --print-packages); fix: add them")
        else:
            print(f"{TEMPLATES[template]}: HEAPGATE_PACKAGES holds all {len(wanted)} packages")
    return errors


def installed(package):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True)
    return r.returncode == 0 and "ok installed" in r.stdout


def run_job(job, work, overrides, log):
    """Runs the job's steps in `work` until one fails. Returns (exit code, step name)."""
    env = dict(os.environ)
    for k in [k for k in env if k.startswith(("GITHUB_", "CI_", "GITLAB_", "JENKINS_", "HEAPGATE"))]:
        del env[k]
    env.update(job.env)
    env.update(overrides)
    steps = []
    for name, argv, script in job.steps:
        if re.search(r"^\s*(DEBIAN_FRONTEND=\S+\s+)?apt-get\b", script, re.M):
            log.write(f"--- {job.name}: {name}: skipped (apt-get; the packages are checked instead)\n")
            continue
        if "${{" in script:
            fail(f"{job.name}: {name}: a GitHub expression in a run step cannot be run here; "
                 "fix: pass it through env")
        steps.append((name, argv, script))
    if job.one_shell and steps:
        # One shell for all lines, as GitLab runs them; the EXIT trap tells
        # which line stopped it.
        marker = os.path.join(work, "..", "failed-line")
        lines = [f"trap 'echo \"$_ci_line\" > {marker}' EXIT"]
        for i, (_, _, script) in enumerate(steps):
            lines += [f"_ci_line={i}", script]
        if os.path.exists(marker):
            os.remove(marker)
        log.write(f"--- {job.name}: one shell\n")
        code = subprocess.run(steps[0][1] + ["\n".join(lines)], cwd=work, env=env,
                              stdout=log, stderr=subprocess.STDOUT).returncode
        log.write(f"--- exit {code}\n")
        if code == 0:
            return 0, None, None
        with open(marker, encoding="utf-8") as f:
            name, _, script = steps[int(f.read().strip())]
        return code, name, script
    for name, argv, script in steps:
        log.write(f"--- {job.name}: {name}\n{script}\n")
        log.flush()
        code = subprocess.run(argv + [script], cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
        log.write(f"--- exit {code}\n")
        if code != 0:
            return code, name, script
    return 0, None, None


def run_templates(args):
    errors = []
    work = os.path.abspath(args.work)
    source = os.path.abspath(args.source)
    wanted = set(print_packages(source))
    shutil.rmtree(work, ignore_errors=True)
    # The consumer's checkout; its build directory is shared by the templates,
    # whose build steps are the same (CI's build cache, in effect).
    shutil.copytree(HERE, work, ignore=shutil.ignore_patterns("run_ci_templates.py", "__pycache__"))
    summary = os.path.join(work, "..", "github-step-summary.md")
    overrides = {
        "CMAKE_ARGS": f"-DFETCHCONTENT_SOURCE_DIR_HEAPGATE={source} -DCMAKE_BUILD_TYPE=Debug",
        # The environment's compiler cache when it has one (a developer's, or
        # heapgate's own CI cache), else one kept in the build directory.
        "CCACHE_DIR": os.environ.get("CCACHE_DIR") or os.path.abspath(args.ccache),
        # Hits whatever the scratch directory's path: with -g, ccache would
        # otherwise hash the working directory in.
        "CCACHE_NOHASHDIR": "true",
        "BENCHMARK_BINARY": "build/wordcount_bench",
        # What the CI systems provide.
        "CI": "true", "GITHUB_WORKSPACE": work, "GITHUB_STEP_SUMMARY": summary,
        "CI_PROJECT_DIR": work, "WORKSPACE": work,
    }
    source_file = os.path.join(work, "src", "wordcount.cpp")
    with open(source_file, encoding="utf-8") as f:
        original = f.read()
    if PLANT_FROM not in original:
        fail(f"{source_file}: no line {PLANT_FROM!r} to plant the regression in")
    report = os.path.join(work, "heapgate-report")
    baselines = os.path.join(work, "baselines")
    for template in args.template:
        job = load_job(source, template)
        missing = [p for p in job.env.get("HEAPGATE_PACKAGES", "").split() if not installed(p)]
        if [p for p in missing if p in wanted or p == "ccache"]:
            fail(f"packages not installed: {' '.join(missing)}; fix: scripts/setup.sh --deps-only, apt-get install ccache")
        if missing:
            print(f"{template}: not installed, not needed without a clone: {' '.join(missing)}")
        shutil.rmtree(report, ignore_errors=True)
        shutil.rmtree(baselines, ignore_errors=True)
        if os.path.exists(summary):
            os.remove(summary)
        log_path = os.path.join(work, "..", f"{template}.log")
        with open(log_path, "w", encoding="utf-8") as log:
            def scenario(what, expect_code, expect_gate_step):
                started = time.monotonic()
                code, step, script = run_job(job, work, overrides, log)
                took = time.monotonic() - started
                print(f"{template}: {what}: exit {code}{f' in {step!r}' if step else ''} ({took:.1f} s)")
                if code != expect_code:
                    errors.append(f"{template}: {what}: expected exit {expect_code}, got {code} "
                                  f"(step {step!r}); see {os.path.abspath(log_path)}")
                elif expect_gate_step and "ci/gate.sh" not in script:
                    errors.append(f"{template}: {what}: the failing step {step!r} is not the gate")

            scenario("first run records the baselines", 0, False)
            for name in ("wordcount_tests.json", "wordcount_bench.json"):
                if not os.path.isfile(os.path.join(baselines, name)):
                    errors.append(f"{template}: the first run recorded no baselines/{name}")
            # The threaded test is judged in two parts: its entry knows what
            # its own thread made (docs/design.md, "A threaded test in two parts").
            tests_baseline = os.path.join(baselines, "wordcount_tests.json")
            if os.path.isfile(tests_baseline):
                with open(tests_baseline, encoding="utf-8") as f:
                    entry = json.load(f).get("tests", {}).get("CountWordsParallel.MatchesTheSerialCount", {})
                if "other_threads" in entry and "own_thread" not in entry:
                    errors.append(f"{template}: the threaded test's baseline entry has other_threads but no own_thread")
            if template == "github" and (not os.path.exists(summary) or os.path.getsize(summary) == 0):
                errors.append(f"{template}: the gate wrote nothing to $GITHUB_STEP_SUMMARY")
            # Twice: the threaded test's counts vary, and the spread the first
            # run learned must hold for more than one later run.
            scenario("unchanged re-run passes", 0, False)
            scenario("second unchanged re-run passes", 0, False)
            tests_report = os.path.join(report, "wordcount_tests.json")
            if "CountWordsParallel.MatchesTheSerialCount" not in open(tests_report, encoding="utf-8").read():
                errors.append(f"{template}: the threaded test is not in {tests_report}")
            with open(source_file, "w", encoding="utf-8") as f:
                f.write(original.replace(PLANT_FROM, PLANT_TO))
            try:
                scenario("planted regression fails the gate", 1, True)
            finally:
                with open(source_file, "w", encoding="utf-8") as f:
                    f.write(original)
            junit = os.path.join(report, "wordcount_tests.junit.xml")
            if not os.path.isfile(junit) or "<failure" not in open(junit, encoding="utf-8").read():
                errors.append(f"{template}: the regression left no JUnit <failure> in {junit}")
            if not os.path.isfile(os.path.join(report, "wordcount_tests.html")):
                errors.append(f"{template}: the regression left no HTML page in {report}")
    return errors


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["packages", "run"])
    parser.add_argument("--source", required=True, help="heapgate's source tree")
    parser.add_argument("--work", help="scratch directory (emptied)")
    parser.add_argument("--ccache", help="compiler cache directory kept between runs, unless $CCACHE_DIR is set")
    parser.add_argument("--template", nargs="+", choices=list(TEMPLATES), default=list(TEMPLATES))
    args = parser.parse_args()
    if args.what == "packages":
        errors = check_packages(args.source)
    else:
        if not args.work or not args.ccache:
            fail("run: --work and --ccache are required")
        errors = run_templates(args)
    for e in errors:
        print(f"heapgate: run_ci_templates.py: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
