// SPDX-License-Identifier: MIT
// A test binary's stored baseline, `<baselines>/<binary>.json`: BaselineEntry, Baseline, noise
// bands, baseline_path(), read_baseline(), write_baseline(), update_entries(), prune_entries().
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "heapgate/allocator.h"
#include "heapgate/error.h"
#include "heapgate/fingerprint.h"
#include "heapgate/metrics.h"

namespace heapgate {

/// The schema tag of baseline files. A file with a higher version
/// ("heapgate.baseline/2") was written by a newer heapgate and is refused.
inline constexpr std::string_view kBaselineSchema = "heapgate.baseline/1";

/// The separator of frames in BaselineEntry::top_stacks: innermost frame
/// first, each followed by its caller ("parse() < load() < main").
inline constexpr std::string_view kStackFrameSeparator = " < ";

/// What the baseline remembers of one test.
///
/// JSON (one value of the "tests" object; keys sorted):
/// ```
/// "Suite.Test": {
///   "metrics": {"allocated_bytes": 4096, "allocations": 12, "live_allocations": 0,
///               "live_bytes": 0, "peak_bytes": 2048},
///   "mode": "exact",
///   "tolerance": {"allocations": {"absolute": 2, "relative": 0.0}, ...},  // optional
///   "top_stacks": ["parse() < load() < main"]
/// }
/// ```

/// How far a calibrated test's band is widened on each side at least, as a
/// fraction of its median, for a metric that varied: a few calibration runs
/// can miss a test's second state entirely (docs/design.md §6a).
inline constexpr double kNoisyMinimumWidening = 0.10;

/// A band whose allocations spread by more than this fraction of its lowest
/// (and at least kTimingBoundMinimum apart) is of a test whose counts follow
/// timing, not code: a test that works for a fixed time or as fast as
/// another thread drains a queue (such tests made 3,887 to 5,549
/// allocations in three recorded runs and 23,454 later, or 25M to 48M). The
/// same binary making a quarter more or fewer calls is not a change a count
/// can judge; the other bands that varied on the suites measured spread by
/// 9% at most (bench/real_suites/README.md, "The cases behind the rules").
/// Its allocations, bytes and peak are not gated, and the report says so; its
/// leaks still are (docs/design.md §6a).
inline constexpr double kTimingBoundSpread = 0.25;
inline constexpr std::uint64_t kTimingBoundMinimum = 100;

/// True when `band` is of such a test.
bool timing_bound(const NoiseBand& band) noexcept;

/// The band's width for one metric (high - low).
std::uint64_t spread(const NoiseBand& band, MetricName metric) noexcept;

struct BaselineEntry {
  Metrics metrics;
  /// The mode the metrics were measured in.
  Mode mode = Mode::counters;
  /// Per-test tolerances, edited by hand; replace the run's tolerances for
  /// this test. In JSON a metric may be left out: it then takes
  /// Tolerances::for_mode(mode); all five are written back.
  std::optional<Tolerances> tolerance;
  /// The top stacks when the baseline was recorded, symbolic, one string
  /// per stack, frames joined by kStackFrameSeparator. For review only: the
  /// gate compares metrics, not stacks.
  std::vector<std::string> top_stacks;
  /// The test's main call sites when recorded (the top few by allocations
  /// and by bytes; JSON "call_sites", absent when empty), so a regression is
  /// explained as the change at each site. Kept on update when the new
  /// result brings none.
  std::vector<CallSite> call_sites;
  /// `call_sites` holds all of the test's call sites (recorded with its call
  /// sites gated; JSON "call_sites_complete", absent when false): a site
  /// missing from it is new, so call-site gating can judge it.
  bool call_sites_complete = false;
  /// The blocks the test left live when recorded were one-time setup: they
  /// stayed level when the test repeated (JSON "setup_residue": true, absent
  /// otherwise). A later run that leaves no more live blocks and bytes than
  /// `metrics` is judged without repeating the test again.
  bool setup_residue = false;
  /// The test's spread over calibration runs (JSON "noise": {"runs": N,
  /// "low": {metrics}, "high": {metrics}}, absent for a deterministic test);
  /// `metrics` is then the runs' per-metric median. A value passes when it
  /// lies within the band widened by its own spread on each side (and the
  /// tolerance); see compare_to_baseline(). Kept on update unless the new
  /// entry brings its own, like a hand-edited tolerance.
  std::optional<NoiseBand> noise = std::nullopt;
  /// `sampled` entries: the standard errors of `metrics` (JSON
  /// "standard_errors", absent otherwise), so the gate can set each metric's
  /// tolerance from both runs' sampling error (docs/design.md §6b).
  std::optional<Metrics> standard_errors = std::nullopt;
  /// What other threads allocated during the test when recorded (the most
  /// over calibration runs; JSON "other_threads", absent when none): its
  /// counts then move with scheduling, and each metric may move by
  /// scheduling_allowance() besides its tolerance. A single-threaded test has
  /// none and stays exact. Allocations and bytes only: context switches and
  /// waits are facts of one run, kept in its report and never in a baseline
  /// (a reviewed file must not change with the machine's load); the gate
  /// takes them from the run it judges. Older baselines' "switches" and
  /// "own_waits" are read and dropped.
  ThreadShare other_threads = {};
  /// A threaded test's own thread's part, lowest and highest over the runs
  /// that recorded it (JSON "own_thread": {"low": {"allocations": N,
  /// "bytes": B}, "high": {...}}, written with `other_threads`). With it,
  /// allocations and allocated bytes are gated on the own thread's part,
  /// against this band; the other threads' part is shown, not gated
  /// (compare_to_baseline()).
  /// Absent in baselines recorded before it: those are judged by their totals.
  std::optional<ThreadPartBand> own_thread = std::nullopt;
  /// What the other threads made, lowest and highest over the runs that
  /// recorded it (JSON "other_threads_band", written with `own_thread`):
  /// their part is gated against it too, widened when it varied
  /// (compare_to_baseline()). Absent in baselines recorded before it: their
  /// part is then judged against `other_threads` as a band that varied.
  std::optional<ThreadPartBand> other_threads_band = std::nullopt;
  /// The test's metrics run alone, in a fresh process of its own (JSON
  /// "alone": {"runs": N, "low": {metrics}, "high": {metrics}}, absent when
  /// not measured; `--heapgate_measure_alone`, which `heapgate run
  /// --calibrate` sets for its first run). In the suite a test also carries
  /// the state earlier tests left behind (a shared queue's free slots, a
  /// compaction still running), and that state can move with timing; alone
  /// it cannot. A regression whose fresh run alone measures as recorded here
  /// is that carried state, not a change (gate_test()). Moved with
  /// `metrics` when one new run is accepted.
  std::optional<NoiseBand> alone = std::nullopt;
  /// Metrics the recording run could not measure (TestRecord::not_measured):
  /// JSON "not_measured", and "metrics" leaves them out; never compared.
  std::vector<MetricName> not_measured{};
};

/// The band `entry`'s other threads made when recorded: its
/// `other_threads_band`, or, in a baseline from before that was kept, the
/// most they made (`other_threads`) as both ends.
ThreadPartBand recorded_other_threads_band(const BaselineEntry& entry) noexcept;

/// Field-by-field equality.
bool operator==(const BaselineEntry& a, const BaselineEntry& b) noexcept;
bool operator!=(const BaselineEntry& a, const BaselineEntry& b) noexcept;

/// The baseline of one test binary: `baselines/<binary>.json`.
///
/// JSON: `{"binary": "...", "schema": "heapgate.baseline/1", "tests": {...}}`,
/// written with sorted keys and a 2-space indent, so a change reads well in review.
struct Baseline {
  /// The test binary's file name (no directory).
  std::string binary;
  /// Entries by full gtest name, "Suite.Test", typed and value-parameterized
  /// names as gtest prints them ("Inst/Suite.Test/0", "Suite/0.Test").
  std::map<std::string, BaselineEntry> tests;
  /// The environment the numbers were recorded in (JSON "fingerprint",
  /// absent when empty: recorded before fingerprints existed).
  Fingerprint fingerprint;
  /// False when read_baseline() found no file: the gate has nothing to
  /// compare with yet. Not written to JSON.
  bool exists = true;
};

/// The longest test binary name heapgate accepts. Shorter than NAME_MAX
/// (255) so that every file named after it still fits one path component:
/// `<binary>.shard-I-of-N.partial.jsonl`, `<binary>.json.tmp.XXXXXX`.
inline constexpr std::size_t kMaxBinaryNameLength = 200;

/// What is wrong with `name` as the name of a test binary, or "" when it is
/// one. A binary's name becomes file names (`<baselines>/<binary>.json`,
/// `<report>/<binary>.json`), and reports arrive from CI artifacts, so it
/// must be one plain file name: not empty, not "." or "..", no '/', no NUL,
/// at most kMaxBinaryNameLength bytes. Pure.
std::string binary_name_problem(std::string_view name);

/// The baseline file of a test binary: `<baselines_dir>/<binary>.json`, the
/// one place that path is made (the plugin, every CLI verb). `binary` may come
/// from a report, which may be a CI artifact: a name that is not one plain
/// file name (binary_name_problem()) is an `invalid_argument` error at
/// `source` (where the name came from: a report directory, a binary's path),
/// never a path outside `baselines_dir`.
Result<std::string> baseline_path(const std::string& baselines_dir, const std::string& binary,
                                  const std::string& source);

/// Field-by-field equality.
bool operator==(const Baseline& a, const Baseline& b) noexcept;
bool operator!=(const Baseline& a, const Baseline& b) noexcept;

/// Reads a baseline file. A missing file is not an error: the result is an
/// empty Baseline with `exists == false`. Errors:
/// - `io_error`: the file exists but cannot be read (permissions, a directory).
/// - `parse_error`: not JSON (where = `path:line:column`), or JSON of the
///   wrong shape: a newer or absent schema, a wrong type, a negative count,
///   an unknown metric, mode or key. `where` is `path: /json/pointer` of the
///   offending value, `what` says what was expected and what was found, and
///   `fix` how to repair it, e.g.
///   `baselines/a.json: /tests/Suite.Test/metrics/allocations: expected an
///   unsigned integer, got "5"; fix: write the number without quotes`.
/// Thread-safe (reads only).
Result<Baseline> read_baseline(const std::string& path);

/// Parses the text of a baseline file; `source` names it in errors. Errors as
/// read_baseline. The result has `exists == true`.
Result<Baseline> parse_baseline_json(std::string_view text, std::string_view source);

/// The JSON text of `baseline`: sorted keys, 2-space indent, trailing newline.
/// Stable: parse_baseline_json() then to_json() gives back identical bytes
/// for any text this function wrote. Strings that are not valid UTF-8 are
/// written with U+FFFD in place of the bad bytes. Pure.
std::string to_json(const Baseline& baseline);

/// Writes to_json(baseline) to `path` atomically (temp file, fsync, rename),
/// creating its directory if needed:
/// readers and a crash see the old file or the new one, never a mix, and a
/// failed write leaves the old file intact and no temporary file behind.
/// Errors: `io_error` naming the path, with a fix.
Result<void> write_baseline(const std::string& path, const Baseline& baseline);

/// What update_entries() did.
struct BaselineUpdate {
  std::size_t added = 0;      ///< tests that had no entry
  std::size_t changed = 0;    ///< entries replaced by different values
  std::size_t unchanged = 0;  ///< entries that already held these values
  std::size_t kept = 0;       ///< entries of tests not in the results, left as they were
};

/// Merges new results (test name → entry) into `baseline`. The entry of each
/// test in `results` is replaced; a tolerance override already in the
/// baseline is kept unless the new entry brings its own (it was edited by
/// hand), and so are its call sites when the new entry has none. A test
/// with a noise band whose new entry brings none (one run, not samples) keeps
/// its band, metric by metric: a value within one spread of the band widens
/// it (the median stays), a value farther out moves the band with it (an
/// intended change). Entries of tests not in `results` are kept: a filtered
/// or sharded run never deletes other tests' baselines. Pure (no I/O).
BaselineUpdate update_entries(Baseline& baseline, const std::map<std::string, BaselineEntry>& results);

/// Removes the entries of tests not in `known_tests` (for pruning deleted
/// tests after a full, unfiltered run) and returns their names, sorted.
std::vector<std::string> prune_entries(Baseline& baseline, const std::set<std::string>& known_tests);

/// Joins frames (innermost first) into one top_stacks string.
std::string join_stack(const std::vector<std::string>& frames);

}  // namespace heapgate
