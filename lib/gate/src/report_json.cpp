// SPDX-License-Identifier: MIT
// The JSON report ("heapgate.report/2"; /1 still read), the ReportWriter journal, and reading
// either from disk.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <set>

#include "heapgate/baseline.h"
#include "heapgate/report.h"
#include "report_json.h"
#include "heapgate/sys.h"

namespace heapgate {
namespace detail {
namespace {

constexpr const char* kReportFix = "re-run the tests to write the report again";

template <typename Enum, typename Parse>
Enum read_enum(JsonReader& r, const json& value, const std::string& pointer, Parse parse, std::string_view kind,
               std::string_view valid, Enum fallback) {
  std::string text = r.string(value, pointer);
  if (!r.ok()) return fallback;
  auto parsed = parse(text);
  if (!parsed) {
    r.fail_at(pointer, "expected a " + std::string(kind) + " (" + std::string(valid) + "), got \"" + text + "\"",
              "write one of " + std::string(valid));
    return fallback;
  }
  return *parsed;
}

MetricDelta read_delta(JsonReader& r, const json& v, const std::string& p) {
  MetricDelta d;
  if (!r.object(v, p)) return d;
  r.only_keys(v, p, {"baseline", "beyond_tolerance", "current", "delta", "grew", "limit", "metric", "ratio"});
  if (const json* f = r.member(v, p, "metric", true)) {
    d.metric = read_enum<MetricName>(r, *f, pointer_append(p, "metric"), parse_metric_name, "metric",
                                     list_words(kMetricNameWords), MetricName::allocations);
  }
  if (const json* f = r.member(v, p, "baseline", true)) d.baseline = r.u64(*f, pointer_append(p, "baseline"));
  if (const json* f = r.member(v, p, "current", true)) d.current = r.u64(*f, pointer_append(p, "current"));
  if (const json* f = r.member(v, p, "delta", true)) d.delta = r.i64(*f, pointer_append(p, "delta"));
  if (const json* f = r.member(v, p, "ratio", false)) d.ratio = r.number(*f, pointer_append(p, "ratio"));
  if (const json* f = r.member(v, p, "beyond_tolerance", true)) {
    d.beyond_tolerance = r.boolean(*f, pointer_append(p, "beyond_tolerance"));
  }
  if (const json* f = r.member(v, p, "limit", false)) d.limit = r.u64(*f, pointer_append(p, "limit"));
  // Reports from before "grew" went by the delta's sign.
  d.grew = d.beyond_tolerance && d.delta > 0;
  if (const json* f = r.member(v, p, "grew", false))
    d.grew = d.beyond_tolerance && r.boolean(*f, pointer_append(p, "grew"));
  return d;
}

std::vector<std::string> read_strings(JsonReader& r, const json& v, const std::string& p) {
  std::vector<std::string> out;
  if (!r.array(v, p)) return out;
  for (std::size_t i = 0; i < v.size() && r.ok(); ++i) out.push_back(r.string(v[i], p + "/" + std::to_string(i)));
  return out;
}

StackSample read_stack(JsonReader& r, const json& v, const std::string& p) {
  StackSample s;
  if (!r.object(v, p)) return s;
  r.only_keys(v, p, {"delta_accum_bytes", "delta_accum_objects", "delta_live_bytes", "delta_live_objects", "frames"});
  if (const json* f = r.member(v, p, "frames", true)) s.frames = read_strings(r, *f, pointer_append(p, "frames"));
  auto num = [&](const char* key, double& out) {
    if (const json* f = r.member(v, p, key, false)) out = r.number(*f, pointer_append(p, key));
  };
  num("delta_live_objects", s.counts.live_objects);
  num("delta_live_bytes", s.counts.live_bytes);
  num("delta_accum_objects", s.counts.accum_objects);
  num("delta_accum_bytes", s.counts.accum_bytes);
  return s;
}

// Checks the schema; true when it is version 1 (no evidence in the records).
bool read_schema(JsonReader& r, const json& root) {
  const json* schema = r.member(root, "", "schema", true);
  if (schema != nullptr && schema->is_string() && schema->get<std::string>() == kReportSchemaV1) return true;
  check_schema(r, schema, kReportSchema, "/schema");
  return false;
}

Report parse_report_doc(JsonReader& r, const json& root) {
  Report report;
  if (!r.object(root, "")) return report;
  const bool legacy = read_schema(r, root);
  r.only_keys(root, "", {"run", "schema", "tests"});
  if (const json* run = r.member(root, "", "run", true)) report.run = read_run(r, *run, "/run");
  if (const json* tests = r.member(root, "", "tests", true); tests != nullptr && r.array(*tests, "/tests")) {
    for (std::size_t i = 0; i < tests->size() && r.ok(); ++i) {
      report.tests.push_back(read_record(r, (*tests)[i], "/tests/" + std::to_string(i)));
      report.tests.back().legacy_evidence = legacy;
    }
  }
  return report;
}

// A report record's "thread_parts" (write_thread_parts()).
ThreadPartsJudged read_thread_parts(JsonReader& r, const json& value, const std::string& pointer) {
  ThreadPartsJudged out;
  if (!r.object(value, pointer)) return out;
  r.only_keys(value, pointer, {"other_threads", "own_thread"});
  auto part = [&r](const json& v, const std::string& p) {
    PartJudged j;
    if (!r.object(v, p)) return j;
    r.only_keys(v, p, {"banded", "high", "limit", "low", "now"});
    if (const json* f = r.member(v, p, "banded", true)) j.banded = r.boolean(*f, pointer_append(p, "banded"));
    if (const json* f = r.member(v, p, "high", true))
      j.recorded.high = read_allocation_count(r, *f, pointer_append(p, "high"));
    if (const json* f = r.member(v, p, "limit", true))
      j.limit = read_allocation_count(r, *f, pointer_append(p, "limit"));
    if (const json* f = r.member(v, p, "low", true))
      j.recorded.low = read_allocation_count(r, *f, pointer_append(p, "low"));
    if (const json* f = r.member(v, p, "now", true)) j.now = read_allocation_count(r, *f, pointer_append(p, "now"));
    return j;
  };
  if (const json* f = r.member(value, pointer, "own_thread", true))
    out.own_thread = part(*f, pointer_append(pointer, "own_thread"));
  if (const json* f = r.member(value, pointer, "other_threads", true)) {
    out.other_threads = part(*f, pointer_append(pointer, "other_threads"));
  }
  return out;
}

}  // namespace

json run_to_json(const RunInfo& run) {
  json out{{"binary", run.binary},
           {"build_id", run.build_id},
           {"mode", std::string(to_string(run.mode))},
           {"jemalloc_version", run.jemalloc_version},
           {"host", run.host},
           {"started_at", run.started_at},
           {"shard_index", run.shard_index},
           {"total_shards", run.total_shards},
           {"strict", run.strict},
           {"unavailable_reason", run.unavailable_reason},
           {"complete", run.complete}};
  if (!run.fingerprint.empty()) out["fingerprint"] = run.fingerprint;
  if (run.accepting) out["accepting"] = true;
  return out;
}

RunInfo read_run(JsonReader& r, const json& v, const std::string& p) {
  RunInfo run;
  if (!r.object(v, p)) return run;
  r.only_keys(v, p,
              {"accepting", "binary", "build_id", "complete", "fingerprint", "host", "jemalloc_version", "mode",
               "shard_index", "started_at", "strict", "total_shards", "unavailable_reason"});
  auto str = [&](const char* key, std::string& out) {
    if (const json* f = r.member(v, p, key, false)) out = r.string(*f, pointer_append(p, key));
  };
  // Required and checked: the binary's name becomes the baseline's and the
  // report's file names, and a report from a CI artifact is untrusted input.
  if (const json* f = r.member(v, p, "binary", true)) {
    const std::string pointer = pointer_append(p, "binary");
    run.binary = r.string(*f, pointer);
    if (r.ok()) {
      if (std::string problem = binary_name_problem(run.binary); !problem.empty()) {
        r.fail_at(pointer, "expected the test binary's file name, got " + describe_value(*f) + ", which " + problem,
                  "a report names its binary by file name only (\"my_tests\"); re-run the tests to write the "
                  "report again");
      }
    }
  }
  str("build_id", run.build_id);
  if (const json* f = r.member(v, p, "mode", false)) {
    run.mode = read_enum<Mode>(r, *f, pointer_append(p, "mode"), parse_mode, "mode", list_words(kModeWords), Mode::off);
  }
  str("jemalloc_version", run.jemalloc_version);
  str("host", run.host);
  str("started_at", run.started_at);
  str("unavailable_reason", run.unavailable_reason);
  if (const json* f = r.member(v, p, "shard_index", false))
    run.shard_index = r.i32(*f, pointer_append(p, "shard_index"));
  if (const json* f = r.member(v, p, "total_shards", false)) {
    run.total_shards = r.i32(*f, pointer_append(p, "total_shards"));
  }
  if (const json* f = r.member(v, p, "strict", false)) run.strict = r.boolean(*f, pointer_append(p, "strict"));
  if (const json* f = r.member(v, p, "complete", false)) run.complete = r.boolean(*f, pointer_append(p, "complete"));
  if (const json* f = r.member(v, p, "accepting", false)) run.accepting = r.boolean(*f, pointer_append(p, "accepting"));
  if (const json* f = r.member(v, p, "fingerprint", false)) {
    run.fingerprint = read_fingerprint(r, *f, pointer_append(p, "fingerprint"));
  }
  return run;
}

// A sample or confirmation (write_measurement()).
Measurement read_measurement(JsonReader& r, const json& v, const std::string& p) {
  Measurement out;
  if (!r.object(v, p)) return out;
  if (const json* other = v.is_object() ? r.member(v, p, "other_threads", false) : nullptr) {
    out.other_threads = read_thread_share(r, *other, pointer_append(p, "other_threads"));
    json metrics = v;
    metrics.erase("other_threads");
    out.metrics = r.metrics(metrics, p);
    return out;
  }
  out.metrics = r.metrics(v, p);
  return out;
}

TestRecord read_record(JsonReader& r, const json& v, const std::string& p) {
  TestRecord t;
  if (!r.object(v, p)) return t;
  // clang-format off
  r.only_keys(v, p,
              {"alone", "baseline", "baseline_call_sites", "baseline_noise", "budgets", "call_sites", "call_sites_complete", "confirmations",
               "deltas", "duration_ms", "estimated", "file", "growth", "gtest_failed", "interrupted", "leaks_checked", "line",
               "message", "metrics", "mode", "name", "not_measured", "other_threads", "profiles", "released_later", "samples", "setup_residue", "stacks",
               "standard_errors", "suite", "suppressed", "test", "thread_parts", "verdict"});
  // clang-format on
  if (const json* f = r.member(v, p, "name", true)) t.name = r.string(*f, pointer_append(p, "name"));
  // suite and test default to the two halves of "Suite.Test".
  std::size_t dot = t.name.find('.');
  t.suite = t.name.substr(0, dot);
  t.test = dot == std::string::npos ? std::string() : t.name.substr(dot + 1);
  auto str = [&](const char* key, std::string& out) {
    if (const json* f = r.member(v, p, key, false)) out = r.string(*f, pointer_append(p, key));
  };
  str("suite", t.suite);
  str("test", t.test);
  str("file", t.file);
  str("message", t.message);
  if (const json* f = r.member(v, p, "line", false)) t.line = r.i32(*f, pointer_append(p, "line"));
  if (const json* f = r.member(v, p, "mode", true)) {
    t.mode = read_enum<Mode>(r, *f, pointer_append(p, "mode"), parse_mode, "mode", list_words(kModeWords), Mode::off);
  }
  if (const json* f = r.member(v, p, "verdict", true)) {
    t.verdict = read_enum<Verdict>(r, *f, pointer_append(p, "verdict"), parse_verdict, "verdict",
                                   "pass, regressed, improved, leaked, over_budget, new, missing, unavailable",
                                   Verdict::unavailable);
  }
  if (const json* f = r.member(v, p, "estimated", false)) t.estimated = r.boolean(*f, pointer_append(p, "estimated"));
  if (const json* f = r.member(v, p, "not_measured", false)) {
    t.not_measured = r.metric_names(*f, pointer_append(p, "not_measured"));
  }
  if (const json* f = r.member(v, p, "metrics", true)) {
    t.metrics = r.metrics(*f, pointer_append(p, "metrics"), t.not_measured);
  }
  if (const json* f = r.member(v, p, "baseline", false); f != nullptr && !f->is_null()) {
    t.baseline = r.metrics(*f, pointer_append(p, "baseline"));
  }
  if (const json* f = r.member(v, p, "standard_errors", false)) {
    t.standard_errors = r.metrics(*f, pointer_append(p, "standard_errors"));
  }
  if (const json* f = r.member(v, p, "deltas", false)) {
    std::string dp = pointer_append(p, "deltas");
    if (r.array(*f, dp)) {
      for (std::size_t i = 0; i < f->size() && r.ok(); ++i) {
        t.deltas.push_back(read_delta(r, (*f)[i], dp + "/" + std::to_string(i)));
      }
    }
  }
  if (const json* f = r.member(v, p, "stacks", false)) {
    std::string sp = pointer_append(p, "stacks");
    if (r.array(*f, sp)) {
      for (std::size_t i = 0; i < f->size() && r.ok(); ++i) {
        t.stacks.push_back(read_stack(r, (*f)[i], sp + "/" + std::to_string(i)));
      }
    }
  }
  if (const json* f = r.member(v, p, "profiles", false))
    t.profiles = read_strings(r, *f, pointer_append(p, "profiles"));
  if (const json* f = r.member(v, p, "duration_ms", false)) {
    t.duration_ms = r.number(*f, pointer_append(p, "duration_ms"));
  }
  if (const json* f = r.member(v, p, "samples", false)) {
    const std::string sp = pointer_append(p, "samples");
    if (r.array(*f, sp)) {
      for (std::size_t i = 0; i < f->size() && r.ok(); ++i) {
        t.samples.push_back(read_measurement(r, (*f)[i], sp + "/" + std::to_string(i)));
      }
    }
  }
  if (const json* f = r.member(v, p, "setup_residue", false)) {
    t.setup_residue = r.boolean(*f, pointer_append(p, "setup_residue"));
  }
  if (const json* f = r.member(v, p, "released_later", false)) {
    t.released_later = r.boolean(*f, pointer_append(p, "released_later"));
  }
  if (const json* f = r.member(v, p, "gtest_failed", false)) {
    t.gtest_failed = r.boolean(*f, pointer_append(p, "gtest_failed"));
  }
  if (const json* f = r.member(v, p, "confirmations", false)) {
    const std::string cp = pointer_append(p, "confirmations");
    if (r.array(*f, cp)) {
      for (std::size_t i = 0; i < f->size() && r.ok(); ++i) {
        t.confirmations.push_back(read_measurement(r, (*f)[i], cp + "/" + std::to_string(i)));
      }
    }
  }
  if (const json* f = r.member(v, p, "leaks_checked", false)) {
    t.leaks_checked = r.boolean(*f, pointer_append(p, "leaks_checked"));
  }
  if (const json* f = r.member(v, p, "suppressed", false)) {
    const std::string sp = pointer_append(p, "suppressed");
    if (r.object(*f, sp)) {
      r.only_keys(*f, sp, {"allocations", "bytes", "source"});
      SuppressedLeak leak;
      if (const json* g = r.member(*f, sp, "allocations", true))
        leak.allocations = r.u64(*g, pointer_append(sp, "allocations"));
      if (const json* g = r.member(*f, sp, "bytes", true)) leak.bytes = r.u64(*g, pointer_append(sp, "bytes"));
      if (const json* g = r.member(*f, sp, "source", false)) leak.source = r.string(*g, pointer_append(sp, "source"));
      t.suppressed = std::move(leak);
    }
  }
  if (const json* f = r.member(v, p, "interrupted", false)) {
    t.interrupted = read_enum<Interruption>(r, *f, pointer_append(p, "interrupted"), parse_interruption, "interrupted",
                                            list_words(kInterruptionWords), Interruption::none);
  }
  if (const json* f = r.member(v, p, "budgets", false)) {
    std::string bp = pointer_append(p, "budgets");
    if (r.object(*f, bp)) {
      for (auto it = f->begin(); it != f->end() && r.ok(); ++it) {
        t.budgets[it.key()] = r.u64(it.value(), pointer_append(bp, it.key()));
      }
    }
  }
  if (const json* f = r.member(v, p, "baseline_noise", false)) {
    t.baseline_noise = read_noise_band(r, *f, pointer_append(p, "baseline_noise"));
  }
  if (const json* f = r.member(v, p, "thread_parts", false)) {
    t.thread_parts = read_thread_parts(r, *f, pointer_append(p, "thread_parts"));
  }
  if (const json* f = r.member(v, p, "baseline_call_sites", false)) {
    t.baseline_call_sites = read_call_sites(r, *f, pointer_append(p, "baseline_call_sites"));
  }
  if (const json* f = r.member(v, p, "call_sites", false)) {
    t.call_sites = read_call_sites(r, *f, pointer_append(p, "call_sites"));
  }
  if (const json* f = r.member(v, p, "other_threads", false)) {
    t.other_threads = read_thread_share(r, *f, pointer_append(p, "other_threads"));
  }
  if (const json* f = r.member(v, p, "alone", false)) t.alone = r.metrics(*f, pointer_append(p, "alone"));
  if (const json* f = r.member(v, p, "call_sites_complete", false)) {
    t.call_sites_complete = r.boolean(*f, pointer_append(p, "call_sites_complete"));
  }
  if (const json* f = r.member(v, p, "growth", false)) {
    std::string gp = pointer_append(p, "growth");
    if (r.object(*f, gp)) {
      r.only_keys(*f, gp, {"live_allocations", "live_bytes"});
      auto series = [&](const char* key, std::vector<std::uint64_t>& out) {
        const json* a = r.member(*f, gp, key, true);
        std::string ap = pointer_append(gp, key);
        if (a == nullptr || !r.array(*a, ap)) return;
        for (std::size_t i = 0; i < a->size() && r.ok(); ++i)
          out.push_back(r.u64((*a)[i], ap + "/" + std::to_string(i)));
      };
      series("live_allocations", t.growth.live_allocations);
      series("live_bytes", t.growth.live_bytes);
      if (r.ok() && t.growth.live_allocations.size() != t.growth.live_bytes.size()) {
        r.fail_at(gp, "live_allocations and live_bytes have different lengths", "write one value per run in each");
      }
    }
  }
  return t;
}

// {"interrupted": "<how>", "test": "<name>", "signal": N}, signal optional.
TestRecord read_interruption_line(JsonReader& r, const json& v) {
  r.only_keys(v, "", {"interrupted", "seconds", "signal", "test"});
  Interruption how = Interruption::crashed;
  if (const json* f = r.member(v, "", "interrupted", true)) {
    how = read_enum<Interruption>(r, *f, "/interrupted", parse_interruption, "interrupted",
                                  list_words(kInterruptionWords), Interruption::crashed);
  }
  std::string name;
  if (const json* f = r.member(v, "", "test", true)) name = r.string(*f, "/test");
  std::string detail;
  if (const json* f = r.member(v, "", "signal", false)) detail = sys::describe_signal(r.i32(*f, "/signal"));
  if (const json* f = r.member(v, "", "seconds", false)) {
    detail = "still running after " + std::to_string(r.i32(*f, "/seconds")) + " s";
  }
  return interrupted_record(std::move(name), how, detail);
}

std::string journal_header(const RunInfo& run) {
  json header = json{{"schema", std::string(kReportSchema)}, {"journal", true}, {"run", run_to_json(run)}};
  return dump_json(header, -1);
}

Result<Report> parse_report_journal(std::string_view text, std::string_view source) {
  Report report;
  std::vector<TestRecord> interruptions;
  bool legacy = false;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  bool have_header = false;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    // A last line without its newline was cut off by the crash: ignore it.
    if (end == std::string_view::npos) break;
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    std::string where = std::string(source) + ":" + std::to_string(line_no);
    auto doc = parse_json_text(line, where, "the journal is damaged; re-run the tests");
    if (!doc) return fail(doc.error());
    JsonReader r(where);
    if (!have_header) {
      if (r.object(*doc, "")) {
        legacy = read_schema(r, *doc);
        r.only_keys(*doc, "", {"journal", "run", "schema"});
        if (const json* run = r.member(*doc, "", "run", true)) report.run = read_run(r, *run, "/run");
      }
      have_header = true;
    } else if (doc->is_object() && doc->contains("interrupted") && !doc->contains("name")) {
      // Written by a signal handler or a watchdog while the test ran
      // (interruption_line_prefix): the test never finished.
      interruptions.push_back(read_interruption_line(r, *doc));
    } else {
      report.tests.push_back(read_record(r, *doc, ""));
      report.tests.back().legacy_evidence = legacy;
    }
    if (!r.ok()) return fail(r.error());
  }
  // A test named by an interruption line gets its record, unless a full
  // record of it was written too (a watchdog that finished its report).
  for (TestRecord& interrupted : interruptions) {
    const bool recorded = std::any_of(report.tests.begin(), report.tests.end(),
                                      [&](const TestRecord& t) { return t.name == interrupted.name; });
    if (!recorded) report.tests.push_back(std::move(interrupted));
  }
  if (!have_header) {
    return fail(make_error(ErrorCode::parse_error, std::string(source), "the journal has no complete header line",
                           "the run ended before its first test finished; re-run the tests"));
  }
  report.run.complete = false;
  return report;
}

}  // namespace detail

