// SPDX-License-Identifier: MIT
// without_allocator_frames() (heapgate/allocator_frames.h): drops each record's innermost run of
// allocator frames, steps the new first address back onto the call, merges records now equal.
#include "heapgate/allocator_frames.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "frame_class.h"

namespace heapgate {
namespace {

// A Location with inlined code is the allocator's only if every function in
// it is: a user function with std::allocator inlined into it stays. heapgate's
// own code inlined into an allocator function (its allocation entry points,
// lib/measure/src/entry_points.cpp) is part of the allocator's path.
bool allocator_location(const Location& location) {
  if (!location.known()) return detail::classify_unknown(location.module) == detail::FrameClass::allocator;
  bool allocator = false;
  for (const SourceFrame& frame : location.frames) {
    const detail::FrameClass cls = detail::classify_frame(frame.function, frame.file, location.module);
    if (cls == detail::FrameClass::allocator) {
      allocator = true;
    } else if (cls != detail::FrameClass::heapgate) {
      return false;
    }
  }
  return allocator;
}

void merge_record(StackRecord& into, const StackRecord& more) {
  into.counts += more.counts;
  for (const ThreadCounts& thread : more.threads) {
    auto same = std::find_if(into.threads.begin(), into.threads.end(),
                             [&](const ThreadCounts& t) { return t.thread_uid == thread.thread_uid; });
    if (same == into.threads.end()) {
      into.threads.push_back(thread);
    } else {
      same->counts += thread.counts;
    }
  }
}

}  // namespace

Profile without_allocator_frames(const Profile& profile, Symbolizer& symbolizer, AllocatorFramesDropped* dropped) {
  Profile out;
  out.sample_period = profile.sample_period;
  out.totals = profile.totals;
  out.threads = profile.threads;
  out.mappings = profile.mappings;
  out.maps_text = profile.maps_text;
  AllocatorFramesDropped counted;
  std::map<std::vector<std::uint64_t>, std::size_t> index_of;
  symbolizer.for_each_stack(profile, [&](std::size_t i, const std::vector<const Location*>& locations) {
    const StackRecord& record = profile.stacks[i];
    std::size_t skip = 0;
    while (skip < locations.size() && allocator_location(*locations[skip])) ++skip;
    StackRecord trimmed;
    if (skip == 0 || skip == record.frames.size()) {
      trimmed = record;
    } else {
      trimmed.frames.assign(record.frames.begin() + static_cast<std::ptrdiff_t>(skip), record.frames.end());
      if (trimmed.frames.front() != 0) trimmed.frames.front() -= 1;
      trimmed.counts = record.counts;
      trimmed.threads = record.threads;
      counted.frames += skip;
    }
    auto [it, inserted] = index_of.emplace(trimmed.frames, out.stacks.size());
    if (inserted) {
      out.stacks.push_back(std::move(trimmed));
    } else {
      merge_record(out.stacks[it->second], trimmed);
      ++counted.records_merged;
    }
  });
  if (dropped != nullptr) *dropped = counted;
  return out;
}

}  // namespace heapgate
