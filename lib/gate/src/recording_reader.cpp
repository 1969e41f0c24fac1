// SPDX-License-Identifier: MIT
// A recording's files (heapgate/recording.h): DIR/record.json, written by
// `heapgate record`, and DIR/<pid>/process.json, written by each process
// (lib/measure/src/process_recorder.cpp, without a JSON library: it runs in signal
// handlers).
#include "heapgate/recording.h"

#include <algorithm>
#include <filesystem>

#include "heapgate/process_json.h"
#include "heapgate/sys.h"
#include "json_fields.h"

namespace heapgate {

static_assert(std::string_view(kRecordedProcessSchema) == process_json::kSchema,
              "heapgate/recording.h and heapgate/process_json.h must name the same schema");

namespace {

using detail::json;
using detail::JsonReader;

constexpr const char* kFix = "record the program again with heapgate record";

std::string record_json_path(const std::string& dir) { return (std::filesystem::path(dir) / "record.json").string(); }

Result<json> read_json(const std::string& path) {
  auto text = sys::read_file(path);
  if (!text) return fail(text.error());
  return detail::parse_json_text(*text, path, kFix);
}

std::string optional_string(JsonReader& reader, const json& doc, std::string_view key) {
  const json* v = reader.member(doc, "", key, false);
  return v != nullptr ? reader.string(*v, "/" + std::string(key)) : std::string();
}

std::uint64_t optional_u64(JsonReader& reader, const json& doc, std::string_view key) {
  const json* v = reader.member(doc, "", key, false);
  return v != nullptr ? reader.u64(*v, "/" + std::string(key)) : 0;
}

Result<RecordedProcess> read_process(const std::string& process_dir, std::uint64_t pid) {
  RecordedProcess p;
  p.pid = pid;
  p.dir = process_dir;
  const std::string path = (std::filesystem::path(process_dir) / "process.json").string();
  if (!sys::exists(path)) return p;  // it ended without writing: ended stays ""
  auto doc = read_json(path);
  if (!doc) return fail(doc.error());
  JsonReader reader(path);
  if (!reader.object(*doc, "")) return fail(reader.error());
  namespace key = process_json;
  auto flag = [&](std::string_view field, bool& out) {
    if (const json* v = reader.member(*doc, "", field, false)) out = reader.boolean(*v, "/" + std::string(field));
  };
  detail::check_schema(reader, reader.member(*doc, "", key::schema, true), kRecordedProcessSchema, "/schema");
  p.pid = optional_u64(reader, *doc, key::pid);
  p.ppid = optional_u64(reader, *doc, key::ppid);
  p.exe = optional_string(reader, *doc, key::exe);
  p.mode = optional_string(reader, *doc, key::mode);
  p.ended = optional_string(reader, *doc, key::ended);
  p.signal = static_cast<int>(optional_u64(reader, *doc, key::signal));
  flag(key::counted, p.counted);
  p.allocations = optional_u64(reader, *doc, key::allocations);
  p.allocated_bytes = optional_u64(reader, *doc, key::allocated_bytes);
  p.live_allocations = optional_u64(reader, *doc, key::live_allocations);
  p.live_bytes = optional_u64(reader, *doc, key::live_bytes);
  p.peak_bytes = optional_u64(reader, *doc, key::peak_bytes);
  flag(key::peak_is_upper_bound, p.peak_is_upper_bound);
  p.peak_stacks_allocations = optional_u64(reader, *doc, key::peak_stacks_allocations);
  p.peak_stacks_bytes = optional_u64(reader, *doc, key::peak_stacks_bytes);
  p.snapshots = optional_u64(reader, *doc, key::snapshots);
  if (const json* v = reader.member(*doc, "", key::profiles, false); v != nullptr && reader.array(*v, "/profiles")) {
    for (std::size_t i = 0; i < v->size(); ++i) p.profiles.push_back(reader.string((*v)[i], "/profiles"));
  }
  p.not_exact = optional_string(reader, *doc, key::not_exact);
  p.not_counted = optional_string(reader, *doc, key::not_counted);
  p.not_written = optional_string(reader, *doc, key::not_written);
  if (!reader.ok()) return fail(reader.error());
  return p;
}

}  // namespace

bool is_recording(const std::string& dir) { return sys::exists(record_json_path(dir)); }

Result<void> write_recording_json(const Recording& r) {
  json doc = json::object();
  doc["schema"] = kRecordingSchema;
  doc["command"] = r.command;
  doc["mode"] = r.mode;
  doc["root_pid"] = r.root_pid;
  doc["exit_code"] = r.exit_code;
  doc["term_signal"] = r.term_signal;
  doc["snapshot_every_ms"] = r.snapshot_every_ms;
  json pids = json::array();
  for (const RecordedProcess& p : r.processes) pids.push_back(p.pid);
  doc["pids"] = pids;
  return sys::write_file_atomic(record_json_path(r.dir), detail::dump_json(doc, 2) + "\n");
}

Result<Recording> read_recording(const std::string& dir) {
  const std::string path = record_json_path(dir);
  if (!sys::exists(path)) {
    return fail(make_error(ErrorCode::parse_error, dir, "not a recording of heapgate record (no record.json in it)",
                           "pass the directory heapgate record -o DIR wrote"));
  }
  auto doc = read_json(path);
  if (!doc) return fail(doc.error());
  JsonReader reader(path);
  Recording r;
  r.dir = dir;
  if (!reader.object(*doc, "")) return fail(reader.error());
  detail::check_schema(reader, reader.member(*doc, "", "schema", true), kRecordingSchema, "/schema");
  if (const json* v = reader.member(*doc, "", "command", true); v != nullptr && reader.array(*v, "/command")) {
    for (std::size_t i = 0; i < v->size(); ++i) r.command.push_back(reader.string((*v)[i], "/command"));
  }
  r.mode = optional_string(reader, *doc, "mode");
  r.root_pid = optional_u64(reader, *doc, "root_pid");
  if (const json* v = reader.member(*doc, "", "exit_code", false)) r.exit_code = reader.i32(*v, "/exit_code");
  if (const json* v = reader.member(*doc, "", "term_signal", false)) r.term_signal = reader.i32(*v, "/term_signal");
  r.snapshot_every_ms = optional_u64(reader, *doc, "snapshot_every_ms");
  std::vector<std::uint64_t> pids;
  if (const json* v = reader.member(*doc, "", "pids", false); v != nullptr && reader.array(*v, "/pids")) {
    for (std::size_t i = 0; i < v->size(); ++i) pids.push_back(reader.u64((*v)[i], "/pids"));
  }
  if (!reader.ok()) return fail(reader.error());
  for (std::uint64_t pid : pids) {
    auto p = read_process((std::filesystem::path(dir) / std::to_string(pid)).string(), pid);
    if (!p) return fail(p.error());
    r.processes.push_back(std::move(*p));
  }
  return r;
}

}  // namespace heapgate