namespace {

// Compact JSON written straight into a string, byte for byte what
// nlohmann's dump(-1) gives the same document (ReportJson tests compare
// them): a record is serialized after every test, and building and dumping
// nlohmann's tree for it was most of heapgate's cost per trivial test.
// Keys must come in sorted order, as nlohmann's std::map keeps them.
class CompactJson {
 public:
  explicit CompactJson(std::string& out) : out_(out) {}

  CompactJson& open(char bracket) {
    item();
    out_ += bracket;
    fresh_ = true;
    return *this;
  }
  CompactJson& close(char bracket) {
    out_ += bracket;
    fresh_ = false;
    return *this;
  }
  CompactJson& key(std::string_view name) {
    item();
    quoted(name);
    out_ += ':';
    fresh_ = true;
    return *this;
  }
  void u64(std::uint64_t v) { number(v); }
  void i64(std::int64_t v) { number(v); }
  void boolean(bool v) {
    item();
    out_ += v ? "true" : "false";
  }
  void null() {
    item();
    out_ += "null";
  }
  void real(double v) {
    item();
    // JSON has no NaN or infinity; nlohmann would write null, which no reader accepts.
    v = std::isfinite(v) ? v : 0.0;
    if (v == 0.0 && !std::signbit(v)) {
      out_ += "0.0";
    } else {
      out_ += detail::dump_json(detail::json(v), -1);  // nlohmann's shortest round-trip form
    }
  }
  void string(std::string_view v) {
    item();
    quoted(v);
  }

