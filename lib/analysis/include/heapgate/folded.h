// SPDX-License-Identifier: MIT
// Folded stack text (`root;caller;leaf VALUE`, one stack a line): FoldedStack, parse_folded(),
// write_folded(), and folded_stacks()/render_folded() of a normalized profile or a diff.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "heapgate/diff.h"
#include "heapgate/error.h"
#include "heapgate/normalize.h"

namespace heapgate {

/// Brendan Gregg's folded stack format, read and written in one place: the
/// input of flamegraph.pl, speedscope and inferno, and of heapgate's own flame
/// graphs (heapgate/flamegraph.h). One stack per line, `root;caller;leaf VALUE`.

/// One line of folded text: a call stack and the value recorded for it.
struct FoldedStack {
  /// Frame names, outermost (root) first, as in folded text.
  std::vector<std::string> frames;
  /// Bytes or objects; negative in a diff when the stack shrank.
  double value = 0;
};

/// Field-by-field equality (the value compares exactly).
bool operator==(const FoldedStack& a, const FoldedStack& b) noexcept;
bool operator!=(const FoldedStack& a, const FoldedStack& b) noexcept;

/// Parses folded text. VALUE follows the last run of spaces or tabs and is a
/// decimal number, optionally signed, with optional fraction and exponent
/// (`123`, `-4096`, `2.5`, `1e3`); frames are split at ';' and kept verbatim
/// (they may contain spaces: `f(int, char)`). Blank lines are skipped; a
/// trailing '\r' is ignored; repeated stacks are kept as separate entries (the
/// flame graph sums them). The two-column form of difffolded.pl (`stack OLD NEW`)
/// is not recognised: its first number would become part of the leaf frame.
/// Errors: `parse_error` at `source:LINE` naming what was found and what was
/// expected (a missing value, a value that is not a finite number, an empty
/// stack, an empty frame). Pure.
Result<std::vector<FoldedStack>> parse_folded(std::string_view text, std::string_view source);

/// Writes folded text, one line per stack in the given order: VALUE rounded
/// to an integer (what flamegraph.pl expects), lines whose value rounds to 0
/// left out. In frame names ';' becomes ':' and line breaks become spaces,
/// the leaf's trailing spaces and tabs are dropped (a reader takes them for
/// the separator before VALUE) and a frame left empty is written "?", so
/// every line parses back, and writing what was parsed gives the same text. Pure.
std::string write_folded(const std::vector<FoldedStack>& stacks);

/// The stacks of one profile: `metric` of each stack's scaled counts (not
/// rounded), frames reversed to root first, in the profile's (key) order;
/// stacks whose value is 0 are left out. Pure.
std::vector<FoldedStack> folded_stacks(const NormalizedProfile& profile, ProfileMetric metric);

/// The stacks of a diff: the delta of `metric` per entry (negative where the
/// stack shrank), in `entries` order; zero deltas are left out. Pure.
std::vector<FoldedStack> folded_stacks(const ProfileDiff& diff, ProfileMetric metric);

/// write_folded(folded_stacks(...)): the text `heapgate diff --format=folded`,
/// the benchmark's `.folded` files and the HTTP endpoint serve.
std::string render_folded(const ProfileDiff& diff, ProfileMetric metric);
std::string render_folded(const NormalizedProfile& profile, ProfileMetric metric);

}  // namespace heapgate
