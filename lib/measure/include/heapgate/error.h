// SPDX-License-Identifier: MIT
// heapgate's error type: ErrorCode, Error (where, what, fix; message()), make_error(), and
// Result<T> with fail(); no exception crosses the public API.
#pragma once

#include <string>
#include <string_view>

#include <tl/expected.hpp>

namespace heapgate {

/// What kind of expected failure an Error is. Closed list:
/// - `invalid_argument`: a caller passed a value the API does not accept.
/// - `parse_error`: input text (a profile, a baseline, a flag value) is malformed,
///   including a name outside its closed list (parse_mode, parse_verdict,
///   parse_profile_metric, parse_metric_name, parse_jeprof_format: each is
///   parse_word() of heapgate/vocabulary.h, and answers with this one code).
/// - `io_error`: a file could not be opened, read, written or renamed.
/// - `unavailable`: jemalloc, profiling, or an external program is missing.
/// - `conflict`: the request clashes with the current state (profiling already
///   active, a scope finished twice, profiling started through MALLOC_CONF).
/// - `external_tool`: a spawned program (jeprof, dot) failed.
/// - `internal`: a mallctl call failed in a way that should not happen.
enum class ErrorCode { invalid_argument, parse_error, io_error, unavailable, conflict, external_tool, internal };

/// The snake_case name of `code`, as written in reports.
std::string_view to_string(ErrorCode code) noexcept;

/// An expected failure: what went wrong, where, and what to do about it.
///
/// Printed by `message()` as `where: what; fix: fix`, e.g.
/// `profile.heap:12: expected "t*:" line after "@" stack; fix: ...`.
struct Error {
  ErrorCode code = ErrorCode::internal;
  /// Where: `path:line`, a JSON pointer, a mallctl name or a flag. May be empty.
  std::string where;
  /// What was found and what was expected.
  std::string what;
  /// One hint on how to fix it. May be empty.
  std::string fix;

  /// The one-line rendering described above.
  std::string message() const;
};

/// Builds an Error; `where` and `fix` may be empty.
Error make_error(ErrorCode code, std::string where, std::string what, std::string fix = {});

/// The result of an operation that can fail in an expected way. No exception
/// crosses heapgate's public API; failures come back as an Error.
template <typename T>
using Result = tl::expected<T, Error>;

/// Shorthand for the failing side of a Result: `return fail(make_error(...));`.
inline tl::unexpected<Error> fail(Error e) { return tl::unexpected<Error>(std::move(e)); }

}  // namespace heapgate