 private:
  void item() {
    if (!fresh_) out_ += ',';
    fresh_ = false;
  }
  template <typename Int>
  void number(Int v) {
    item();
    char buffer[24];
    auto end = std::to_chars(buffer, buffer + sizeof buffer, v).ptr;
    out_.append(buffer, end);
  }
  void quoted(std::string_view v) {
    // Printable ASCII without quote or backslash is written as is; anything
    // else (escapes, UTF-8, invalid bytes made U+FFFD) goes through nlohmann.
    const bool plain =
        std::all_of(v.begin(), v.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
    if (plain) {
      out_ += '"';
      out_ += v;
      out_ += '"';
    } else {
      out_ += detail::dump_json(detail::json(std::string(v)), -1);
    }
  }

  std::string& out_;
  bool fresh_ = true;
};

// kMetricNames in the order of their names, as a JSON object keeps them.
const std::array<MetricName, kMetricNames.size()>& metrics_in_key_order() {
  static const auto order = [] {
    auto names = kMetricNames;
    std::sort(names.begin(), names.end(), [](MetricName a, MetricName b) { return to_string(a) < to_string(b); });
    return names;
  }();
  return order;
}

void write_metrics(CompactJson& w, const Metrics& m, const std::vector<MetricName>& not_measured = {}) {
  w.open('{');
  for (MetricName name : metrics_in_key_order()) {
    if (is_measured(not_measured, name)) w.key(to_string(name)).u64(get(m, name));
  }
  w.close('}');
}

void write_allocation_count(CompactJson& w, const AllocationCount& count) {
  w.open('{');
  w.key("allocations").u64(count.allocations);
  w.key("bytes").u64(count.bytes);
  w.close('}');
}

void write_thread_parts(CompactJson& w, const ThreadPartsJudged& parts) {
  auto part = [&w](const PartJudged& p) {
    w.open('{');
    w.key("banded").boolean(p.banded);
    write_allocation_count(w.key("high"), p.recorded.high);
    write_allocation_count(w.key("limit"), p.limit);
    write_allocation_count(w.key("low"), p.recorded.low);
    write_allocation_count(w.key("now"), p.now);
    w.close('}');
  };
  w.open('{');
  w.key("other_threads");
  part(parts.other_threads);
  w.key("own_thread");
  part(parts.own_thread);
  w.close('}');
}

void write_thread_share(CompactJson& w, const ThreadShare& share) {
  w.open('{');
  w.key("allocations").u64(share.allocations);
  w.key("bytes").u64(share.bytes);
  if (share.own_waits > 0) w.key("own_waits").u64(share.own_waits);
  if (share.switches > 0) w.key("switches").u64(share.switches);
  w.close('}');
}

// A sample or confirmation: its metrics, with "other_threads" among them
// (in key order) when other threads allocated or ran.
void write_measurement(CompactJson& w, const Measurement& m) {
  w.open('{');
  for (MetricName name : metrics_in_key_order()) {
    if (name == MetricName::peak_bytes && !m.other_threads.empty())
      write_thread_share(w.key("other_threads"), m.other_threads);
    w.key(to_string(name)).u64(get(m.metrics, name));
  }
  w.close('}');
}

void write_call_sites(CompactJson& w, const std::vector<CallSite>& sites) {
  w.open('[');
  for (const CallSite& c : sites) {
    w.open('{');
    w.key("allocations").u64(c.allocations);
    w.key("bytes").u64(c.bytes);
    w.key("function").string(c.function);
    w.key("location").string(c.location);
    w.close('}');
  }
  w.close(']');
}

void write_series(CompactJson& w, const std::vector<std::uint64_t>& values) {
  w.open('[');
  for (std::uint64_t v : values) w.u64(v);
  w.close(']');
}

}  // namespace

std::string record_json_line(const TestRecord& t) {
  std::string out;
  out.reserve(1024);
  CompactJson w(out);
  w.open('{');
  if (t.alone) write_metrics(w.key("alone"), *t.alone);
  w.key("baseline");
  if (t.baseline) {
    write_metrics(w, *t.baseline);
  } else {
    w.null();
  }
  if (!t.baseline_call_sites.empty()) write_call_sites(w.key("baseline_call_sites"), t.baseline_call_sites);
  if (t.baseline_noise) {
    w.key("baseline_noise").open('{');
    write_metrics(w.key("high"), t.baseline_noise->high);
    write_metrics(w.key("low"), t.baseline_noise->low);
    w.key("runs").u64(t.baseline_noise->runs);
    w.close('}');
  }
  w.key("budgets").open('{');
  for (const auto& [name, limit] : t.budgets) w.key(name).u64(limit);
  w.close('}');
  if (!t.call_sites.empty()) write_call_sites(w.key("call_sites"), t.call_sites);
  if (t.call_sites_complete) w.key("call_sites_complete").boolean(true);
  if (!t.confirmations.empty()) {
    w.key("confirmations").open('[');
    for (const Measurement& m : t.confirmations) write_measurement(w, m);
    w.close(']');
  }
  w.key("deltas").open('[');
  for (const MetricDelta& d : t.deltas) {
    w.open('{');
    w.key("baseline").u64(d.baseline);
    w.key("beyond_tolerance").boolean(d.beyond_tolerance);
    w.key("current").u64(d.current);
    w.key("delta").i64(d.delta);
    if (d.beyond_tolerance) w.key("grew").boolean(d.grew);
    w.key("limit").u64(d.limit);
    w.key("metric").string(to_string(d.metric));
    w.key("ratio").real(d.ratio);
    w.close('}');
  }
  w.close(']');
  w.key("duration_ms").real(t.duration_ms);
  w.key("estimated").boolean(t.estimated);
  w.key("file").string(t.file);
  if (!t.growth.empty()) {
    w.key("growth").open('{');
    write_series(w.key("live_allocations"), t.growth.live_allocations);
    write_series(w.key("live_bytes"), t.growth.live_bytes);
    w.close('}');
  }
  w.key("gtest_failed").boolean(t.gtest_failed);
  if (t.interrupted != Interruption::none) w.key("interrupted").string(to_string(t.interrupted));
  if (!t.leaks_checked) w.key("leaks_checked").boolean(false);
  w.key("line").i64(t.line);
  w.key("message").string(t.message);
  write_metrics(w.key("metrics"), t.metrics, t.not_measured);
  w.key("mode").string(to_string(t.mode));
  w.key("name").string(t.name);
  if (!t.not_measured.empty()) {
    w.key("not_measured").open('[');
    for (MetricName m : t.not_measured) w.string(to_string(m));
    w.close(']');
  }
  if (!t.other_threads.empty()) write_thread_share(w.key("other_threads"), t.other_threads);
  w.key("profiles").open('[');
  for (const std::string& p : t.profiles) w.string(p);
  w.close(']');
  if (t.released_later) w.key("released_later").boolean(true);
  if (!t.samples.empty()) {
    w.key("samples").open('[');
    for (const Measurement& m : t.samples) write_measurement(w, m);
    w.close(']');
  }
  if (t.setup_residue) w.key("setup_residue").boolean(true);
  w.key("stacks").open('[');
  for (const StackSample& s : t.stacks) {
    w.open('{');
    w.key("delta_accum_bytes").real(s.counts.accum_bytes);
    w.key("delta_accum_objects").real(s.counts.accum_objects);
    w.key("delta_live_bytes").real(s.counts.live_bytes);
    w.key("delta_live_objects").real(s.counts.live_objects);
    w.key("frames").open('[');
    for (const std::string& f : s.frames) w.string(f);
    w.close(']');
    w.close('}');
  }
  w.close(']');
  if (t.standard_errors) write_metrics(w.key("standard_errors"), *t.standard_errors);
  w.key("suite").string(t.suite);
  if (t.suppressed) {
    w.key("suppressed").open('{');
    w.key("allocations").u64(t.suppressed->allocations);
    w.key("bytes").u64(t.suppressed->bytes);
    w.key("source").string(t.suppressed->source);
    w.close('}');
  }
  w.key("test").string(t.test);
  if (t.thread_parts) write_thread_parts(w.key("thread_parts"), *t.thread_parts);
  w.key("verdict").string(to_string(t.verdict));
  w.close('}');
  return out;
}

std::string interruption_line_prefix(Interruption how, std::string_view name) {
  return "{\"interrupted\":\"" + std::string(to_string(how)) +
         "\",\"test\":" + detail::dump_json(detail::json(std::string(name)), -1);
}

std::string report_json(const RunInfo& run, const std::vector<std::string>& record_lines) {
  // dump_json(root, 2) of {"run", "schema", "tests"}, with each record
  // indented from its line instead of built again.
  // Indenting a record about doubles it: one allocation for the whole report.
  std::size_t size = 1024;
  for (const auto& line : record_lines) size += line.size() * 2 + 8;
  std::string out;
  out.reserve(size);
  out += "{\n  \"run\": ";
  detail::append_indented_json(out, detail::dump_json(detail::run_to_json(run), -1), 1);
  out += ",\n  \"schema\": \"";
  out += kReportSchema;
  out += "\",\n  \"tests\": [";
  for (std::size_t i = 0; i < record_lines.size(); ++i) {
    out += i == 0 ? "\n    " : ",\n    ";
    detail::append_indented_json(out, record_lines[i], 2);
  }
  out += record_lines.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

std::string to_json(const Report& report) {
  std::vector<std::string> lines;
  lines.reserve(report.tests.size());
  for (const auto& t : report.tests) lines.push_back(record_json_line(t));
  return report_json(report.run, lines);
}

Result<Report> parse_report_json(std::string_view text, std::string_view source) {
  auto doc = detail::parse_json_text(text, source, detail::kReportFix);
  if (!doc) return fail(doc.error());
  if (doc->is_object() && doc->contains("benchmarks") && doc->contains("context") && !doc->contains("schema")) {
    // The most likely mix-up: a --benchmark_out file where a report belongs.
    return fail(make_error(ErrorCode::parse_error, std::string(source),
                           "is Google Benchmark's output (--benchmark_out), not a heapgate report",
                           "gate it with `heapgate bench compare " + std::string(source) +
                               " --report DIR`, then render DIR/<binary>.json"));
  }
  detail::JsonReader r(source);
  Report report = detail::parse_report_doc(r, *doc);
  if (!r.ok()) return fail(r.error());
  return report;
}

namespace {

constexpr std::string_view kJournalSuffix = ".partial.jsonl";
constexpr std::string_view kJsonSuffix = ".json";

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

Result<Report> read_file_report(const std::string& path) {
  auto text = sys::read_file(path);
  if (!text) return fail(text.error());
  if (ends_with(path, kJournalSuffix)) return detail::parse_report_journal(*text, path);
  return parse_report_json(*text, path);
}

}  // namespace

Result<Report> read_report(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    // Stems of reports in the directory: "<stem>.json" (not .junit.xml) or a journal.
    std::set<std::string> stems;
    // increment(ec) rather than a range-for, whose ++ throws on errors.
    for (std::filesystem::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (ends_with(name, kJournalSuffix)) {
        stems.insert(name.substr(0, name.size() - kJournalSuffix.size()));
      } else if (ends_with(name, kJsonSuffix)) {
        stems.insert(name.substr(0, name.size() - kJsonSuffix.size()));
      }
    }
    if (ec) {
      return fail(make_error(ErrorCode::io_error, path, "cannot list the directory: " + ec.message(),
                             "check that it exists and is readable"));
    }
    if (stems.empty()) {
      return fail(make_error(ErrorCode::io_error, path,
                             "no heapgate report (*.json or *.partial.jsonl) in the directory",
                             "pass the directory the tests wrote with --heapgate_report"));
    }
    if (stems.size() > 1) {
      std::string list;
      for (const auto& s : stems) list += (list.empty() ? "" : ", ") + s;
      return fail(make_error(ErrorCode::invalid_argument, path, "several reports in the directory: " + list,
                             "pass the path of one report file"));
    }
    return read_report(path + "/" + *stems.begin() + std::string(kJsonSuffix));
  }
  if (sys::exists(path)) return read_file_report(path);
  if (ends_with(path, kJsonSuffix)) {
    std::string journal = path.substr(0, path.size() - kJsonSuffix.size()) + std::string(kJournalSuffix);
    if (sys::exists(journal)) return read_file_report(journal);
  }
  return fail(make_error(ErrorCode::io_error, path, "no such report (nor a journal of a crashed run beside it)",
                         "check the path; reports are written by --heapgate_report=<dir>"));
}

Result<void> write_report(const std::string& path, const Report& report) {
  return sys::write_file_atomic(path, to_json(report));
}

}  // namespace heapgate
