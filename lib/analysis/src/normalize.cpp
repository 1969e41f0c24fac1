// SPDX-License-Identifier: MIT
// detail::Normalizer: interns frame names, expands inlined frames and applies normalize.h's
// dropping rules to build stack keys; normalize_profile() and ProfileNormalizer run it.
#include "heapgate/normalize.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "heapgate/frame_text.h"
#include "normalizer.h"

namespace heapgate {
namespace {

struct KeyHash {
  std::size_t operator()(const std::vector<std::uint32_t>& key) const noexcept {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (std::uint32_t v : key) h = (h ^ v) * 0x100000001b3ull;
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

std::string_view base_name(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

namespace detail {

Normalizer::Normalizer(const NormalizeOptions& options, Symbolizer& symbolizer)
    : options_(options), symbolizer_(symbolizer) {
  allocator_only_ = intern(kAllocatorOnlyFrame);
  framework_only_ = intern(kFrameworkOnlyFrame);
}

std::uint32_t Normalizer::intern(std::string_view name) {
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  auto id = static_cast<std::uint32_t>(names_.size());
  names_.push_back(symbolizer_.frame_name(name));
  ids_.emplace(names_.back().view(), id);  // views the shared text, which never moves
  return id;
}

bool Normalizer::matches_drop_pattern(std::string_view name) const {
  for (const std::string& pattern : options_.drop_frames) {
    if (!pattern.empty() && name.find(pattern) != std::string_view::npos) return true;
  }
  return false;
}

std::vector<std::uint32_t> Normalizer::ranks() const {
  // Order the distinct names once; stacks then compare by rank.
  std::vector<std::uint32_t> by_name(names_.size());
  std::iota(by_name.begin(), by_name.end(), 0u);
  std::sort(by_name.begin(), by_name.end(),
            [&](std::uint32_t a, std::uint32_t b) { return names_[a].str() < names_[b].str(); });
  std::vector<std::uint32_t> rank(names_.size());
  for (std::uint32_t r = 0; r < by_name.size(); ++r) rank[by_name[r]] = r;
  return rank;
}

Normalizer::Span Normalizer::expand(const Location& loc) {
  auto it = spans_.find(&loc);
  if (it != spans_.end()) return it->second;
  Span span{static_cast<std::uint32_t>(entries_.size()), 0};
  if (loc.frames.empty()) {
    std::string name;
    char hex[24];
    if (loc.module.empty()) {
      std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(loc.offset));
    } else {
      name = base_name(loc.module);
      std::snprintf(hex, sizeof hex, "+0x%llx", static_cast<unsigned long long>(loc.offset));
    }
    name += hex;
    FrameClass cls = detail::classify_unknown(loc.module);
    // jemalloc writes 0 where an unwinder gave up: not a frame of the program.
    if (loc.module.empty() && loc.offset == 0) cls = FrameClass::outer;
    if (matches_drop_pattern(name)) cls = FrameClass::dropped;
    entries_.push_back(Entry{intern(name), cls});
  } else {
    for (const SourceFrame& frame : loc.frames) {
      FrameClass cls = detail::classify_frame(frame.function, frame.file, loc.module);
      if (matches_drop_pattern(frame.function)) cls = FrameClass::dropped;
      std::uint32_t id;
      if (options_.with_lines && frame.line > 0 && !frame.file.empty()) {
        std::string location(base_name(frame.file));
        location += ':';
        location += std::to_string(frame.line);
        id = intern(join_frame(frame.function, location));
      } else {
        id = intern(frame.function);
      }
      entries_.push_back(Entry{id, cls});
    }
  }
  span.count = static_cast<std::uint32_t>(entries_.size()) - span.begin;
  spans_.emplace(&loc, span);
  return span;
}

// Applies the dropping rules documented in normalize.h to one expanded stack.
void Normalizer::key_of(const std::vector<Entry>& frames, std::vector<std::uint32_t>& key) const {
  key.clear();
  std::size_t end = frames.size();
  // 1. Nothing outward of the outermost main matters.
  for (std::size_t i = frames.size(); i-- > 0;) {
    if (frames[i].cls == FrameClass::main) {
      end = i + 1;
      break;
    }
  }
  bool has_gtest = false;
  for (std::size_t i = 0; i < end; ++i) has_gtest = has_gtest || frames[i].cls == FrameClass::gtest;
  auto dropped_anywhere = [](FrameClass c) {
    return c == FrameClass::heapgate || c == FrameClass::gtest || c == FrameClass::dropped;
  };
  // 3. The innermost run of allocator frames.
  std::size_t begin = 0;
  while (begin < end && (frames[begin].cls == FrameClass::allocator || dropped_anywhere(frames[begin].cls))) ++begin;
  // 4. The outermost run of start-up and thread-start frames.
  while (end > begin) {
    FrameClass c = frames[end - 1].cls;
    if (c == FrameClass::outer || dropped_anywhere(c) || (c == FrameClass::main && has_gtest)) {
      --end;
    } else {
      break;
    }
  }
  // 2. Framework frames anywhere.
  for (std::size_t i = begin; i < end; ++i) {
    if (!dropped_anywhere(frames[i].cls)) key.push_back(frames[i].id);
  }
  if (key.empty()) {
    bool all_allocator = !frames.empty();
    for (const Entry& e : frames) all_allocator = all_allocator && e.cls == FrameClass::allocator;
    key.push_back(all_allocator ? allocator_only_ : framework_only_);
  }
}

NormalizedProfile Normalizer::run(const Profile& profile) {
  NormalizedProfile out;
  out.sample_period = profile.sample_period;
  out.totals = profile.totals;

  // Key -> index into `stacks`; `keys` points at the map's own (stable) keys.
  std::unordered_map<std::vector<std::uint32_t>, std::size_t, KeyHash> index;
  index.reserve(profile.stacks.size());
  std::vector<const std::vector<std::uint32_t>*> keys;
  keys.reserve(profile.stacks.size());
  std::vector<NormalizedStack> stacks;
  stacks.reserve(profile.stacks.size());
  std::vector<Entry> frames;
  std::vector<std::uint32_t> key;
  symbolizer_.for_each_stack(profile, [&](std::size_t i, const std::vector<const Location*>& locations) {
    frames.clear();
    for (const Location* loc : locations) {
      const Span span = expand(*loc);
      frames.insert(frames.end(), entries_.begin() + span.begin, entries_.begin() + span.begin + span.count);
    }
    key_of(frames, key);
    auto found = index.find(key);
    if (found == index.end()) {
      found = index.emplace(key, stacks.size()).first;
      keys.push_back(&found->first);
      stacks.emplace_back();
    }
    NormalizedStack& stack = stacks[found->second];
    const StackRecord& record = profile.stacks[i];
    stack.counts += record.counts;
    const ScaledCounts scaled = unsample(record.counts, profile.sample_period);
    stack.scaled += scaled;
    out.scaled_totals += scaled;
  });

  // Sort by key text: compare name ranks, of the names these keys use only
  // (one Normalizer may have met many more in earlier profiles).
  std::vector<std::uint32_t> used;
  for (const std::vector<std::uint32_t>* k : keys) used.insert(used.end(), k->begin(), k->end());
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  std::sort(used.begin(), used.end(),
            [&](std::uint32_t a, std::uint32_t b) { return names_[a].str() < names_[b].str(); });
  std::vector<std::uint32_t>& rank = rank_scratch_;
  rank.resize(names_.size());
  for (std::uint32_t r = 0; r < used.size(); ++r) rank[used[r]] = r;
  std::vector<std::size_t> order(stacks.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::lexicographical_compare(keys[a]->begin(), keys[a]->end(), keys[b]->begin(), keys[b]->end(),
                                        [&](std::uint32_t x, std::uint32_t y) { return rank[x] < rank[y]; });
  });

  out.stacks.reserve(stacks.size());
  for (std::size_t i : order) {
    NormalizedStack& stack = stacks[i];
    stack.frames.reserve(keys[i]->size());
    for (std::uint32_t id : *keys[i]) stack.frames.push_back(names_[id]);
    out.stacks.push_back(std::move(stack));
  }
  return out;
}

}  // namespace detail

NormalizedProfile normalize_profile(const Profile& profile, Symbolizer& symbolizer, const NormalizeOptions& options) {
  return detail::Normalizer(options, symbolizer).run(profile);
}

ProfileNormalizer::ProfileNormalizer(Symbolizer& symbolizer, NormalizeOptions options)
    : symbolizer_(symbolizer),
      options_(std::move(options)),
      normalizer_(std::make_unique<detail::Normalizer>(options_, symbolizer_)) {}

ProfileNormalizer::~ProfileNormalizer() = default;

NormalizedProfile ProfileNormalizer::normalize(const Profile& profile) { return normalizer_->run(profile); }

}  // namespace heapgate
