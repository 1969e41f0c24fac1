// SPDX-License-Identifier: MIT
// Checked JSON reading and writing for baselines and reports (json_fields.h): parse_json_text(),
// dump_json(), JsonReader's typed readers, and the shared Metrics, ThreadShare, CallSite fields.
#include "json_fields.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>

namespace heapgate::detail {

Result<json> parse_json_text(std::string_view text, std::string_view source, std::string_view fix) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    // e.byte is the 1-based offset of the last character read.
    std::size_t end = e.byte == 0 ? 0 : std::min<std::size_t>(e.byte - 1, text.size());
    std::size_t line = 1;
    std::size_t column = 1;
    for (std::size_t i = 0; i < end; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string what = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] parse error at line L, column C: " prefix.
    std::size_t at = what.find("column ");
    if (at != std::string::npos) at = what.find(": ", at);
    if (at != std::string::npos) what = what.substr(at + 2);
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) what = "the file is empty; " + what;
    return fail(make_error(ErrorCode::parse_error,
                           std::string(source) + ":" + std::to_string(line) + ":" + std::to_string(column),
                           "not valid JSON: " + what, std::string(fix)));
  } catch (const std::exception& e) {
    return fail(make_error(ErrorCode::parse_error, std::string(source), std::string("not valid JSON: ") + e.what(),
                           std::string(fix)));
  }
}

std::string dump_json(const json& value, int indent) {
  // error_handler_t::replace: invalid UTF-8 becomes U+FFFD instead of a type_error.
  return value.dump(indent, ' ', false, json::error_handler_t::replace);
}

void append_indented_json(std::string& out, std::string_view compact, int depth) {
  auto newline = [&out](int d) {
    out += '\n';
    out.append(static_cast<std::size_t>(2 * d), ' ');
  };
  for (std::size_t i = 0; i < compact.size(); ++i) {
    const char c = compact[i];
    switch (c) {
      case '"': {
        // The whole string at once, escapes included.
        std::size_t end = i + 1;
        while (end < compact.size() && compact[end] != '"') end += compact[end] == '\\' ? 2 : 1;
        end = std::min(end + 1, compact.size());
        out.append(compact.data() + i, end - i);
        i = end - 1;
        break;
      }
      case '{':
      case '[':
        out += c;
        // nlohmann writes empty containers as "{}" and "[]" at any indent.
        if (i + 1 < compact.size() && (compact[i + 1] == '}' || compact[i + 1] == ']')) {
          out += compact[++i];
        } else {
          newline(++depth);
        }
        break;
      case '}':
      case ']':
        newline(--depth);
        out += c;
        break;
      case ',':
        out += c;
        newline(depth);
        break;
      case ':':
        out += ": ";
        break;
      default: {
        // A number or a literal: up to the next delimiter.
        std::size_t end = i + 1;
        while (end < compact.size() && std::strchr(",:]}", compact[end]) == nullptr) ++end;
        out.append(compact.data() + i, end - i);
        i = end - 1;
      }
    }
  }
}

