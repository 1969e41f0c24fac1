// SPDX-License-Identifier: MIT
// The fields of DIR/<pid>/process.json, the file each process of a `heapgate
// record` writes as it ends (measure: process_recorder.cpp) and the command
// reads back (gate: recording_reader.cpp). Spelled once, here, so the writer
// and the reader cannot drift apart.
#pragma once

#include <string_view>

namespace heapgate::process_json {

inline constexpr std::string_view kSchema = "heapgate.record.process/1";

inline constexpr std::string_view schema = "schema";
inline constexpr std::string_view pid = "pid";
inline constexpr std::string_view ppid = "ppid";
inline constexpr std::string_view exe = "exe";
inline constexpr std::string_view mode = "mode";    ///< "exact" or "counters"
inline constexpr std::string_view ended = "ended";  ///< "exit" or "signal"
inline constexpr std::string_view signal = "signal";
inline constexpr std::string_view counted = "counted";
inline constexpr std::string_view allocations = "allocations";
inline constexpr std::string_view allocated_bytes = "allocated_bytes";
inline constexpr std::string_view live_allocations = "live_allocations";
inline constexpr std::string_view live_bytes = "live_bytes";
inline constexpr std::string_view peak_bytes = "peak_bytes";
inline constexpr std::string_view peak_is_upper_bound = "peak_is_upper_bound";
inline constexpr std::string_view peak_stacks_allocations = "peak_stacks_allocations";
inline constexpr std::string_view peak_stacks_bytes = "peak_stacks_bytes";
inline constexpr std::string_view snapshots = "snapshots";
inline constexpr std::string_view profiles = "profiles";
inline constexpr std::string_view not_exact = "not_exact";
inline constexpr std::string_view not_counted = "not_counted";
inline constexpr std::string_view not_written = "not_written";

}  // namespace heapgate::process_json
