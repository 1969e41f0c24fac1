// SPDX-License-Identifier: MIT
// Baseline files (heapgate/baseline.h): JSON reading with pointer-precise errors, stable writing
// and atomic write_baseline(); update_entries() widening or moving noise bands on accept.
#include "heapgate/baseline.h"

#include <algorithm>
#include <filesystem>

#include "json_fields.h"
#include "heapgate/sys.h"

namespace heapgate {
namespace {

using detail::json;
using detail::JsonReader;
using detail::pointer_append;

constexpr const char* kRecordFix = "re-record the baseline (heapgate accept, or --heapgate_update_baselines)";

Mode read_mode(JsonReader& r, const json& value, const std::string& pointer) {
  std::string text = r.string(value, pointer);
  if (!r.ok()) return Mode::off;
  auto mode = parse_mode(text);
  if (!mode) {
    r.fail_at(pointer, "expected a mode (" + list_words(kModeWords, " or ") + "), got \"" + text + "\"",
              "write one of " + list_words(kModeWords));
    return Mode::off;
  }
  return *mode;
}

Tolerances read_tolerances(JsonReader& r, const json& value, const std::string& pointer, Mode mode) {
  Tolerances t = Tolerances::for_mode(mode);
  if (!r.object(value, pointer)) return t;
  for (auto it = value.begin(); it != value.end() && r.ok(); ++it) {
    std::string p = pointer_append(pointer, it.key());
    auto metric = parse_metric_name(it.key());
    if (!metric) {
      r.fail_at(p, "unknown metric \"" + it.key() + "\"; expected " + list_words(kMetricNameWords, " or "),
                "remove it or correct its spelling");
      break;
    }
    if (!r.object(it.value(), p)) break;
    r.only_keys(it.value(), p, {"absolute", "relative"});
    Tolerance tol;
    if (const json* a = r.member(it.value(), p, "absolute", false))
      tol.absolute = r.u64(*a, pointer_append(p, "absolute"));
    if (const json* rel = r.member(it.value(), p, "relative", false)) {
      std::string rp = pointer_append(p, "relative");
      tol.relative = r.number(*rel, rp);
      if (r.ok() && tol.relative < 0) {
        r.fail_at(rp, "expected a fraction >= 0, got " + detail::describe_value(*rel), "write e.g. 0.05 for 5%");
      }
    }
    t[*metric] = tol;
  }
  return t;
}

json tolerances_to_json(const Tolerances& t) {
  json out = json::object();
  for (MetricName m : kMetricNames) {
    out[std::string(to_string(m))] = json{{"absolute", t[m].absolute}, {"relative", t[m].relative}};
  }
  return out;
}

json band_to_json(const NoiseBand& band) {
  return json{
      {"runs", band.runs}, {"low", detail::metrics_to_json(band.low)}, {"high", detail::metrics_to_json(band.high)}};
}

ThreadPartBand read_thread_part_band(JsonReader& r, const json& value, const std::string& pointer) {
  ThreadPartBand band;
  if (!r.object(value, pointer)) return band;
  r.only_keys(value, pointer, {"high", "low"});
  if (const json* low = r.member(value, pointer, "low", true)) {
    band.low = detail::read_allocation_count(r, *low, pointer_append(pointer, "low"));
  }
  if (const json* high = r.member(value, pointer, "high", true)) {
    band.high = detail::read_allocation_count(r, *high, pointer_append(pointer, "high"));
  }
  if (r.ok() && (band.low.allocations > band.high.allocations || band.low.bytes > band.high.bytes)) {
    r.fail_at(pointer_append(pointer, "low"), "is above the band's high value",
              std::string("low must not exceed high; ") + kRecordFix);
  }
  return band;
}

json thread_part_band_to_json(const ThreadPartBand& band) {
  return json{{"low", {{"allocations", band.low.allocations}, {"bytes", band.low.bytes}}},
              {"high", {{"allocations", band.high.allocations}, {"bytes", band.high.bytes}}}};
}

}  // namespace

bool operator==(const BaselineEntry& a, const BaselineEntry& b) noexcept {
  return a.metrics == b.metrics && a.mode == b.mode && a.tolerance == b.tolerance && a.top_stacks == b.top_stacks &&
         a.call_sites == b.call_sites && a.setup_residue == b.setup_residue && a.noise == b.noise &&
         a.standard_errors == b.standard_errors && a.call_sites_complete == b.call_sites_complete &&
         a.other_threads == b.other_threads && a.own_thread == b.own_thread &&
         a.other_threads_band == b.other_threads_band && a.alone == b.alone && a.not_measured == b.not_measured;
}

ThreadPartBand recorded_other_threads_band(const BaselineEntry& entry) noexcept {
  const AllocationCount most = other_threads_part(entry.other_threads);
  return entry.other_threads_band.value_or(ThreadPartBand{most, most});
}

std::uint64_t spread(const NoiseBand& band, MetricName metric) noexcept {
  const std::uint64_t low = get(band.low, metric);
  const std::uint64_t high = get(band.high, metric);
  return high > low ? high - low : 0;
}
bool operator!=(const BaselineEntry& a, const BaselineEntry& b) noexcept { return !(a == b); }

bool timing_bound(const NoiseBand& band) noexcept {
  const std::uint64_t low = band.low.allocations;
  const std::uint64_t high = band.high.allocations;
  return high >= kTimingBoundMinimum + low &&
         static_cast<double>(high - low) > kTimingBoundSpread * static_cast<double>(low);
}

std::string binary_name_problem(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name == "." || name == "..") return "is \"" + std::string(name) + "\", a directory";
  if (name.find('/') != std::string_view::npos) return "contains '/'";
  if (name.find('\0') != std::string_view::npos) return "contains a NUL byte";
  if (name.size() > kMaxBinaryNameLength) {
    return "is " + std::to_string(name.size()) + " bytes long, over the limit of " +
           std::to_string(kMaxBinaryNameLength);
  }
  return {};
}

