// SPDX-License-Identifier: MIT
// heapgate's profiles and diffs as pprof's profile.proto (proto/profile.proto),
// through the protobuf classes protoc generates from it, gzipped with zlib.
#include "heapgate/pprof.h"

#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "heapgate/allocator_frames.h"
#include "profile.pb.h"

namespace heapgate {
namespace {

namespace pb = perftools::profiles;

// string_table with index 0 = "", as the format requires.
class StringTable {
 public:
  explicit StringTable(pb::Profile& profile) : profile_(profile) { index(""); }
  std::int64_t index(std::string_view text) {
    auto it = ids_.find(std::string(text));
    if (it != ids_.end()) return it->second;
    auto id = static_cast<std::int64_t>(profile_.string_table_size());
    profile_.add_string_table(std::string(text));
    ids_.emplace(std::string(text), id);
    return id;
  }

 private:
  pb::Profile& profile_;
  std::unordered_map<std::string, std::int64_t> ids_;
};

void add_sample_type(pb::Profile& profile, StringTable& strings, std::string_view type, std::string_view unit) {
  pb::ValueType* v = profile.add_sample_type();
  v->set_type(strings.index(type));
  v->set_unit(strings.index(unit));
}

std::int64_t rounded(double value) { return std::isfinite(value) ? std::llround(value) : 0; }

std::string hex(std::uint64_t value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

std::string_view base_name(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

Result<std::string> gzipped(const pb::Profile& profile) {
  std::string raw;
  if (!profile.SerializeToString(&raw)) {
    return fail(make_error(ErrorCode::io_error, "pprof", "protobuf could not serialize the profile",
                           "report this as a heapgate bug"));
  }
  z_stream z{};
  // 15 + 16: a gzip header and trailer around deflate, as pprof reads.
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return fail(make_error(ErrorCode::io_error, "pprof", "zlib could not start compressing", "check free memory"));
  }
  std::string out(deflateBound(&z, static_cast<uLong>(raw.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(raw.data());
  z.avail_in = static_cast<uInt>(raw.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int status = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (status != Z_STREAM_END) {
    return fail(make_error(ErrorCode::io_error, "pprof", "zlib could not compress the profile", "check free memory"));
  }
  return out;
}

// Functions by (name, file), so inlined copies of one function share an id.
class Functions {
 public:
  Functions(pb::Profile& profile, StringTable& strings) : profile_(profile), strings_(strings) {}
  std::uint64_t id(std::string_view name, std::string_view file) {
    auto key = std::make_pair(std::string(name), std::string(file));
    auto it = ids_.find(key);
    if (it != ids_.end()) return it->second;
    pb::Function* f = profile_.add_function();
    const auto id = static_cast<std::uint64_t>(profile_.function_size());
    f->set_id(id);
    f->set_name(strings_.index(name));
    f->set_system_name(strings_.index(name));
    f->set_filename(strings_.index(file));
    ids_.emplace(std::move(key), id);
    return id;
  }

 private:
  pb::Profile& profile_;
  StringTable& strings_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> ids_;
};

}  // namespace

bool pprof_supported() noexcept { return true; }

Result<std::string> to_pprof(const Profile& source, Symbolizer& symbolizer, const PprofOptions& options) {
  Profile trimmed;
  if (options.drop_allocator_frames) trimmed = without_allocator_frames(source, symbolizer);
  const Profile& profile = options.drop_allocator_frames ? trimmed : source;

  pb::Profile out;
  StringTable strings(out);
  bool accumulated = false;
  for (const StackRecord& record : profile.stacks) {
    if (record.counts.accum_objects != 0 || record.counts.accum_bytes != 0) accumulated = true;
  }
  if (accumulated) {
    add_sample_type(out, strings, "alloc_objects", "count");
    add_sample_type(out, strings, "alloc_space", "bytes");
  }
  add_sample_type(out, strings, "inuse_objects", "count");
  add_sample_type(out, strings, "inuse_space", "bytes");
  out.set_default_sample_type(strings.index("inuse_space"));
  out.mutable_period_type()->set_type(strings.index("space"));
  out.mutable_period_type()->set_unit(strings.index("bytes"));
  out.set_period(static_cast<std::int64_t>(profile.sample_period));
  if (!options.comment.empty()) out.add_comment(strings.index(options.comment));

  Functions functions(out, strings);
  std::map<const Mapping*, pb::Mapping*> mappings;
  std::unordered_map<std::uint64_t, std::uint64_t> locations;  // looked-up address -> Location id
  auto mapping_for = [&](std::uint64_t address, const Location& where) -> std::uint64_t {
    const Mapping* m = profile.find_mapping(address);
    if (m == nullptr) return 0;
    auto it = mappings.find(m);
    if (it == mappings.end()) {
      pb::Mapping* pm = out.add_mapping();
      pm->set_id(static_cast<std::uint64_t>(out.mapping_size()));
      pm->set_memory_start(m->start);
      pm->set_memory_limit(m->end);
      pm->set_file_offset(m->offset);
      pm->set_filename(strings.index(m->path));
      it = mappings.emplace(m, pm).first;
    }
    pb::Mapping* pm = it->second;
    if (pm->build_id() == 0 && !where.build_id.empty()) pm->set_build_id(strings.index(where.build_id));
    if (where.known()) {
      pm->set_has_functions(true);
      if (!where.frames.front().file.empty()) pm->set_has_filenames(true);
      if (where.frames.front().line != 0) pm->set_has_line_numbers(true);
      if (where.frames.size() > 1) pm->set_has_inline_frames(true);
    }
    return pm->id();
  };
  auto location_for = [&](std::uint64_t address, const Location& where) -> std::uint64_t {
    auto it = locations.find(address);
    if (it != locations.end()) return it->second;
    pb::Location* loc = out.add_location();
    const auto id = static_cast<std::uint64_t>(out.location_size());
    loc->set_id(id);
    loc->set_address(address);
    loc->set_mapping_id(mapping_for(address, where));
    if (where.known()) {
      for (const SourceFrame& frame : where.frames) {
        pb::Line* line = loc->add_line();
        line->set_function_id(functions.id(frame.function, frame.file));
        line->set_line(frame.line);
      }
    } else {
      std::string name =
          where.module.empty() ? hex(address) : std::string(base_name(where.module)) + "+" + hex(where.offset);
      loc->add_line()->set_function_id(functions.id(name, ""));
    }
    locations.emplace(address, id);
    return id;
  };

  symbolizer.for_each_stack(profile, [&](std::size_t index, const std::vector<const Location*>& where) {
    const StackRecord& record = profile.stacks[index];
    pb::Sample* sample = out.add_sample();
    for (std::size_t i = 0; i < record.frames.size() && i < where.size(); ++i) {
      // The innermost frame is an exact address; the others are return
      // addresses, looked up one byte earlier (inside the call).
      std::uint64_t address = record.frames[i];
      if (i > 0 && address != 0) address -= 1;
      sample->add_location_id(location_for(address, *where[i]));
    }
    ScaledCounts scaled = unsample(record.counts, profile.sample_period);
    if (accumulated) {
      sample->add_value(rounded(scaled.accum_objects));
      sample->add_value(rounded(scaled.accum_bytes));
    }
    sample->add_value(rounded(scaled.live_objects));
    sample->add_value(rounded(scaled.live_bytes));
  });
  return gzipped(out);
}

Result<std::string> to_pprof(const ProfileDiff& diff, const std::string& comment) {
  pb::Profile out;
  StringTable strings(out);
  add_sample_type(out, strings, "alloc_objects", "count");
  add_sample_type(out, strings, "alloc_space", "bytes");
  add_sample_type(out, strings, "inuse_objects", "count");
  add_sample_type(out, strings, "inuse_space", "bytes");
  out.set_default_sample_type(strings.index("inuse_space"));
  if (!comment.empty()) out.add_comment(strings.index(comment));
  Functions functions(out, strings);
  std::unordered_map<std::string, std::uint64_t> locations;
  for (const StackDelta& entry : diff.entries) {
    pb::Sample* sample = out.add_sample();
    for (const FrameName& frame : entry.frames) {
      auto it = locations.find(frame.str());
      if (it == locations.end()) {
        pb::Location* loc = out.add_location();
        loc->set_id(static_cast<std::uint64_t>(out.location_size()));
        loc->add_line()->set_function_id(functions.id(frame.view(), ""));
        it = locations.emplace(frame.str(), loc->id()).first;
      }
      sample->add_location_id(it->second);
    }
    sample->add_value(rounded(entry.delta.accum_objects));
    sample->add_value(rounded(entry.delta.accum_bytes));
    sample->add_value(rounded(entry.delta.live_objects));
    sample->add_value(rounded(entry.delta.live_bytes));
  }
  return gzipped(out);
}

}  // namespace heapgate
