// SPDX-License-Identifier: MIT
// RecordingChildren: starts the call-sites child and the spread child of a sharded baseline
// recording on background threads (std::async), each with its own RerunExplainer and timing.
#include "recording_children.h"

#include <utility>

namespace heapgate::harness {
namespace {

// Runs `run(explainer)` on a thread of its own, timed. The explainer lives
// on that thread: it removes its child's directory when done, after the
// report was read into the value returned. Neither child's path uses the
// symbolizer (the children name their stacks).
template <typename Run>
auto in_background(const Options& options, const std::string& binary_path, Symbolizer& symbolizer, Run run) {
  using Value = decltype(run(std::declval<RerunExplainer&>()));
  return std::async(std::launch::async, [&options, binary_path, &symbolizer, run = std::move(run)]() {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point started = Clock::now();
    RerunExplainer explainer(options, binary_path, symbolizer);
    explainer.use_own_temp_dirs();
    Value value = run(explainer);
    return RecordingChildren::Finished<Value>{std::move(value), Clock::now() - started};
  });
}

}  // namespace

RecordingChildren::RecordingChildren(const Options& options, const std::string& binary_path, Symbolizer& symbolizer,
                                     std::optional<ChildTests> sites, std::optional<SpreadRequest> spread,
                                     std::chrono::seconds budget)
    : spread_request_(std::move(spread)) {
  if (sites) {
    call_sites_ = in_background(options, binary_path, symbolizer, [tests = *sites, budget](RerunExplainer& e) {
      return e.call_sites(tests.selection, tests.keep_shard, budget);
    });
  }
  if (spread_request_) {
    spread_ = in_background(options, binary_path, symbolizer, [request = *spread_request_, budget](RerunExplainer& e) {
      return run_spread(e, request, budget);
    });
  }
}

std::optional<RecordingChildren::CallSites> RecordingChildren::call_sites() {
  if (!call_sites_.valid()) return std::nullopt;
  return call_sites_.get();
}

std::optional<RecordingChildren::Spread> RecordingChildren::spread() {
  if (!spread_.valid()) return std::nullopt;
  return spread_.get();
}

}  // namespace heapgate::harness
