// SPDX-License-Identifier: MIT
// The two children a baseline being recorded runs after its last test (the
// exact run that records every test's call sites, and the counters runs that
// learn the spread of tests other threads allocated in) started side by side
// in the background, while this process judges the tests it left for the end
// (their growth checks run in children of their own). Only for a sharded run:
// its tests already run beside another shard's, each shard in its own
// temporary directory, and each of these children gets its own too. An
// unsharded suite may not bear two copies of itself (fixed ports, fixed
// paths): it runs the two one after the other (suite_run.cpp).
#pragma once

#include <chrono>
#include <future>
#include <optional>
#include <string>

#include "explainers.h"
#include "learned_spread.h"

namespace heapgate::harness {

class RecordingChildren {
 public:
  /// What one child gave back, and how long it took.
  template <typename T>
  struct Finished {
    T value;
    std::chrono::steady_clock::duration took{};
  };
  using CallSites = Finished<Result<RerunExplainer::RecordedCallSites>>;
  using Spread = Finished<SpreadSamples>;

  /// Starts the call-sites child when `sites` is given, and the spread
  /// child when `spread` is; each stopped after `budget`.
  RecordingChildren(const Options& options, const std::string& binary_path, Symbolizer& symbolizer,
                    std::optional<ChildTests> sites, std::optional<SpreadRequest> spread, std::chrono::seconds budget);
  /// Waits for the children that were not taken.
  ~RecordingChildren() = default;
  RecordingChildren(const RecordingChildren&) = delete;
  RecordingChildren& operator=(const RecordingChildren&) = delete;

  /// Waits for the call-sites child; nothing when it was not started.
  std::optional<CallSites> call_sites();
  /// Waits for the spread child; nothing when it was not started.
  std::optional<Spread> spread();
  const std::optional<SpreadRequest>& spread_request() const { return spread_request_; }

 private:
  std::optional<SpreadRequest> spread_request_;
  std::future<CallSites> call_sites_;
  std::future<Spread> spread_;
};

}  // namespace heapgate::harness