std::string pointer_append(const std::string& pointer, std::string_view key) {
  std::string out = pointer;
  out += '/';
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string describe_value(const json& value) {
  switch (value.type()) {
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::null:
      return "null";
    default:
      break;
  }
  std::string text = dump_json(value, -1);
  if (text.size() > 48) text = text.substr(0, 45) + "...";
  return text;
}

void JsonReader::fail_at(const std::string& pointer, std::string what, std::string fix) {
  if (error_) return;
  std::string where = source_;
  if (!pointer.empty()) where += ": " + pointer;
  error_ = make_error(ErrorCode::parse_error, std::move(where), std::move(what), std::move(fix));
}

void JsonReader::type_error(const std::string& pointer, const json& value, std::string_view expected, std::string fix) {
  fail_at(pointer, "expected " + std::string(expected) + ", got " + describe_value(value), std::move(fix));
}

bool JsonReader::object(const json& value, const std::string& pointer) {
  if (error_) return false;
  if (value.is_object()) return true;
  type_error(pointer, value, "an object", "see the schema in heapgate's documentation");
  return false;
}

bool JsonReader::array(const json& value, const std::string& pointer) {
  if (error_) return false;
  if (value.is_array()) return true;
  type_error(pointer, value, "an array", "write a JSON array, e.g. []");
  return false;
}

void JsonReader::only_keys(const json& object, const std::string& pointer,
                           std::initializer_list<std::string_view> allowed) {
  if (error_ || !object.is_object()) return;
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool known = false;
    for (std::string_view a : allowed) known = known || it.key() == a;
    if (known) continue;
    std::string list;
    for (std::string_view a : allowed) {
      if (!list.empty()) list += ", ";
      list += a;
    }
    fail_at(pointer_append(pointer, it.key()), "unknown key \"" + it.key() + "\"; expected one of " + list,
            "remove it or correct its spelling (a newer heapgate may have written it: upgrade)");
    return;
  }
}

const json* JsonReader::member(const json& object, const std::string& pointer, std::string_view key, bool required) {
  if (error_ || !object.is_object()) return nullptr;
  auto it = object.find(std::string(key));
  if (it != object.end()) return &*it;
  if (required) {
    fail_at(pointer_append(pointer, key), "required key \"" + std::string(key) + "\" is missing",
            "add it (see the schema in heapgate's documentation)");
  }
  return nullptr;
}

std::uint64_t JsonReader::u64(const json& value, const std::string& pointer) {
  if (error_) return 0;
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  std::string fix = "write a whole number >= 0";
  if (value.is_number_integer()) fix = "counts and sizes cannot be negative; re-record the value";
  if (value.is_number_float()) fix = "write a whole number below 2^64, without a fraction or exponent";
  if (value.is_string()) fix = "write the number without quotes";
  type_error(pointer, value, "an unsigned integer", std::move(fix));
  return 0;
}

std::int64_t JsonReader::i64(const json& value, const std::string& pointer) {
  if (error_) return 0;
  if (value.is_number_integer() && !value.is_number_unsigned()) return value.get<std::int64_t>();
  if (value.is_number_unsigned() &&
      value.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return static_cast<std::int64_t>(value.get<std::uint64_t>());
  }
  type_error(pointer, value, "an integer",
             value.is_string() ? "write the number without quotes" : "write a whole number");
  return 0;
}

int JsonReader::i32(const json& value, const std::string& pointer) {
  std::int64_t v = i64(value, pointer);
  if (error_) return 0;
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
    fail_at(pointer, "expected a 32-bit integer, got " + describe_value(value), "write a smaller number");
    return 0;
  }
  return static_cast<int>(v);
}

double JsonReader::number(const json& value, const std::string& pointer) {
  if (error_) return 0;
  if (value.is_number()) {
    double d = value.get<double>();
    if (std::isfinite(d)) return d;
  }
  type_error(pointer, value, "a number",
             value.is_string() ? "write the number without quotes (0.05, not \"5%\")" : "write a number, e.g. 0.05");
  return 0;
}

bool JsonReader::boolean(const json& value, const std::string& pointer) {
  if (error_) return false;
  if (value.is_boolean()) return value.get<bool>();
  type_error(pointer, value, "true or false", "write true or false without quotes");
  return false;
}

std::string JsonReader::string(const json& value, const std::string& pointer) {
  if (error_) return {};
  if (value.is_string()) return value.get<std::string>();
  type_error(pointer, value, "a string", "write the value in double quotes");
  return {};
}

