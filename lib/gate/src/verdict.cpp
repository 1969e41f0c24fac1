// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "heapgate/verdict.h"

#include <string>

namespace heapgate {

std::string_view to_string(Verdict verdict) noexcept {
  switch (verdict) {
    case Verdict::pass:
      return "pass";
    case Verdict::regressed:
      return "regressed";
    case Verdict::improved:
      return "improved";
    case Verdict::leaked:
      return "leaked";
    case Verdict::over_budget:
      return "over_budget";
    case Verdict::new_test:
      return "new";
    case Verdict::missing:
      return "missing";
    case Verdict::unavailable:
      return "unavailable";
    case Verdict::skipped:
      return "skipped";
  }
  return "unavailable";
}

Result<Verdict> parse_verdict(std::string_view text) {
  for (Verdict v : kVerdicts) {
    if (text == to_string(v)) return v;
  }
  return fail(make_error(ErrorCode::parse_error, "verdict",
                         "unknown verdict \"" + std::string(text) +
                             "\"; expected one of pass, regressed, improved, leaked, over_budget, new, missing, "
                             "unavailable, skipped",
                         "write e.g. pass"));
}

bool is_failure(Verdict verdict, bool strict) noexcept {
  switch (verdict) {
    case Verdict::regressed:
    case Verdict::leaked:
    case Verdict::over_budget:
      return true;
    case Verdict::unavailable:
      return strict;
    case Verdict::pass:
    case Verdict::improved:
    case Verdict::new_test:
    case Verdict::missing:
    case Verdict::skipped:
      return false;
  }
  return false;
}

}  // namespace heapgate