Result<std::string> baseline_path(const std::string& baselines_dir, const std::string& binary,
                                  const std::string& source) {
  // The readers check the name already; checked again here, where it becomes
  // a path, so no other way in can write outside the baselines directory.
  if (std::string problem = binary_name_problem(binary); !problem.empty()) {
    return fail(make_error(
        ErrorCode::invalid_argument, source,
        "the test binary's name \"" + binary.substr(0, 64) + "\" " + problem + "; expected a plain file name",
        "use the report heapgate wrote for the run; a binary's name is never a path"));
  }
  return baselines_dir + "/" + binary + ".json";
}

bool operator==(const Baseline& a, const Baseline& b) noexcept {
  return a.binary == b.binary && a.tests == b.tests && a.exists == b.exists && a.fingerprint == b.fingerprint;
}
bool operator!=(const Baseline& a, const Baseline& b) noexcept { return !(a == b); }

Result<Baseline> parse_baseline_json(std::string_view text, std::string_view source) {
  auto doc =
      detail::parse_json_text(text, source, std::string("restore the file from version control, or ") + kRecordFix);
  if (!doc) return fail(doc.error());
  const json& root = *doc;
  JsonReader r(source);
  Baseline baseline;
  if (!r.object(root, "")) return fail(r.error());
  // The schema first: a newer file should say so rather than trip on a new key.
  detail::check_schema(r, r.member(root, "", "schema", true), kBaselineSchema, "/schema");
  r.only_keys(root, "", {"binary", "fingerprint", "schema", "tests"});
  if (const json* binary = r.member(root, "", "binary", false)) baseline.binary = r.string(*binary, "/binary");
  if (const json* fp = r.member(root, "", "fingerprint", false))
    baseline.fingerprint = detail::read_fingerprint(r, *fp, "/fingerprint");
  const json* tests = r.member(root, "", "tests", true);
  if (tests != nullptr && r.object(*tests, "/tests")) {
    for (auto it = tests->begin(); it != tests->end() && r.ok(); ++it) {
      std::string p = pointer_append("/tests", it.key());
      const json& e = it.value();
      if (!r.object(e, p)) break;
      r.only_keys(
          e, p,
          {"alone", "call_sites", "call_sites_complete", "metrics", "mode", "noise", "not_measured", "other_threads",
           "other_threads_band", "own_thread", "setup_residue", "standard_errors", "tolerance", "top_stacks"});
      BaselineEntry entry;
      if (const json* mode = r.member(e, p, "mode", true)) entry.mode = read_mode(r, *mode, pointer_append(p, "mode"));
      if (const json* n = r.member(e, p, "not_measured", false)) {
        entry.not_measured = r.metric_names(*n, pointer_append(p, "not_measured"));
      }
      if (const json* m = r.member(e, p, "metrics", true)) {
        entry.metrics = r.metrics(*m, pointer_append(p, "metrics"), entry.not_measured);
      }
      if (const json* tol = r.member(e, p, "tolerance", false)) {
        entry.tolerance = read_tolerances(r, *tol, pointer_append(p, "tolerance"), entry.mode);
      }
      if (const json* stacks = r.member(e, p, "top_stacks", false)) {
        std::string sp = pointer_append(p, "top_stacks");
        if (r.array(*stacks, sp)) {
          for (std::size_t i = 0; i < stacks->size() && r.ok(); ++i) {
            entry.top_stacks.push_back(r.string((*stacks)[i], sp + "/" + std::to_string(i)));
          }
        }
      }
      if (const json* sites = r.member(e, p, "call_sites", false)) {
        entry.call_sites = detail::read_call_sites(r, *sites, pointer_append(p, "call_sites"));
      }
      if (const json* other = r.member(e, p, "other_threads", false)) {
        entry.other_threads = detail::read_thread_share(r, *other, pointer_append(p, "other_threads"));
        entry.other_threads = allocated_part(entry.other_threads);
      }
      if (const json* own = r.member(e, p, "own_thread", false)) {
        entry.own_thread = read_thread_part_band(r, *own, pointer_append(p, "own_thread"));
      }
      if (const json* others = r.member(e, p, "other_threads_band", false)) {
        entry.other_threads_band = read_thread_part_band(r, *others, pointer_append(p, "other_threads_band"));
      }
      if (const json* complete = r.member(e, p, "call_sites_complete", false)) {
        entry.call_sites_complete = r.boolean(*complete, pointer_append(p, "call_sites_complete"));
      }
      if (const json* noise = r.member(e, p, "noise", false)) {
        entry.noise = read_noise_band(r, *noise, pointer_append(p, "noise"));
      }
      if (const json* alone = r.member(e, p, "alone", false)) {
        entry.alone = read_noise_band(r, *alone, pointer_append(p, "alone"));
      }
      if (const json* errors = r.member(e, p, "standard_errors", false)) {
        entry.standard_errors = r.metrics(*errors, pointer_append(p, "standard_errors"));
      }
      if (const json* setup = r.member(e, p, "setup_residue", false)) {
        entry.setup_residue = r.boolean(*setup, pointer_append(p, "setup_residue"));
      }
      baseline.tests.emplace(it.key(), std::move(entry));
    }
  }
  if (!r.ok()) {
    Error e = r.error();
    if (e.fix.empty()) e.fix = kRecordFix;
    return fail(std::move(e));
  }
  baseline.exists = true;
  return baseline;
}

