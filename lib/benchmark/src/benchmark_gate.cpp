// SPDX-License-Identifier: MIT
// Google Benchmark's --benchmark_out JSON as a heapgate Report, judged per
// iteration against a baseline (benchmark_gate.h).
#include "heapgate/benchmark_gate.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "heapgate/gate.h"
#include "json_fields.h"
#include "heapgate/sys.h"

namespace heapgate::bench {
namespace {

using detail::json;
using detail::JsonReader;
using detail::pointer_append;

constexpr std::string_view kJsonFix =
    "pass the file written by --benchmark_out (JSON, the default --benchmark_out_format)";

// Google Benchmark writes NaN and Infinity for undefined statistics (the cv
// aggregate of a counter that is always 0 is 0/0), which JSON does not
// allow. Outside strings, those tokens become null so the rest of the file reads.
std::string replace_non_finite(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    std::size_t start = i;
    if (c == '-' && i + 1 < text.size() && (text[i + 1] == 'N' || text[i + 1] == 'I')) ++i;
    bool replaced = false;
    for (std::string_view token : {std::string_view("NaN"), std::string_view("Infinity")}) {
      if (text.substr(i, token.size()) == token) {
        // Padded to the token's length where it is longer, so later columns in
        // error messages stay right (lines always do: no newline moves).
        std::size_t length = i - start + token.size();
        out += "null";
        if (length > 4) out.append(length - 4, ' ');
        i += token.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) {
      i = start;
      out += c;
    }
  }
  return out;
}

std::string base_name(const std::string& path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

struct RegionCounters {
  double allocs = 0;
  double bytes = 0;
  double live_allocs = 0;
  double live_bytes = 0;
  double peak_bytes = 0;
};

// The fields of one entry of "benchmarks" that the gate uses.
struct Run {
  std::string run_name;
  bool aggregate = false;
  std::string aggregate_name;
  std::int64_t repetition_index = 0;
  std::uint64_t iterations = 0;
  bool error = false;
  bool skipped = false;
  std::string message;      // error_message or skip_message
  double real_time_ms = 0;  // the reported run, all iterations
  bool has_memory = false;
  double allocs_per_iter = 0;
  std::int64_t max_bytes_used = 0;
  std::optional<std::int64_t> total_allocated_bytes;
  std::optional<std::int64_t> net_heap_growth;
  std::optional<std::uint64_t> memory_iterations;
  std::map<std::string, RegionCounters> regions;  // "" is the unnamed region
};

double to_milliseconds(double value, const std::string& unit) {
  if (unit == "ns") return value / 1e6;
  if (unit == "us") return value / 1e3;
  if (unit == "s") return value * 1e3;
  return value;  // "ms", and what a newer version may add
}

// Region counters: "allocs/iter" (unnamed) or "R.allocs/iter" (region R),
// each with its four siblings.
void read_regions(JsonReader& r, const json& entry, const std::string& pointer, Run& run) {
  const std::string suffix(kAllocsCounter);
  for (auto it = entry.begin(); it != entry.end() && r.ok(); ++it) {
    const std::string& key = it.key();
    if (key.size() < suffix.size() || key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    std::string prefix = key.substr(0, key.size() - suffix.size());
    if (!prefix.empty() && prefix.back() != '.') continue;
    std::string region = prefix.empty() ? "" : prefix.substr(0, prefix.size() - 1);
    RegionCounters c;
    struct Field {
      std::string_view name;
      double* value;
    };
    for (Field f :
         {Field{kAllocsCounter, &c.allocs}, Field{kBytesCounter, &c.bytes}, Field{kLiveAllocsCounter, &c.live_allocs},
          Field{kLiveBytesCounter, &c.live_bytes}, Field{kPeakBytesCounter, &c.peak_bytes}}) {
      std::string name = prefix + std::string(f.name);
      const json* value = r.member(entry, pointer, name, false);
      if (value == nullptr) {
        r.fail_at(
            pointer_append(pointer, name), "heapgate counter \"" + name + "\" is missing next to \"" + key + "\"",
            "heapgate::bench::Scope writes all five counters of a region; do not name other counters \"" + key + "\"");
        return;
      }
      if (value->is_null() && run.aggregate) continue;  // NaN in a statistic; aggregates are rarely used
      double v = r.number(*value, pointer_append(pointer, name));
      if (r.ok() && v < 0) {
        r.fail_at(pointer_append(pointer, name), "expected a count >= 0, got " + detail::describe_value(*value),
                  "heapgate counters are never negative; was the file edited?");
      }
      *f.value = v;
    }
    run.regions[region] = c;
  }
}

Run read_run(JsonReader& r, const json& entry, const std::string& pointer) {
  Run run;
  if (!r.object(entry, pointer)) return run;
  const json* name = r.member(entry, pointer, "name", true);
  std::string full_name = name != nullptr ? r.string(*name, pointer_append(pointer, "name")) : "";
  const json* run_name = r.member(entry, pointer, "run_name", false);
  run.run_name = run_name != nullptr ? r.string(*run_name, pointer_append(pointer, "run_name")) : full_name;
  if (const json* type = r.member(entry, pointer, "run_type", false)) {
    run.aggregate = r.string(*type, pointer_append(pointer, "run_type")) == "aggregate";
  }
  if (const json* agg = r.member(entry, pointer, "aggregate_name", false)) {
    run.aggregate_name = r.string(*agg, pointer_append(pointer, "aggregate_name"));
  }
  if (const json* rep = r.member(entry, pointer, "repetition_index", false)) {
    run.repetition_index = r.i64(*rep, pointer_append(pointer, "repetition_index"));
  }
  if (const json* error = r.member(entry, pointer, "error_occurred", false)) {
    run.error = r.boolean(*error, pointer_append(pointer, "error_occurred"));
  }
  if (const json* skipped = r.member(entry, pointer, "skipped", false)) {
    run.skipped = r.boolean(*skipped, pointer_append(pointer, "skipped"));
  }
  for (const char* key : {"error_message", "skip_message"}) {
    if (const json* m = r.member(entry, pointer, key, false)) run.message = r.string(*m, pointer_append(pointer, key));
  }
  if (const json* iterations = r.member(entry, pointer, "iterations", !run.skipped)) {
    run.iterations = r.u64(*iterations, pointer_append(pointer, "iterations"));
  }
  if (const json* real_time = r.member(entry, pointer, "real_time", false);
      real_time != nullptr && !real_time->is_null()) {
    double t = r.number(*real_time, pointer_append(pointer, "real_time"));
    std::string unit = "ns";
    if (const json* u = r.member(entry, pointer, "time_unit", false))
      unit = r.string(*u, pointer_append(pointer, "time_unit"));
    // real_time is per iteration; the record's duration is the whole reported run's.
    run.real_time_ms = to_milliseconds(t, unit) * static_cast<double>(run.aggregate ? 1 : run.iterations);
  }
  if (const json* allocs = r.member(entry, pointer, "allocs_per_iter", false)) {
    run.has_memory = true;
    run.allocs_per_iter = r.number(*allocs, pointer_append(pointer, "allocs_per_iter"));
    if (const json* peak = r.member(entry, pointer, "max_bytes_used", true)) {
      run.max_bytes_used = r.i64(*peak, pointer_append(pointer, "max_bytes_used"));
    }
    for (auto [key, field] : {std::pair{"total_allocated_bytes", &run.total_allocated_bytes},
                              std::pair{"net_heap_growth", &run.net_heap_growth}}) {
      if (const json* v = r.member(entry, pointer, key, false)) *field = r.i64(*v, pointer_append(pointer, key));
    }
    if (const json* m = r.member(entry, pointer, "memory_iterations", false)) {
      run.memory_iterations = r.u64(*m, pointer_append(pointer, "memory_iterations"));
    }
  }
  read_regions(r, entry, pointer, run);
  return run;
}

// A count from a per-iteration figure; a figure past what 64 bits hold (only a
// hand-edited or corrupt file has one) saturates instead of overflowing the cast.
std::uint64_t saturating_count(double v) {
  constexpr double kPastMax = 18446744073709551616.0;  // 2^64
  if (!(v > 0)) return 0;
  if (v >= kPastMax) return std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(v);
}
std::uint64_t round_whole(double v) { return saturating_count(std::round(v)); }
// Live counts round up: a leak of one block in 16 iterations must not read as 0.
std::uint64_t round_up(double v) { return saturating_count(std::ceil(v - 1e-9)); }

Metrics from_region(const RegionCounters& c) {
  Metrics m;
  m.allocations = round_whole(c.allocs);
  m.allocated_bytes = round_whole(c.bytes);
  m.live_allocations = round_up(c.live_allocs);
  m.live_bytes = round_up(c.live_bytes);
  m.peak_bytes = round_whole(c.peak_bytes);
  return m;
}

TestRecord new_record(const std::string& name, const std::string& run_name, Mode mode) {
  TestRecord t;
  t.name = name;
  t.suite = run_name.substr(0, run_name.find('/'));
  t.test = name;
  t.mode = mode;
  return t;
}

// The run whose numbers stand for the benchmark: the last repetition, or,
// with aggregates only, the median (else the mean).
const Run* representative(const std::vector<const Run*>& runs) {
  const Run* last = nullptr;
  for (const Run* run : runs) {
    if (run->aggregate) continue;
    if (last == nullptr || run->repetition_index >= last->repetition_index) last = run;
  }
  if (last != nullptr) return last;
  for (const char* preferred : {"median", "mean"}) {
    for (const Run* run : runs) {
      if (run->aggregate && run->aggregate_name == preferred) return run;
    }
  }
  return nullptr;
}

}  // namespace

Result<Report> parse_benchmark_json(std::string_view text, std::string_view source) {
  auto parsed = detail::parse_json_text(replace_non_finite(text), source, std::string(kJsonFix));
  if (!parsed) return fail(parsed.error());
  const json& doc = *parsed;
  JsonReader r(source);
  if (!r.object(doc, "")) return fail(r.error());

  Report report;
  RunInfo& info = report.run;
  std::string stem = base_name(std::string(source));
  if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".json") == 0) stem.resize(stem.size() - 5);
  info.binary = stem;
  Mode mode = Mode::counters;  // a file from another MemoryManager: counts taken as exact
  if (const json* context = r.member(doc, "", "context", false); context != nullptr && r.object(*context, "/context")) {
    auto text_of = [&](std::string_view key) -> std::string {
      const json* v = r.member(*context, "/context", key, false);
      return v != nullptr ? r.string(*v, pointer_append("/context", key)) : std::string();
    };
    if (std::string exe = text_of("executable"); !exe.empty()) info.binary = base_name(exe);
    info.host = text_of("host_name");
    info.started_at = text_of("date");
    const std::string mode_text = text_of(kContextMode);
    info.jemalloc_version = text_of(kContextJemallocVersion);
    info.unavailable_reason = text_of(kContextUnavailable);
    if (r.ok() && !mode_text.empty()) {
      auto m = parse_mode(mode_text);
      if (!m) {
        r.fail_at(pointer_append("/context", kContextMode), m.error().what, m.error().fix);
      } else {
        mode = *m;
      }
    }
  }
  info.mode = mode;
  if (!r.ok()) return fail(r.error());
  // The name becomes `<baselines>/<binary>.json`: one plain file name only.
  if (std::string problem = binary_name_problem(info.binary); !problem.empty()) {
    return fail(make_error(ErrorCode::parse_error, std::string(source) + ": /context/executable",
                           "the benchmark binary's name \"" + info.binary.substr(0, 64) + "\" " + problem,
                           "pass the --benchmark_out file the benchmark binary wrote itself"));
  }
  const json* benchmarks = r.member(doc, "", "benchmarks", true);
  if (benchmarks == nullptr || !r.array(*benchmarks, "/benchmarks")) {
    // Most likely not Google Benchmark's output at all: say which file to pass.
    Error e = r.error();
    e.fix = std::string(kJsonFix);
    return fail(e);
  }

