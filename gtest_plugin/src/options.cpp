// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// --heapgate_* flags and their HEAPGATE_* environment twins.
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

#include "heapgate/gtest.h"

namespace heapgate::gtest {
namespace {

constexpr std::string_view kFlagPrefix = "--heapgate_";

Error bad_value(const std::string& where, std::string_view value, const std::string& expected) {
  return make_error(ErrorCode::invalid_argument, where, "bad value \"" + std::string(value) + "\"",
                    "expected " + expected);
}

Result<bool> parse_bool(const std::string& where, std::string_view value) {
  if (value.empty() || value == "1" || value == "true" || value == "yes") return true;
  if (value == "0" || value == "false" || value == "no") return false;
  return fail(bad_value(where, value, "true or false"));
}

Result<std::uint64_t> parse_count(const std::string& where, std::string_view value) {
  std::uint64_t n = 0;
  if (value.empty() || value.size() > 9) return fail(bad_value(where, value, "a count from 0 to 999999999"));
  for (char c : value) {
    if (c < '0' || c > '9') return fail(bad_value(where, value, "a count from 0 to 999999999"));
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return n;
}

using Apply = std::function<Result<void>(Options& options, const std::string& where, std::string_view value)>;

// One option: its name (flag "--heapgate_<name>", variable "HEAPGATE_<NAME>")
// and how to store a value. `where` names the flag or variable in errors.
struct OptionSpec {
  const char* name;
  bool is_switch;  // may be given without "=value"
  Apply apply;
};

Apply bool_field(bool Options::*field) {
  return [field](Options& o, const std::string& where, std::string_view v) -> Result<void> {
    auto b = parse_bool(where, v);
    if (!b) return fail(b.error());
    o.*field = *b;
    return {};
  };
}

Apply string_field(std::string Options::*field) {
  return [field](Options& o, const std::string&, std::string_view v) -> Result<void> {
    o.*field = std::string(v);
    return {};
  };
}

const std::vector<OptionSpec>& option_specs() {
  static const std::vector<OptionSpec> specs = {
      {"mode", false,
       [](Options& o, const std::string& where, std::string_view v) -> Result<void> {
         auto mode = parse_mode(v);
         if (!mode) return fail(bad_value(where, v, "one of off, counters, exact, sampled"));
         o.mode = *mode;
         return {};
       }},
      {"baselines", false, string_field(&Options::baselines_dir)},
      {"report", false, string_field(&Options::report_dir)},
      {"update_baselines", true, bool_field(&Options::update_baselines)},
      {"strict", true, bool_field(&Options::strict)},
      {"suppressions", false, string_field(&Options::suppressions_path)},
      {"check_leaks", true, bool_field(&Options::check_leaks)},
      {"explain", true, bool_field(&Options::explain)},
      {"top_stacks", false,
       [](Options& o, const std::string& where, std::string_view v) -> Result<void> {
         auto n = parse_count(where, v);
         if (!n) return fail(n.error());
         o.top_stacks = static_cast<std::size_t>(*n);
         return {};
       }},
      {"internal_child", false,
       [](Options& o, const std::string& where, std::string_view v) -> Result<void> {
         auto n = parse_count(where, v);
         if (!n || *n == 0 || *n > 100) return fail(bad_value(where, v, "a gtest iteration from 1 to 100"));
         o.child_iteration = static_cast<int>(*n);
         return {};
       }},
  };
  return specs;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return out;
}

std::string known_flags() {
  std::string out;
  for (const auto& spec : option_specs()) {
    if (std::string_view(spec.name).substr(0, 9) == "internal_") continue;
    out += (out.empty() ? "" : ", ") + std::string(kFlagPrefix) + spec.name;
  }
  return out;
}

}  // namespace

Result<Options> parse_options(int* argc, char** argv) {
  Options options;
  // The environment first, so flags override it.
  for (const auto& spec : option_specs()) {
    const std::string variable = "HEAPGATE_" + upper(spec.name);
    if (const char* value = std::getenv(variable.c_str()); value != nullptr) {
      if (auto applied = spec.apply(options, variable, value); !applied) return fail(applied.error());
    }
  }
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.substr(0, kFlagPrefix.size()) != kFlagPrefix) {
      argv[kept++] = argv[i];
      continue;
    }
    std::string_view body = arg.substr(kFlagPrefix.size());
    std::size_t eq = body.find('=');
    std::string_view name = body.substr(0, eq);
    const OptionSpec* found = nullptr;
    for (const auto& spec : option_specs()) {
      if (name == spec.name) found = &spec;
    }
    const std::string where = std::string(kFlagPrefix) + std::string(name);
    if (found == nullptr) {
      return fail(make_error(ErrorCode::invalid_argument, std::string(arg), "unknown heapgate flag",
                             "use one of " + known_flags()));
    }
    if (eq == std::string_view::npos && !found->is_switch) {
      return fail(make_error(ErrorCode::invalid_argument, where, "missing value",
                             "write " + where + "=VALUE"));
    }
    std::string_view value = eq == std::string_view::npos ? std::string_view() : body.substr(eq + 1);
    if (auto applied = found->apply(options, where, value); !applied) return fail(applied.error());
  }
  argv[kept] = nullptr;
  *argc = kept;
  return options;
}

}  // namespace heapgate::gtest