Result<Baseline> read_baseline(const std::string& path) {
  if (!sys::exists(path)) {
    Baseline empty;
    empty.exists = false;
    return empty;
  }
  auto text = sys::read_file(path);
  if (!text) return fail(text.error());
  return parse_baseline_json(*text, path);
}

std::string to_json(const Baseline& baseline) {
  json root = json::object();
  root["schema"] = std::string(kBaselineSchema);
  root["binary"] = baseline.binary;
  if (!baseline.fingerprint.empty()) root["fingerprint"] = baseline.fingerprint;
  json tests = json::object();
  for (const auto& [name, entry] : baseline.tests) {
    json e = json::object();
    e["metrics"] = detail::metrics_to_json(entry.metrics, entry.not_measured);
    if (!entry.not_measured.empty()) e["not_measured"] = detail::metric_names_to_json(entry.not_measured);
    e["mode"] = std::string(to_string(entry.mode));
    if (entry.tolerance) e["tolerance"] = tolerances_to_json(*entry.tolerance);
    e["top_stacks"] = entry.top_stacks;
    if (!entry.call_sites.empty()) e["call_sites"] = detail::call_sites_to_json(entry.call_sites);
    if (entry.call_sites_complete) e["call_sites_complete"] = true;
    if (!entry.other_threads.empty())
      e["other_threads"] = detail::thread_share_to_json(entry.other_threads, /*with_scheduling=*/false);
    if (entry.own_thread) e["own_thread"] = thread_part_band_to_json(*entry.own_thread);
    if (entry.other_threads_band) e["other_threads_band"] = thread_part_band_to_json(*entry.other_threads_band);
    if (entry.setup_residue) e["setup_residue"] = true;
    if (entry.standard_errors) e["standard_errors"] = detail::metrics_to_json(*entry.standard_errors);
    if (entry.noise) e["noise"] = band_to_json(*entry.noise);
    if (entry.alone) e["alone"] = band_to_json(*entry.alone);
    tests[name] = std::move(e);
  }
  root["tests"] = std::move(tests);
  return detail::dump_json(root, 2) + "\n";
}

