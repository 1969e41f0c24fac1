// SPDX-License-Identifier: MIT
// Whole-process recording, for `heapgate record` (docs/design.md §12): one
// counting window over the whole life of a process that heapgate did not
// build, opened by the preloaded libheapgate_record.so (record_preload.cpp)
// and written out when the process ends, however it ends.
#pragma once

namespace heapgate::detail {

/// What the process was told to record (from the environment `heapgate
/// record` sets, see record_preload.cpp).
struct RecordingConfig {
  const char* dir = nullptr;  ///< DIR; each process writes DIR/<pid>/
  bool exact = true;          ///< stacks (exact) or counts only (counters)
};

/// Opens the window (and the stack recording in exact mode). False when the
/// process cannot be counted; process.json then says why.
bool start_recording(const RecordingConfig& config) noexcept;

/// In a fork() child: forgets the parent's recording and starts the
/// child's own, written to DIR/<child pid>/.
void restart_recording_in_child() noexcept;

/// Writes DIR/<pid>/snapshot.NNNN.heap, the blocks live now (exact mode).
/// Never allocates.
void write_snapshot() noexcept;

/// Writes the process' files: live.heap, allocations.heap and peak.heap
/// (exact), then process.json naming what could be written. `signo` is the
/// signal that ends the process, 0 at exit. Once per process, and only in
/// the process that recorded (not in a vfork() child); never allocates, so a
/// fatal signal's handler may call it.
void finish_recording(int signo) noexcept;

}  // namespace heapgate::detail
