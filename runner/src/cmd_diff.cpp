// SPDX-License-Identifier: MIT
// `heapgate diff`: the local leak hunt. heapgate's own symbolic diff works
// across processes; --format jeprof runs `jeprof --base` on the base profile
// rebased onto the current one's address-space layout; --format svg draws a
// differential flame graph with heapgate's own renderer (no Perl needed);
// --format pprof writes the deltas as a gzipped pprof profile.
#include <cstddef>
#include <memory>
#include <string>

#include "heapgate/diff.h"
#include "heapgate/diff_files.h"
#include "heapgate/folded.h"
#include "heapgate/flags.h"
#include "heapgate/flamegraph.h"
#include "heapgate/jeprof.h"
#include "heapgate/normalize.h"
#include "heapgate/pprof.h"
#include "heapgate/profile.h"
#include "heapgate/rebase.h"
#include "heapgate/symbolizer.h"
#include "heapgate/symbols_sidecar.h"
#include <CLI/CLI.hpp>

#include "commands.h"
#include "output.h"
#include "vocabulary_check.h"

namespace heapgate::runner {
namespace {

struct DiffOptions {
  std::string base;
  std::string current;
  std::string format = "text";
  std::string metric = "live_bytes";
  std::string binary;
  std::size_t max_stacks = 20;
  std::string output;
};

int run_diff(const DiffOptions& options) {
  if (options.format == "jeprof") {
    if (options.binary.empty()) {
      return bad_input(make_error(ErrorCode::invalid_argument, "--format jeprof", "jeprof needs the profiled program",
                                  "add --binary PATH"));
    }
    JeprofOptions jeprof;
    jeprof.binary = options.binary;
    jeprof.profile = options.current;
    jeprof.base = options.base;
    jeprof.format = JeprofFormat::text;
    auto text = run_jeprof_rebased(jeprof);
    if (!text) return bad_input(text.error());
    auto written = emit(options.output, *text);
    return written ? exit_status(GateExit::ok) : bad_input(written.error());
  }
  if (options.format == "pprof") {
    // Checked before the profiles are read: a build without protobuf says so
    // at once. Binary: never to a terminal.
    if (!pprof_supported()) return bad_input(to_pprof(ProfileDiff{}).error());
    if (options.output.empty()) {
      return bad_input(make_error(ErrorCode::invalid_argument, "--format pprof",
                                  "pprof output is a gzipped binary file", "add -o FILE.pb.gz"));
    }
  }
  // Both profiles reduced to interned stack keys as they are read, and only
  // the stacks that changed spelled out (diff_files.h): peak memory stays
  // under twice the two files' size.
  Symbolizer symbols;
  auto diffed = diff_profile_files(options.base, options.current, symbols);
  if (!diffed) return bad_input(diffed.error());
  const ProfileDiff& diff = *diffed;
  std::string text;
  if (options.format == "pprof") {
    auto bytes = to_pprof(diff, "heapgate diff: " + options.base + " -> " + options.current);
    if (!bytes) return bad_input(bytes.error());
    text = std::move(*bytes);
  } else if (options.format == "text") {
    text = render_diff_text(diff, options.max_stacks);
  } else {
    auto metric = parse_profile_metric(options.metric);
    if (!metric) return bad_input(metric.error());
    if (options.format == "svg") {
      FlamegraphOptions svg;
      svg.title = "heapgate diff: " + std::string(to_string(*metric));
      svg.subtitle = options.base + " \xE2\x86\x92 " + options.current;
      svg.unit = std::string(flame_unit(*metric));
      svg.differential = true;
      text = render_flamegraph_svg(folded_stacks(diff, *metric), svg);
    } else {
      text = render_folded(diff, *metric);
    }
  }
  auto written = emit(options.output, text);
  return written ? exit_status(GateExit::ok) : bad_input(written.error());
}

}  // namespace

void add_diff_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<DiffOptions>();
  CLI::App* diff = app.add_subcommand(
      "diff", "Compare two heap profiles (heap_v2) by symbolic call stack; works across processes of one build.");
  diff->add_option("base", options->base, "The earlier profile")->required()->check(CLI::ExistingFile);
  diff->add_option("current", options->current, "The later profile")->required()->check(CLI::ExistingFile);
  diff->add_option("--format", options->format,
                   "text (per-stack deltas), folded (flame-graph input), svg (differential flame graph), jeprof, or "
                   "pprof (the deltas as a gzipped pprof profile; needs -o)")
      ->check(CLI::IsMember({"text", "folded", "svg", "jeprof", "pprof"}))
      ->capture_default_str();
  diff->add_option("--metric", options->metric, "What folded and svg output count")
      ->check(parsed_by(parse_profile_metric, "METRIC"))
      ->capture_default_str();
  diff->add_option("--binary", options->binary, "The profiled program (for --format jeprof)")->check(CLI::ExistingFile);
  // CLI11 converts "-3" into a huge std::size_t, and a 20-digit number into
  // whatever overflows, without complaint (and its NonNegativeNumber check
  // names DBL_MAX in full): a count is checked here, as the plugin's flags are.
  diff->add_option("--max-stacks", options->max_stacks, "Stacks shown in text output")
      ->check(CLI::Validator(
          [](std::string& value) {
            return heapgate::detail::parse_flag_count("--max-stacks", value)
                       ? std::string()
                       : "a number of stacks from 0 to 999999999, got " + value;
          },
          "COUNT"))
      ->capture_default_str();
  diff->add_option("-o,--output", options->output, "Write to FILE (atomically) instead of stdout");
  diff->callback([options, &exit_code] { exit_code = run_diff(*options); });
}

}  // namespace heapgate::runner