Result<void> write_baseline(const std::string& path, const Baseline& baseline) {
  // The first run of a suite names a baselines directory nobody created yet.
  if (const auto slash = path.rfind('/'); slash != std::string::npos && slash > 0) {
    std::error_code ec;
    std::filesystem::create_directories(path.substr(0, slash), ec);  // a failure shows in the write below
  }
  auto written = sys::write_file_atomic(path, to_json(baseline));
  if (!written) {
    Error e = written.error();
    if (e.fix.empty()) e.fix = "check that the baselines directory exists and is writable";
    return fail(std::move(e));
  }
  return {};
}

namespace {

// A learned band moved with its test: accepting one new run (an intended
// change) keeps how far the test strays below and above its median, around
// the new numbers.
NoiseBand recentred(const NoiseBand& band, const Metrics& old_median, const Metrics& new_median) {
  NoiseBand out = band;
  for (MetricName m : kMetricNames) {
    const std::uint64_t below = get(old_median, m) - std::min(get(old_median, m), get(band.low, m));
    const std::uint64_t above = get(band.high, m) - std::min(get(band.high, m), get(old_median, m));
    const std::uint64_t median = get(new_median, m);
    get(out.low, m) = median - std::min(median, below);
    get(out.high, m) = median + above;
  }
  return out;
}

// One accepted run of a test with a noise band, metric by metric: a value
// near the band (within one spread of it, where timing can take the test)
// is what the band had not seen yet: the band widens to hold it and the
// median stays. A value farther out is an intended change: the band keeps
// its shape around the new value (recentred). Either way the band counts
// one more run; a run's own samples (a fresh band) replace it instead.
void accept_into_band(const NoiseBand& band, const Metrics& old_median, BaselineEntry& fresh) {
  const Metrics value = fresh.metrics;
  NoiseBand out = recentred(band, old_median, value);
  for (MetricName m : kMetricNames) {
    const std::uint64_t low = get(band.low, m);
    const std::uint64_t high = get(band.high, m);
    const std::uint64_t width = high - std::min(high, low);
    const std::uint64_t v = get(value, m);
    const bool near = v + width >= low && v <= high + width;
    if (width == 0 || !near) continue;  // recentred: an exact metric, or an intended change
    get(out.low, m) = std::min(low, v);
    get(out.high, m) = std::max(high, v);
    get(fresh.metrics, m) = get(old_median, m);
  }
  out.runs = band.runs + 1;
  fresh.noise = out;
}

// The test alone moves as the test in the suite does: an intended change
// accepted from one run shifts it by the same amount.
NoiseBand shifted(const NoiseBand& band, const Metrics& old_metrics, const Metrics& new_metrics) {
  NoiseBand out = band;
  for (MetricName m : kMetricNames) {
    const std::uint64_t before = get(old_metrics, m);
    const std::uint64_t after = get(new_metrics, m);
    for (std::uint64_t* value : {&get(out.low, m), &get(out.high, m)}) {
      *value = after >= before ? *value + (after - before) : *value - std::min(*value, before - after);
    }
  }
  return out;
}

// One accepted run of a threaded test: its own thread's part, or its other
// threads', near the band (within one width of it) widens the band; farther
// out it is an intended change and the run's part replaces it. The most
// other threads made stays the most either saw.
void accept_into_threads(const BaselineEntry& old, BaselineEntry& fresh) {
  if (old.other_threads.empty() || fresh.other_threads.empty()) return;
  keep_most(fresh.other_threads, old.other_threads);
  if (!old.own_thread || !fresh.own_thread) return;
  auto near = [](std::uint64_t low, std::uint64_t high, std::uint64_t v) {
    const std::uint64_t width = high - low;
    return width > 0 && v + width >= low && v <= high + width;
  };
  auto accept_band = [&near](const ThreadPartBand& band, ThreadPartBand& run) {
    const AllocationCount part = run.high;
    if (near(band.low.allocations, band.high.allocations, part.allocations) &&
        near(band.low.bytes, band.high.bytes, part.bytes)) {
      widen(run, band);
    }
  };
  accept_band(*old.own_thread, *fresh.own_thread);
  if (old.other_threads_band && fresh.other_threads_band)
    accept_band(*old.other_threads_band, *fresh.other_threads_band);
}

}  // namespace

