// SPDX-License-Identifier: MIT
// Messages for rejected command lines: closest_match() (the likely typo's target) and
// usage_error_message() in heapgate's "what; fix: how" style.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace heapgate::runner {

/// The candidate closest to `typed` by edit distance (insertions, deletions,
/// substitutions and swaps of neighbours, each 1), if it is close enough to
/// be a typo: at most 1 edit for words up to 4 characters, 2 up to 8, 3
/// beyond; "" when none is. Ties go to the earlier candidate.
std::string closest_match(std::string_view typed, const std::vector<std::string>& candidates);

/// What to print for a command line CLI11 rejected, in heapgate's one error
/// style, "heapgate[ <verb>]: <what>; fix: <how>": a mistyped verb or option
/// gets "did you mean", anything else CLI11's own message and the verb's --help.
/// `argv` is the command line as given.
std::string usage_error_message(const CLI::App& app, const CLI::ParseError& error, int argc, const char* const* argv);

}  // namespace heapgate::runner
