// SPDX-License-Identifier: MIT
// --heapgate_* flags and their HEAPGATE_* environment twins.
#include <string>
#include <string_view>
#include <vector>

#include "heapgate/harness.h"
#include "heapgate/flags.h"

namespace heapgate::harness {

using detail::bad_flag_value;
using detail::FlagSpec;

Result<Options> parse_options(int* argc, char** argv) {
  Options o;
  auto boolean = [&o](bool Options::*field) {
    return [&o, field](const std::string& where, std::string_view v) -> Result<void> {
      auto b = detail::parse_flag_bool(where, v);
      if (!b) return fail(b.error());
      o.*field = *b;
      return {};
    };
  };
  auto text = [&o](std::string Options::*field) {
    return [&o, field](const std::string&, std::string_view v) -> Result<void> {
      o.*field = std::string(v);
      return {};
    };
  };
  const std::vector<FlagSpec> specs = {
      {"mode", false,
       [&o](const std::string& where, std::string_view v) -> Result<void> {
         auto mode = parse_mode(v);
         if (!mode) return fail(bad_flag_value(where, v, "one of " + list_words(kModeWords)));
         o.mode = *mode;
         return {};
       }},
      {"baselines", false, text(&Options::baselines_dir)},
      {"report", false, text(&Options::report_dir)},
      {"profiles", false, text(&Options::profiles_dir)},
      {"update_baselines", true, boolean(&Options::update_baselines)},
      {"strict", true, boolean(&Options::strict)},
      {"suppressions", false, text(&Options::suppressions_path)},
      {"libc_suppressions", true, boolean(&Options::libc_suppressions)},
      {"check_leaks", true, boolean(&Options::check_leaks)},
      {"fingerprint", false,
       [&o](const std::string& where, std::string_view v) -> Result<void> {
         auto check = parse_fingerprint_check(v);
         if (!check) return fail(bad_flag_value(where, v, "one of " + list_words(kFingerprintCheckWords)));
         o.fingerprint = *check;
         return {};
       }},
      {"explain", true, boolean(&Options::explain)},
      {"gate_call_sites", false, text(&Options::gate_call_sites)},
      {"top_stacks", false,
       [&o](const std::string& where, std::string_view v) -> Result<void> {
         auto n = detail::parse_flag_count(where, v);
         if (!n) return fail(n.error());
         o.top_stacks = static_cast<std::size_t>(*n);
         return {};
       }},
      {"leak_repetitions", false,
       [&o](const std::string& where, std::string_view v) -> Result<void> {
         auto n = detail::parse_flag_count(where, v);
         if (!n || *n == 0 || *n > 20) return fail(bad_flag_value(where, v, "a number of runs from 1 to 20"));
         o.leak_repetitions = static_cast<int>(*n);
         return {};
       }},
      {"confirm_runs", false,
       [&o](const std::string& where, std::string_view v) -> Result<void> {
         auto n = detail::parse_flag_count(where, v);
         if (!n || *n > 5) return fail(bad_flag_value(where, v, "a number of runs from 0 to 5"));
         o.confirm_runs = static_cast<int>(*n);
         return {};
       }},
      {"test_timeout", false,
       [&o](const std::string& where, std::string_view v) -> Result<void> {
         auto n = detail::parse_flag_count(where, v);
         if (!n || *n > 7 * 24 * 3600) return fail(bad_flag_value(where, v, "a number of seconds, 0 for no limit"));
         o.test_timeout_seconds = static_cast<int>(*n);
         return {};
       }},
      {"measure_alone", true, boolean(&Options::measure_alone)},
      {"measure_alone_skip", false, text(&Options::measure_alone_skip)},
      {"learn_spread", true, boolean(&Options::learn_spread)},
      {"internal_growth", false,
       [&o](const std::string& where, std::string_view v) -> Result<void> {
         auto n = detail::parse_flag_count(where, v);
         if (!n || *n == 0 || *n > 100) return fail(bad_flag_value(where, v, "a number of runs from 1 to 100"));
         o.growth_child = static_cast<int>(*n);
         return {};
       }},
      {"internal_samples", false,
       [&o](const std::string& where, std::string_view v) -> Result<void> {
         auto n = detail::parse_flag_count(where, v);
         if (!n || *n == 0 || *n > 100) return fail(bad_flag_value(where, v, "a number of runs from 1 to 100"));
         o.sample_runs = static_cast<int>(*n);
         return {};
       }},
      {"internal_runs", false,
       [&o](const std::string& where, std::string_view v) -> Result<void> {
         auto n = detail::parse_flag_count(where, v);
         if (!n || *n == 0 || *n > 100) return fail(bad_flag_value(where, v, "a number of runs from 1 to 100"));
         o.suite_runs = static_cast<int>(*n);
         return {};
       }},
      {"internal_call_sites", false,
       [&o](const std::string& where, std::string_view v) -> Result<void> {
         if (v != "1") return fail(bad_flag_value(where, v, "1"));
         o.call_sites_only = true;
         return {};
       }},
      {"internal_child", false,
       [&o](const std::string& where, std::string_view v) -> Result<void> {
         auto n = detail::parse_flag_count(where, v);
         if (!n || *n == 0 || *n > 100) return fail(bad_flag_value(where, v, "a run of the suite from 1 to 100"));
         o.child_iteration = static_cast<int>(*n);
         return {};
       }},
  };
  if (auto parsed = detail::parse_heapgate_flags(argc, argv, specs); !parsed) return fail(parsed.error());
  return o;
}

}  // namespace heapgate::harness
