// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "recording_children.h"

#include <utility>

namespace heapgate::gtest {

RecordingChildren::RecordingChildren(const Options& options, const std::string& binary_path, Symbolizer& symbolizer,
                                     std::optional<std::string> sites_filter, std::optional<SpreadRequest> spread,
                                     std::chrono::seconds budget)
    : spread_request_(std::move(spread)) {
  using Clock = std::chrono::steady_clock;
  // Each child's explainer lives on its thread: it removes the child's
  // directory when done, after the report was read into the value returned.
  // Neither path uses the symbolizer (the children name their stacks).
  if (sites_filter) {
    call_sites_ = std::async(std::launch::async,
                             [&options, binary_path, &symbolizer, filter = *sites_filter, budget]() -> CallSites {
                               const Clock::time_point started = Clock::now();
                               RerunExplainer explainer(options, binary_path, symbolizer);
                               explainer.use_own_temp_dirs();
                               auto sites = explainer.call_sites(filter, budget);
                               return CallSites{std::move(sites), Clock::now() - started};
                             });
  }
  if (spread_request_) {
    spread_ = std::async(std::launch::async,
                         [&options, binary_path, &symbolizer, request = *spread_request_, budget]() -> Spread {
                           const Clock::time_point started = Clock::now();
                           RerunExplainer explainer(options, binary_path, symbolizer);
                           explainer.use_own_temp_dirs();
                           SpreadSamples samples = run_spread(explainer, request, budget);
                           return Spread{std::move(samples), Clock::now() - started};
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

}  // namespace heapgate::gtest
