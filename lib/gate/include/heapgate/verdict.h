// SPDX-License-Identifier: MIT
// Verdict, the outcome of gating one test (pass, regressed, leaked, over_budget, ...): its JSON
// names (kVerdictWords), parse_verdict(), and is_failure().
#pragma once

#include <array>
#include <string_view>

#include "heapgate/error.h"
#include "heapgate/vocabulary.h"

namespace heapgate {

/// The outcome of gating one test. Closed list, spelled as in JSON and
/// Markdown (`new_test` is written "new", since `new` is a C++ keyword):
/// - `pass`: measured, and every metric within tolerance of the baseline.
/// - `regressed`: some metric grew beyond its tolerance. A failure.
/// - `improved`: some metric shrank beyond its tolerance and none grew beyond
///   it; reported so the baseline can be ratcheted down. Not a failure.
/// - `leaked`: allocations made by the test were still live at its end and
///   leaks are checked. A failure.
/// - `over_budget`: a `HEAPGATE_LIMIT_*` budget in the test was exceeded. A failure.
/// - `new_test` ("new"): measured, but the baseline has no entry for the test.
/// - `missing`: the baseline has an entry, but the test did not run.
/// - `unavailable`: nothing could be measured (no jemalloc, no profiling); a
///   failure only in strict mode.
/// - `skipped`: the test skipped itself (GTEST_SKIP()); nothing was measured
///   or judged, its baseline entry is kept as it was. Not a failure.
enum class Verdict { pass, regressed, improved, leaked, over_budget, new_test, missing, unavailable, skipped };

/// Every Verdict with its name, in declaration order.
inline constexpr Vocabulary<Verdict, 9> kVerdictWords = {{
    {Verdict::pass, "pass"},
    {Verdict::regressed, "regressed"},
    {Verdict::improved, "improved"},
    {Verdict::leaked, "leaked"},
    {Verdict::over_budget, "over_budget"},
    {Verdict::new_test, "new"},
    {Verdict::missing, "missing"},
    {Verdict::unavailable, "unavailable"},
    {Verdict::skipped, "skipped"},
}};

/// Every Verdict, in declaration order.
inline constexpr std::array<Verdict, 9> kVerdicts = values_of(kVerdictWords);

/// The verdict's name as written in JSON ("over_budget"; "new" for new_test).
std::string_view to_string(Verdict verdict) noexcept;
/// Parses a verdict name. Errors: `invalid_argument` naming the value and
/// listing the valid names.
Result<Verdict> parse_verdict(std::string_view text);

/// True for the verdicts that fail a gate: regressed, leaked, over_budget,
/// and unavailable when `strict` (nothing measured must not pass silently).
bool is_failure(Verdict verdict, bool strict = false) noexcept;

}  // namespace heapgate
