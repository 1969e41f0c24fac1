// SPDX-License-Identifier: MIT
// usage_error_message(): a command line CLI11 rejected, as "heapgate <verb>: ...; fix: ...", with
// "did you mean" from closest_match() by edit distance for a mistyped verb or option.
#include "usage_errors.h"

#include <algorithm>
#include <cstddef>

namespace heapgate::runner {
namespace {

// Optimal string alignment distance: Levenshtein plus adjacent swaps ("rnu").
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

// "--baselines" and "-j" of every option a verb has.
std::vector<std::string> option_names(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    for (const std::string& name : option->get_snames()) names.push_back("-" + name);
  }
  return names;
}

// CLI11's message starts with a capital and may end in a newline.
std::string tidy(std::string what) {
  while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
  if (!what.empty() && what.front() >= 'A' && what.front() <= 'Z')
    what.front() = static_cast<char>(what.front() - 'A' + 'a');
  return what;
}

}  // namespace

std::string closest_match(std::string_view typed, const std::vector<std::string>& candidates) {
  const std::size_t allowed = typed.size() <= 4 ? 1 : typed.size() <= 8 ? 2 : 3;
  std::string best;
  std::size_t best_distance = allowed + 1;
  for (const std::string& candidate : candidates) {
    const std::size_t distance = edit_distance(typed, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

std::string usage_error_message(const CLI::App& app, const CLI::ParseError& error, int argc, const char* const* argv) {
  std::vector<std::string> verbs;
  for (const CLI::App* sub : app.get_subcommands({})) verbs.push_back(sub->get_name());
  const std::vector<CLI::App*> chosen = app.get_subcommands();

  if (chosen.empty()) {
    // The first word that is not an option is the verb the user meant.
    for (int i = 1; i < argc; ++i) {
      const std::string word = argv[i];
      if (word.empty() || word[0] == '-') continue;
      const std::string near = closest_match(word, verbs);
      return "heapgate: unknown command \"" + word +
             "\"; fix: " + (near.empty() ? "use one of " + joined(verbs) : "did you mean `heapgate " + near + "`?") +
             " (heapgate --help lists them)";
    }
    return "heapgate: " + tidy(error.what()) + "; fix: name a command: " + joined(verbs) + " (heapgate --help)";
  }

  const CLI::App& command = *chosen.front();
  const std::string verb = command.get_name();
  // CLI11 checks required arguments before unknown ones, so a mistyped flag
  // can surface as "base is required": look for it in both cases.
  const bool maybe_unknown_option = dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr ||
                                    dynamic_cast<const CLI::RequiredError*>(&error) != nullptr;
  for (const std::string& extra : maybe_unknown_option ? command.remaining() : std::vector<std::string>{}) {
    if (extra == "--") break;  // the rest is the test binary's command line
    if (extra.size() < 2 || extra[0] != '-') continue;
    const std::string flag = extra.substr(0, extra.find('='));
    const std::string near = closest_match(flag, option_names(command));
    return "heapgate " + verb + ": unknown option " + flag +
           "; fix: " + (near.empty() ? std::string("see") : "did you mean " + near + "? See") + " heapgate " + verb +
           " --help";
  }
  return "heapgate " + verb + ": " + tidy(error.what()) + "; fix: see heapgate " + verb + " --help";
}

}  // namespace heapgate::runner