std::vector<MetricName> JsonReader::metric_names(const json& value, const std::string& pointer) {
  std::vector<MetricName> out;
  if (!value.is_array()) {
    type_error(pointer, value, "a list of metric names", "write e.g. [\"allocations\", \"peak_bytes\"]");
    return out;
  }
  for (std::size_t i = 0; i < value.size() && ok(); ++i) {
    const std::string at = pointer + "/" + std::to_string(i);
    const std::string name = string(value[i], at);
    if (!ok()) break;
    auto metric = parse_metric_name(name);
    if (!metric) {
      fail_at(at, "unknown metric \"" + name + "\"; expected " + list_words(kMetricNameWords, " or "),
              "remove it or correct its spelling");
      break;
    }
    if (std::find(out.begin(), out.end(), *metric) == out.end()) out.push_back(*metric);
  }
  std::vector<MetricName> ordered;
  for (MetricName m : kMetricNames) {
    if (std::find(out.begin(), out.end(), m) != out.end()) ordered.push_back(m);
  }
  return ordered;
}

Metrics JsonReader::metrics(const json& value, const std::string& pointer,
                            const std::vector<MetricName>& not_measured) {
  Metrics m;
  if (!object(value, pointer)) return m;
  for (auto it = value.begin(); it != value.end() && ok(); ++it) {
    if (!parse_metric_name(it.key())) {
      fail_at(pointer_append(pointer, it.key()),
              "unknown metric \"" + it.key() + "\"; expected " + list_words(kMetricNameWords, " or "),
              "remove it or correct its spelling");
    }
  }
  for (MetricName name : kMetricNames) {
    const json* field = member(value, pointer, to_string(name), /*required=*/is_measured(not_measured, name));
    if (field != nullptr) get(m, name) = u64(*field, pointer_append(pointer, to_string(name)));
  }
  return m;
}

json metrics_to_json(const Metrics& metrics, const std::vector<MetricName>& not_measured) {
  json out = json::object();
  for (MetricName name : kMetricNames) {
    if (is_measured(not_measured, name)) out[std::string(to_string(name))] = get(metrics, name);
  }
  return out;
}

json metric_names_to_json(const std::vector<MetricName>& names) {
  json out = json::array();
  for (MetricName name : names) out.push_back(std::string(to_string(name)));
  return out;
}

void check_schema(JsonReader& reader, const json* schema, std::string_view expected, const std::string& pointer) {
  if (schema == nullptr || !reader.ok()) return;
  std::string found = reader.string(*schema, pointer);
  if (!reader.ok() || found == expected) return;
  // "heapgate.baseline/1": family "heapgate.baseline", version 1.
  std::string_view family = expected.substr(0, expected.rfind('/'));
  std::size_t slash = found.rfind('/');
  if (slash != std::string::npos && std::string_view(found).substr(0, slash) == family) {
    std::string version = found.substr(slash + 1);
    bool digits = !version.empty() && version.find_first_not_of("0123456789") == std::string::npos;
    if (digits && version.size() < 10 &&
        std::stoi(version) > std::stoi(std::string(expected.substr(family.size() + 1)))) {
      reader.fail_at(pointer,
                     "schema \"" + found + "\" is newer than this heapgate reads (\"" + std::string(expected) + "\")",
                     "upgrade heapgate, or re-record the file with this version");
      return;
    }
  }
  reader.fail_at(pointer, "expected schema \"" + std::string(expected) + "\", got \"" + found + "\"",
                 "this is not a " + std::string(family) + " file, or it is damaged; re-record it");
}

json call_sites_to_json(const std::vector<CallSite>& sites) {
  json out = json::array();
  for (const auto& c : sites) {
    out.push_back(
        json{{"allocations", c.allocations}, {"bytes", c.bytes}, {"function", c.function}, {"location", c.location}});
  }
  return out;
}

json thread_share_to_json(const ThreadShare& share, bool with_scheduling) {
  json out{{"allocations", share.allocations}, {"bytes", share.bytes}};
  if (!with_scheduling) return out;
  if (share.switches > 0) out["switches"] = share.switches;
  if (share.own_waits > 0) out["own_waits"] = share.own_waits;
  return out;
}

