// SPDX-License-Identifier: MIT
// Verdict names and parse_verdict() (heapgate/verdict.h), and is_failure(): regressed, leaked and
// over_budget fail a gate, unavailable only in strict mode.
#include "heapgate/verdict.h"

#include <string>

namespace heapgate {

// A value no word names is shown as what it is treated as: nothing measured.
std::string_view to_string(Verdict verdict) noexcept { return word_of(kVerdictWords, verdict, "unavailable"); }

Result<Verdict> parse_verdict(std::string_view text) {
  return parse_word(kVerdictWords, text, "verdict", "verdict", "pass");
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
