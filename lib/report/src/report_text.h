// SPDX-License-Identifier: MIT
// Private: text pieces shared by the JUnit and Markdown reporters.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "heapgate/report.h"

namespace heapgate::detail {

/// The first line of `text` (without the line break).
std::string first_line(std::string_view text);

/// The key facts behind a record's verdict, one phrase each: the deltas
/// beyond tolerance (regressed/improved), the leak (leaked), the budgets
/// exceeded (over_budget). Empty when there are none to show.
std::vector<std::string> key_facts(const TestRecord& record);

/// The band a noisy test was judged within and where this run fell, for
/// each metric whose recorded runs spread: "allocations 2140–2190 over 5
/// runs; this run 2170", joined by " · ". "" when the record has no band
/// or its runs agreed in every metric.
std::string noise_band_text(const TestRecord& record);

/// What a threaded test judged in parts was gated how: "own thread 170
/// allocations, exact (recorded 170, limit 172) · other threads 270
/// allocations, banded (recorded 230–250, limit 277)", with " (grew)" after
/// a part beyond its limit. "" when the record was not judged in parts.
std::string thread_parts_text(const TestRecord& record);

/// "+3 live objects, +96 live bytes, +3 allocations, +96 allocated bytes":
/// the non-zero changes of a stack. Whole numbers without decimals.
std::string describe_stack_counts(const StackSample& stack);

/// Test records in the order reports list problems: failures first
/// (regressed, leaked, over_budget, unavailable), then missing, improved,
/// new; pass last. Stable within a verdict.
int verdict_rank(Verdict verdict) noexcept;

}  // namespace heapgate::detail
