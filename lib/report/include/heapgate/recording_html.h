// SPDX-License-Identifier: MIT
// recording_to_html(): the self-contained page `heapgate report DIR` writes for a `heapgate
// record` recording: processes, live/peak/all call sites with flame graphs, leaks, growth.
#pragma once

#include <string>

#include "heapgate/recording.h"

namespace heapgate {

/// The page `heapgate report DIR` writes for a recording of `heapgate
/// record`: the run and its processes, then live at exit, the peak and all
/// allocations, each as its call sites and a flame graph, and, with
/// snapshots, the leaks, the one-time setup and every site's growth from the
/// first snapshot to the last. Self-contained like to_html() (inline CSS and
/// SVG, no fetches). Pure.
std::string recording_to_html(const Recording& recording, const RecordingAnalysis& analysis);

}  // namespace heapgate
