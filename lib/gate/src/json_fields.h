// SPDX-License-Identifier: MIT
// Private: checked reading of nlohmann::json documents for baselines and
// reports. Every nlohmann exception is caught in parse_json_text(), the one
// call site that can throw; the readers below check types before converting,
// so they never throw.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "heapgate/error.h"
#include "heapgate/fingerprint.h"
#include "heapgate/metrics.h"

namespace heapgate::detail {

using json = nlohmann::json;

/// Parses `text`. Syntax errors become `parse_error` at `source:line:column`
/// with nlohmann's description and `fix`.
Result<json> parse_json_text(std::string_view text, std::string_view source, std::string_view fix);

/// `value` as text: `indent` < 0 gives one line. Invalid UTF-8 becomes U+FFFD
/// (nlohmann would throw). Never throws.
std::string dump_json(const json& value, int indent);

/// Appends `compact` (dump_json(v, -1) of some v) as dump_json(v, 2) would
/// write it nested `depth` levels deep: the same bytes, without building v
/// again. A report's records are serialized once, for the journal, and
/// indented from that line for the final report.
void append_indented_json(std::string& out, std::string_view compact, int depth);

/// `pointer` + "/" + `key`, with `~` and `/` escaped as RFC 6901 says.
std::string pointer_append(const std::string& pointer, std::string_view key);

/// A short rendering of a JSON value for "got ..." in messages.
std::string describe_value(const json& value);

/// Reads fields of a document, keeping the first error: after a failure
/// every reader returns a default value and error() says what went wrong, so
/// a parser reads straight through and checks once at the end of each part.
class JsonReader {
 public:
  explicit JsonReader(std::string_view source) : source_(source) {}

  bool ok() const noexcept { return !error_; }
  const Error& error() const { return *error_; }

  /// Records `parse_error` at `source: pointer` unless an error is already kept.
  void fail_at(const std::string& pointer, std::string what, std::string fix);
  /// "expected <expected>, got <value>".
  void type_error(const std::string& pointer, const json& value, std::string_view expected, std::string fix);

  /// True if `value` is an object (else records an error).
  bool object(const json& value, const std::string& pointer);
  /// True if `value` is an array (else records an error).
  bool array(const json& value, const std::string& pointer);
  /// Records an error for the first key of `object` not in `allowed`.
  void only_keys(const json& object, const std::string& pointer, std::initializer_list<std::string_view> allowed);
  /// The member `key` of `object`, or nullptr if absent; records an error when
  /// it is absent and `required`.
  const json* member(const json& object, const std::string& pointer, std::string_view key, bool required);

  std::uint64_t u64(const json& value, const std::string& pointer);
  std::int64_t i64(const json& value, const std::string& pointer);
  int i32(const json& value, const std::string& pointer);
  /// Any finite JSON number.
  double number(const json& value, const std::string& pointer);
  bool boolean(const json& value, const std::string& pointer);
  std::string string(const json& value, const std::string& pointer);

  /// A Metrics object with exactly the five metric names as keys, but for
  /// those in `not_measured`, which may be left out (then 0).
  Metrics metrics(const json& value, const std::string& pointer, const std::vector<MetricName>& not_measured = {});
  /// A list of distinct metric names ("not_measured"), in kMetricNames order.
  std::vector<MetricName> metric_names(const json& value, const std::string& pointer);

 private:
  std::string source_;
  std::optional<Error> error_;
};

/// The five metrics as a JSON object, leaving out those in `not_measured`.
json metrics_to_json(const Metrics& metrics, const std::vector<MetricName>& not_measured = {});
/// ["allocations", "peak_bytes"].
json metric_names_to_json(const std::vector<MetricName>& names);

/// Checks a "schema" value against `expected` ("heapgate.report/2"): absent,
/// not a string, another schema family or a newer version are errors.
void check_schema(JsonReader& reader, const json* schema, std::string_view expected, const std::string& pointer);

/// CallSite lists: [{"allocations": N, "bytes": B, "function": "...", "location": "..."}].
json call_sites_to_json(const std::vector<CallSite>& sites);
std::vector<CallSite> read_call_sites(JsonReader& reader, const json& value, const std::string& pointer);
/// A ThreadShare: {"allocations": N, "bytes": B}; `with_scheduling` adds the
/// run's "switches" and "own_waits" (a report's record), which a baseline
/// never keeps (baseline.h).
json thread_share_to_json(const ThreadShare& share, bool with_scheduling = true);
ThreadShare read_thread_share(JsonReader& reader, const json& value, const std::string& pointer);
/// {"allocations": N, "bytes": B}: a baseline's thread-part bands, a report's thread parts.
AllocationCount read_allocation_count(JsonReader& reader, const json& value, const std::string& pointer);
/// A band of metrics over runs ({"runs", "low", "high"}): a baseline
/// entry's "noise" and "alone", a report record's "baseline_noise". Low above
/// high is an error.
NoiseBand read_noise_band(JsonReader& reader, const json& value, const std::string& pointer);
/// A Fingerprint: an object of strings.
Fingerprint read_fingerprint(JsonReader& reader, const json& value, const std::string& pointer);

}  // namespace heapgate::detail
