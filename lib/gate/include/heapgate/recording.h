// SPDX-License-Identifier: MIT
// A recording of `heapgate record` (docs/design.md §12): what each process
// of a program wrote into DIR (DIR/<pid>/process.json and its heap
// profiles), what the command adds (DIR/record.json), and what they say:
// the call sites of the peak, of all allocations and of what was live at
// exit, and, from the live-heap snapshots, which sites leak and which were
// one-time setup. Reading the files: lib/gate/src/recording_reader.cpp;
// what they say: recording_analysis.cpp. Each process writes its
// process.json in lib/measure/src/process_recorder.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "heapgate/error.h"
#include "heapgate/metrics.h"
#include "heapgate/profile.h"
#include "heapgate/stack_sample.h"

namespace heapgate {

class Symbolizer;  // heapgate/symbolizer.h

/// The schema tags of DIR/record.json and DIR/<pid>/process.json.
inline constexpr const char* kRecordingSchema = "heapgate.record/1";
inline constexpr const char* kRecordedProcessSchema = "heapgate.record.process/1";

/// One process of a recording, as it wrote DIR/<pid>/process.json at its end.
struct RecordedProcess {
  std::uint64_t pid = 0;
  std::uint64_t ppid = 0;
  std::string exe;
  /// "exact" or "counters": what measured (counters when exact was not possible, see not_exact).
  std::string mode;
  /// "exit" (exit(), _exit() or a return from main), "signal", or "" when
  /// the process wrote nothing: SIGKILL, or it replaced itself with exec().
  std::string ended;
  int signal = 0;
  /// The numbers below were read; false when the counting's lock stayed held.
  bool counted = false;
  std::uint64_t allocations = 0;
  std::uint64_t allocated_bytes = 0;
  std::uint64_t live_allocations = 0;  ///< at the end
  std::uint64_t live_bytes = 0;
  /// The most bytes live at once: exact in `exact` mode; in `counters`, with
  /// several threads, the sum of each thread's own highest point (an upper bound).
  std::uint64_t peak_bytes = 0;
  bool peak_is_upper_bound = false;
  /// What peak.heap holds (its bytes within 0.4% of peak_bytes); exact mode only.
  std::uint64_t peak_stacks_allocations = 0;
  std::uint64_t peak_stacks_bytes = 0;
  std::uint64_t snapshots = 0;
  /// The profiles written, file names in `dir` (live.heap, allocations.heap, peak.heap).
  std::vector<std::string> profiles;
  std::string not_exact;    ///< why `exact` was asked for and counters measured
  std::string not_counted;  ///< why nothing was counted
  std::string not_written;  ///< why a profile is missing
  /// DIR/<pid>.
  std::string dir;
};

/// A whole recording.
struct Recording {
  std::string dir;
  /// The program and its arguments, as given.
  std::vector<std::string> command;
  std::string mode;  ///< as asked for
  std::uint64_t root_pid = 0;
  int exit_code = 0;    ///< the program's, or 128 + signal
  int term_signal = 0;  ///< the signal that ended the program, or 0
  std::uint64_t snapshot_every_ms = 0;
  /// The root process first, then the others by pid.
  std::vector<RecordedProcess> processes;
};

/// DIR/record.json, written atomically. Errors: `io_error`.
Result<void> write_recording_json(const Recording& recording);
/// Reads DIR/record.json and every DIR/<pid>/process.json. Errors name the
/// file: `io_error`, `parse_error`; a DIR without record.json is not a
/// recording (`parse_error` saying so).
Result<Recording> read_recording(const std::string& dir);
/// DIR holds a recording (DIR/record.json exists).
bool is_recording(const std::string& dir);

/// A call site whose live blocks were followed across a process' snapshots.
struct SiteGrowth {
  std::uint64_t pid = 0;
  /// The site (CallSite::allocations and ::bytes: live at the last snapshot).
  CallSite site;
  /// Live blocks and bytes at each snapshot, first to last.
  std::vector<std::uint64_t> live_allocations;
  std::vector<std::uint64_t> live_bytes;
};

/// What a recording says, over all its processes.
struct RecordingAnalysis {
  /// Normalized stacks (frames innermost first, with lines), all processes:
  /// live at exit (live counts), at the peak, and every allocation (both
  /// as accumulated counts, so call_sites_of() charges them).
  std::vector<StackSample> live;
  std::vector<StackSample> peak;
  std::vector<StackSample> allocations;
  /// Their call sites, by bytes, largest first.
  std::vector<CallSite> live_sites;
  std::vector<CallSite> peak_sites;
  std::vector<CallSite> allocation_sites;
  /// From snapshots (a process needs 3 or more): sites whose live blocks grew
  /// from the first snapshot to the middle one and from the middle to the
  /// last (grows(), the gate's leak rule, over those three points) are
  /// leaks; sites live at the last snapshot that did not are one-time.
  std::vector<SiteGrowth> leaks;
  std::vector<SiteGrowth> one_time;
  /// Every site's change from the first snapshot to the last, largest growth first.
  std::vector<SiteGrowth> growth;
};

/// Profiles already read, by path, with their sidecars written by the
/// symbolizer that reads them next (write_recording_sidecars()).
using ReadProfiles = std::map<std::string, Profile>;

/// Reads the profiles of `recording` (through their symbols sidecars) and
/// charges them to call sites. Errors name the profile. A profile in `read`
/// is taken from there, named by `symbolizer` without its sidecar.
Result<RecordingAnalysis> analyze_recording(const Recording& recording, Symbolizer& symbolizer,
                                            const ReadProfiles* read = nullptr);

/// Writes `<profile>.symbols.json` beside every profile of the recording
/// (heapgate/symbols_sidecar.h), snapshots included, so it keeps its
/// meaning after a rebuild. Errors: `io_error`, `parse_error` naming the profile.
/// `read` (optional) keeps each profile whose sidecar was written, for
/// analyze_recording() not to read it again.
Result<void> write_recording_sidecars(const Recording& recording, Symbolizer& symbolizer, ReadProfiles* read = nullptr);

/// The one-screen summary `heapgate record` prints: the program's end, per
/// process peak, total allocated and live at exit, and the top call sites of
/// each (`top` lines), leaks and one-time setup when there were snapshots.
std::string recording_summary(const Recording& recording, const RecordingAnalysis& analysis, std::size_t top = 5);

}  // namespace heapgate