BaselineUpdate update_entries(Baseline& baseline, const std::map<std::string, BaselineEntry>& results) {
  BaselineUpdate update;
  for (const auto& [name, fresh] : results) {
    auto it = baseline.tests.find(name);
    if (it == baseline.tests.end()) {
      baseline.tests.emplace(name, fresh);
      ++update.added;
      continue;
    }
    BaselineEntry merged = fresh;
    if (!merged.tolerance) merged.tolerance = it->second.tolerance;
    if (merged.call_sites.empty()) {
      merged.call_sites = it->second.call_sites;
      merged.call_sites_complete = it->second.call_sites_complete;
    }
    if (!merged.noise && it->second.noise) accept_into_band(*it->second.noise, it->second.metrics, merged);
    if (!fresh.noise) accept_into_threads(it->second, merged);
    if (!merged.alone && it->second.alone)
      merged.alone = shifted(*it->second.alone, it->second.metrics, merged.metrics);
    if (merged == it->second) {
      ++update.unchanged;
    } else {
      it->second = std::move(merged);
      ++update.changed;
    }
  }
  update.kept = baseline.tests.size() - update.added - update.changed - update.unchanged;
  return update;
}

std::vector<std::string> prune_entries(Baseline& baseline, const std::set<std::string>& known_tests) {
  std::vector<std::string> removed;
  for (auto it = baseline.tests.begin(); it != baseline.tests.end();) {
    if (known_tests.count(it->first) == 0) {
      removed.push_back(it->first);
      it = baseline.tests.erase(it);
    } else {
      ++it;
    }
  }
  return removed;
}

std::string join_stack(const std::vector<std::string>& frames) {
  std::string out;
  for (const auto& f : frames) {
    if (!out.empty()) out += kStackFrameSeparator;
    out += f;
  }
  return out;
}

}  // namespace heapgate
