// SPDX-License-Identifier: MIT
// What the GoogleTest plugin and the Google Benchmark runtime share at
// start-up: `--heapgate_<name>` flags with their `HEAPGATE_<NAME>`
// environment twins, and whether a restart with MALLOC_CONF fixes a mode.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "heapgate/allocator.h"
#include "heapgate/error.h"

namespace heapgate::detail {

/// One flag. `apply` stores a value; `where` names the flag or variable in
/// errors. A switch may be given without "=value" (it then gets "").
struct FlagSpec {
  std::string_view name;
  bool is_switch = false;
  std::function<Result<void>(const std::string& where, std::string_view value)> apply;
};

/// Applies the environment, then the flags (so flags win), and removes the
/// `--heapgate_` flags from argv. Errors: `invalid_argument` for an unknown
/// flag (listing the known ones, except `internal_*`), a missing value or
/// whatever `apply` refuses.
Result<void> parse_heapgate_flags(int* argc, char** argv, const std::vector<FlagSpec>& specs);

/// `invalid_argument` at `where`: bad value, expected `expected`.
Error bad_flag_value(const std::string& where, std::string_view value, const std::string& expected);

/// "", 1, true, yes / 0, false, no.
Result<bool> parse_flag_bool(const std::string& where, std::string_view value);

/// A decimal count up to 999999999.
Result<std::uint64_t> parse_flag_count(const std::string& where, std::string_view value);

/// True when `mode` (exact or sampled) is unusable only because of how
/// jemalloc was started: restarting with its MALLOC_CONF would fix it.
bool fixable_by_restart(Mode mode);

/// When `mode` needs jemalloc settings this process did not start with
/// (fixable_by_restart), re-executes `argv` once with MALLOC_CONF extended for
/// it (jemalloc reads its settings only at start-up); returns only if that is
/// not needed or failed, after saying why on stderr. A marker in the
/// environment makes sure it happens at most once.
void restart_once_for(Mode mode, const std::vector<std::string>& argv);

}  // namespace heapgate::detail
