// SPDX-License-Identifier: MIT
// The `--heapgate_<name>` flags parser (heapgate/flags.h) with a table of the
// kinds the GoogleTest plugin and the benchmark runtime declare (mode, text,
// switch, count, size, enum). The input is the command line, one argument
// per line (or NUL). Properties: no crash; on success exactly the arguments that are
// not heapgate flags are left, in order, and argv stays null-terminated.
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "heapgate/allocator.h"
#include "heapgate/fingerprint.h"
#include "heapgate/flags.h"
#include "heapgate/metrics.h"

namespace {

using heapgate::Result;
using heapgate::detail::FlagSpec;

std::vector<FlagSpec> specs() {
  auto check = [](auto parsed) -> Result<void> {
    if (!parsed) return heapgate::fail(parsed.error());
    return {};
  };
  auto as_error = [](const std::string& where, std::string_view value, bool ok) -> Result<void> {
    if (ok) return {};
    return heapgate::fail(heapgate::detail::bad_flag_value(where, value, "a valid value"));
  };
  return {
      {"mode", false,
       [as_error](const std::string& where, std::string_view v) {
         return as_error(where, v, heapgate::parse_mode(v).has_value());
       }},
      {"baselines", false, [](const std::string&, std::string_view) -> Result<void> { return {}; }},
      {"strict", true,
       [check](const std::string& where, std::string_view v) {
         return check(heapgate::detail::parse_flag_bool(where, v));
       }},
      {"top_stacks", false,
       [check](const std::string& where, std::string_view v) {
         return check(heapgate::detail::parse_flag_count(where, v));
       }},
      {"fingerprint", false,
       [as_error](const std::string& where, std::string_view v) {
         return as_error(where, v, heapgate::parse_fingerprint_check(v).has_value());
       }},
      {"limit", false,
       [as_error](const std::string& where, std::string_view v) {
         return as_error(where, v, heapgate::parse_size(v).has_value());
       }},
      {"metric", false,
       [as_error](const std::string& where, std::string_view v) {
         return as_error(where, v, heapgate::parse_metric_name(v).has_value());
       }},
      {"internal_growth", false,
       [check](const std::string& where, std::string_view v) {
         return check(heapgate::detail::parse_flag_count(where, v));
       }},
  };
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<FlagSpec> table = specs();
  const std::string_view text = heapgate::fuzz::text_of(data, size);
  std::vector<std::string> args = {"fuzz_binary"};
  // A C string ends at NUL: it separates arguments too.
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t end = text.find_first_of(std::string_view("\n\0", 2), start);
    if (end == std::string_view::npos) end = text.size();
    args.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  std::vector<std::string> expected_rest;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i].rfind("--heapgate_", 0) != 0) expected_rest.push_back(args[i]);
  }
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  auto parsed = heapgate::detail::parse_heapgate_flags(&argc, argv.data(), table);
  if (!parsed) {
    HEAPGATE_FUZZ_CHECK(!parsed.error().message().empty());
    return 0;
  }
  HEAPGATE_FUZZ_CHECK(argc == static_cast<int>(expected_rest.size()) + 1);
  HEAPGATE_FUZZ_CHECK(argv[static_cast<std::size_t>(argc)] == nullptr);
  for (int i = 1; i < argc; ++i)
    HEAPGATE_FUZZ_CHECK(expected_rest[static_cast<std::size_t>(i - 1)] == argv[static_cast<std::size_t>(i)]);
  return 0;
}