  // Runs grouped by run_name, in the order of first appearance.
  std::vector<Run> runs;
  runs.reserve(benchmarks->size());
  for (std::size_t i = 0; i < benchmarks->size() && r.ok(); ++i) {
    runs.push_back(read_run(r, (*benchmarks)[i], "/benchmarks/" + std::to_string(i)));
  }
  if (!r.ok()) return fail(r.error());
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Run*>> by_name;
  for (const Run& run : runs) {
    auto& group = by_name[run.run_name];
    if (group.empty()) order.push_back(run.run_name);
    group.push_back(&run);
  }

  const bool switched_off = mode == Mode::off;
  for (const std::string& run_name : order) {
    const std::vector<const Run*>& group = by_name[run_name];
    const Run* errored = nullptr;
    bool skipped = false;
    for (const Run* run : group) {
      if (run->error && errored == nullptr) errored = run;
      skipped = skipped || run->skipped;
    }
    TestRecord record = new_record(run_name, run_name, mode);
    if (errored != nullptr) {
      // The benchmark failed on its own: no numbers to judge, and not a pass.
      record.verdict = Verdict::unavailable;
      record.gtest_failed = true;
      record.message = "the benchmark reported an error: " + errored->message;
      report.tests.push_back(std::move(record));
      continue;
    }
    if (skipped) continue;  // skipped on purpose, like a GTEST_SKIP
    const Run* chosen = representative(group);
    if (chosen == nullptr) continue;
    record.duration_ms = chosen->real_time_ms;

    auto unavailable = [&](TestRecord& t, std::string why) {
      t.verdict = Verdict::unavailable;
      t.mode = Mode::off;
      t.message = std::move(why);
    };
    auto unnamed = chosen->regions.find("");
    if (switched_off) {
      unavailable(record,
                  info.unavailable_reason.empty() ? "heapgate measured nothing (mode off)" : info.unavailable_reason);
    } else if (unnamed != chosen->regions.end()) {
      record.metrics = from_region(unnamed->second);
    } else if (chosen->has_memory) {
      if (chosen->allocs_per_iter < 0 || chosen->max_bytes_used < 0) {
        unavailable(record,
                    "the MemoryManager could not measure this benchmark (negative counts: heapgate's "
                    "\"not measured\" marker); its error is in the benchmark's stderr");
      } else {
        const std::uint64_t memory_iterations =
            chosen->memory_iterations.value_or(std::min<std::uint64_t>(16, chosen->iterations));
        const double divisor = memory_iterations == 0 ? 1.0 : static_cast<double>(memory_iterations);
        record.metrics.allocations = round_whole(chosen->allocs_per_iter);
        record.metrics.allocated_bytes =
            round_whole(static_cast<double>(chosen->total_allocated_bytes.value_or(0)) / divisor);
        record.metrics.live_bytes = round_up(static_cast<double>(chosen->net_heap_growth.value_or(0)) / divisor);
        record.metrics.peak_bytes = static_cast<std::uint64_t>(chosen->max_bytes_used);
      }
    } else if (!info.unavailable_reason.empty()) {
      unavailable(record, info.unavailable_reason);
    } else if (chosen->aggregate) {
      unavailable(record,
                  "the file holds only aggregates (--benchmark_report_aggregates_only), which carry no memory "
                  "measurements; run without that flag, or measure the loop with HEAPGATE_BENCHMARK_SCOPE(state)");
    } else {
      unavailable(record,
                  "no allocation measurements: the benchmark binary registered no MemoryManager and set no "
                  "heapgate counters; link heapgate::benchmark_main, or call "
                  "heapgate::bench::register_memory_manager() before benchmark::RunSpecifiedBenchmarks()");
    }
    report.tests.push_back(std::move(record));
    if (switched_off) continue;
    for (const auto& [region, counters] : chosen->regions) {
      if (region.empty()) continue;
      TestRecord named = new_record(run_name + "[" + region + "]", run_name, mode);
      named.duration_ms = chosen->real_time_ms;
      named.metrics = from_region(counters);
      report.tests.push_back(std::move(named));
    }
  }
  return report;
}

Result<Report> read_benchmark_json(const std::string& path) {
  auto text = sys::read_file(path);
  if (!text) return fail(text.error());
  return parse_benchmark_json(*text, path);
}

void judge(Report& report, const Baseline& baseline, const JudgeOptions& options) {
  GatePolicy policy;
  policy.check_leaks = options.check_leaks;
  policy.accepting = options.update;
  for (TestRecord& t : report.tests) {
    if (t.verdict == Verdict::unavailable || t.verdict == Verdict::missing) continue;
    auto entry = baseline.tests.find(t.name);
    Observation observation;
    observation.mode = t.mode;
    observation.metrics = t.metrics;
    // Region counters are per iteration: what is live at the end of one
    // iteration is left by every iteration, so it recurs by construction.
    observation.leak.residue = LeakResidue::grows;
    observation.leak.where = "per iteration at the end of the measured region";
    apply(judge(observation, entry != baseline.tests.end() ? &entry->second : nullptr, policy), t);
  }
  for (TestRecord& t : missing_tests(report, baseline)) {
    const std::string run_name = t.name.substr(0, t.name.find('['));
    t.suite = run_name.substr(0, run_name.find('/'));
    t.test = t.name;
    t.message = "the baseline has an entry for " + t.name +
                ", but no input file ran it (filtered out, or deleted or renamed: then remove its entry)";
    report.tests.push_back(std::move(t));
  }
  sort_tests(report);
}

}  // namespace heapgate::bench
