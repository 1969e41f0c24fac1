// SPDX-License-Identifier: MIT
// parsed_by(): a CLI11 validator that accepts what a heapgate parse_* function accepts and
// rejects the rest with its message, so flags and files share one vocabulary.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace heapgate::runner {

/// A CLI11 check that accepts what `parse` (parse_mode, parse_profile_metric, …)
/// accepts and rejects the rest with the parser's own message, so a flag
/// and a file spell a vocabulary the same way and list it from one place.
template <typename Parse>
CLI::Validator parsed_by(Parse parse, std::string name) {
  return CLI::Validator(
      [parse](std::string& value) -> std::string {
        auto parsed = parse(value);
        return parsed ? std::string() : parsed.error().what;
      },
      std::move(name));
}

}  // namespace heapgate::runner