AllocationCount read_allocation_count(JsonReader& r, const json& value, const std::string& pointer) {
  AllocationCount out;
  if (!r.object(value, pointer)) return out;
  r.only_keys(value, pointer, {"allocations", "bytes"});
  if (const json* f = r.member(value, pointer, "allocations", true)) {
    out.allocations = r.u64(*f, pointer_append(pointer, "allocations"));
  }
  if (const json* f = r.member(value, pointer, "bytes", true)) out.bytes = r.u64(*f, pointer_append(pointer, "bytes"));
  return out;
}

ThreadShare read_thread_share(JsonReader& r, const json& value, const std::string& pointer) {
  ThreadShare out;
  if (!r.object(value, pointer)) return out;
  r.only_keys(value, pointer, {"allocations", "bytes", "switches", "own_waits"});
  if (const json* f = r.member(value, pointer, "allocations", true))
    out.allocations = r.u64(*f, pointer_append(pointer, "allocations"));
  if (const json* f = r.member(value, pointer, "bytes", true)) out.bytes = r.u64(*f, pointer_append(pointer, "bytes"));
  if (const json* f = r.member(value, pointer, "switches", false)) {
    out.switches = r.u64(*f, pointer_append(pointer, "switches"));
  }
  if (const json* f = r.member(value, pointer, "own_waits", false)) {
    out.own_waits = r.u64(*f, pointer_append(pointer, "own_waits"));
  }
  return out;
}

Fingerprint read_fingerprint(JsonReader& r, const json& value, const std::string& pointer) {
  Fingerprint out;
  if (!r.object(value, pointer)) return out;
  for (auto it = value.begin(); it != value.end() && r.ok(); ++it) {
    out[it.key()] = r.string(it.value(), pointer_append(pointer, it.key()));
  }
  return out;
}

std::vector<CallSite> read_call_sites(JsonReader& r, const json& value, const std::string& pointer) {
  std::vector<CallSite> out;
  if (!r.array(value, pointer)) return out;
  for (std::size_t i = 0; i < value.size() && r.ok(); ++i) {
    const std::string p = pointer + "/" + std::to_string(i);
    const json& v = value[i];
    if (!r.object(v, p)) break;
    r.only_keys(v, p, {"allocations", "bytes", "function", "location"});
    CallSite c;
    if (const json* f = r.member(v, p, "function", true)) c.function = r.string(*f, pointer_append(p, "function"));
    if (const json* f = r.member(v, p, "location", false)) c.location = r.string(*f, pointer_append(p, "location"));
    if (const json* f = r.member(v, p, "allocations", true))
      c.allocations = r.u64(*f, pointer_append(p, "allocations"));
    if (const json* f = r.member(v, p, "bytes", true)) c.bytes = r.u64(*f, pointer_append(p, "bytes"));
    out.push_back(std::move(c));
  }
  return out;
}

NoiseBand read_noise_band(JsonReader& r, const json& value, const std::string& pointer) {
  NoiseBand band;
  if (!r.object(value, pointer)) return band;
  r.only_keys(value, pointer, {"high", "low", "runs"});
  if (const json* runs = r.member(value, pointer, "runs", true)) {
    band.runs = static_cast<std::uint32_t>(r.u64(*runs, pointer_append(pointer, "runs")));
  }
  if (const json* low = r.member(value, pointer, "low", true))
    band.low = r.metrics(*low, pointer_append(pointer, "low"));
  if (const json* high = r.member(value, pointer, "high", true)) {
    band.high = r.metrics(*high, pointer_append(pointer, "high"));
  }
  for (MetricName m : kMetricNames) {
    if (r.ok() && get(band.low, m) > get(band.high, m)) {
      r.fail_at(pointer_append(pointer_append(pointer, "low"), std::string(to_string(m))),
                "is above the band's high value", "low must not exceed high; re-run heapgate run --calibrate");
    }
  }
  return band;
}

}  // namespace heapgate::detail
