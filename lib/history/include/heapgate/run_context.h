// SPDX-License-Identifier: MIT
// Where a run happened (commit, branch, time, CI job), from the usual CI
// variables and git, for `heapgate history add`.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "heapgate/history.h"

namespace heapgate {

/// Reads an environment variable: its value, or nullopt when unset or empty.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

/// The process' environment (getenv).
EnvLookup process_environment();

/// The context the CI variables give; fields they do not give stay empty.
/// Looked up in this order, the first set wins per field:
/// - GitHub Actions: GITHUB_SHA, GITHUB_HEAD_REF (pull requests) or
///   GITHUB_REF_NAME, GITHUB_RUN_ID (with GITHUB_JOB: "RUN_ID/JOB");
/// - GitLab CI: CI_COMMIT_SHA, CI_COMMIT_REF_NAME, CI_JOB_ID;
/// - Jenkins: GIT_COMMIT, BRANCH_NAME or GIT_BRANCH, BUILD_TAG;
/// - Buildkite: BUILDKITE_COMMIT, BUILDKITE_BRANCH, BUILDKITE_JOB_ID;
/// - CircleCI: CIRCLE_SHA1, CIRCLE_BRANCH, CIRCLE_WORKFLOW_JOB_ID.
/// Pure apart from `env`.
RunContext ci_context(const EnvLookup& env);

/// The context of a run: `given` (the flags --commit --branch --time --job)
/// first, then ci_context(), then git in the current directory (HEAD, its
/// branch, its author time), then now for the time and "local" for the job.
/// A commit that git knows gets its author time, so points sort by commits.
/// Never fails: a field nothing gives stays empty (the commit) or defaults.
RunContext detect_run_context(const RunContext& given, const EnvLookup& env);

/// The author time of `commit` in the git repository of the current
/// directory, ISO-8601 UTC, or nullopt when git does not know it.
std::optional<std::string> git_author_time(const std::string& commit);

}  // namespace heapgate
