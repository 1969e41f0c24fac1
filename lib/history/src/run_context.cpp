// SPDX-License-Identifier: MIT
// detect_run_context() (heapgate/run_context.h): a run's commit, branch, time and job from flags,
// then CI variables (ci_context()), then git in the current directory, then defaults.
#include "heapgate/run_context.h"

#include <cstdlib>
#include <ctime>
#include <initializer_list>

#include "heapgate/sys.h"
#include "store_schema.h"

namespace heapgate {
namespace {

std::string first_set(const EnvLookup& env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (auto value = env(name)) return *value;
  }
  return {};
}

std::optional<std::string> git(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"git"};
  argv.insert(argv.end(), args.begin(), args.end());
  sys::ProcessOptions options;
  options.timeout = std::chrono::seconds(30);
  auto ran = sys::run_process(argv, options);
  if (!ran || ran->exit_code != 0) return std::nullopt;
  std::string out = ran->stdout_text;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (out.empty()) return std::nullopt;
  return out;
}

}  // namespace

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
  };
}

RunContext ci_context(const EnvLookup& env) {
  RunContext context;
  context.commit = first_set(env, {"GITHUB_SHA", "CI_COMMIT_SHA", "GIT_COMMIT", "BUILDKITE_COMMIT", "CIRCLE_SHA1"});
  context.branch = first_set(env, {"GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME", "BRANCH_NAME",
                                   "GIT_BRANCH", "BUILDKITE_BRANCH", "CIRCLE_BRANCH"});
  if (auto run = env("GITHUB_RUN_ID")) {
    auto job = env("GITHUB_JOB");
    context.job = job ? *run + "/" + *job : *run;
  } else {
    context.job = first_set(env, {"CI_JOB_ID", "BUILD_TAG", "BUILDKITE_JOB_ID", "CIRCLE_WORKFLOW_JOB_ID"});
  }
  return context;
}

std::optional<std::string> git_author_time(const std::string& commit) {
  // %at: seconds since the epoch, whatever the author's time zone.
  auto seconds = git({"show", "-s", "--format=%at", commit + "^{commit}", "--"});
  if (!seconds) return std::nullopt;
  const std::time_t t = static_cast<std::time_t>(std::strtoll(seconds->c_str(), nullptr, 10));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(text);
}

RunContext detect_run_context(const RunContext& given, const EnvLookup& env) {
  RunContext context = given;
  const RunContext ci = ci_context(env);
  if (context.commit.empty()) context.commit = ci.commit;
  if (context.branch.empty()) context.branch = ci.branch;
  if (context.job.empty()) context.job = ci.job;
  if (context.commit.empty()) context.commit = git({"rev-parse", "HEAD"}).value_or("");
  if (context.branch.empty()) {
    auto branch = git({"rev-parse", "--abbrev-ref", "HEAD"});
    if (branch && *branch != "HEAD") context.branch = *branch;
  }
  if (context.time.empty() && !context.commit.empty()) context.time = git_author_time(context.commit).value_or("");
  if (context.time.empty()) context.time = detail::now_utc();
  if (context.job.empty()) context.job = "local";
  return context;
}

}  // namespace heapgate
