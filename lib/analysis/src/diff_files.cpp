// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "heapgate/diff_files.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <unordered_map>
#include <vector>

#include "heapgate/profile_records.h"
#include "heapgate/symbols_sidecar.h"
#include "normalizer.h"

namespace heapgate {
namespace {

using detail::Normalizer;

// One profile's stacks by key. A key is a run of name ids in `ids`, stored
// once: the index below finds keys there instead of keeping copies.
struct KeyedStacks {
  struct Stack {
    std::uint32_t begin = 0;
    std::uint32_t count = 0;
    ScaledCounts scaled;
  };
  std::uint64_t sample_period = 1;
  Counts totals;
  ScaledCounts scaled_totals;
  std::vector<std::uint32_t> ids;
  std::vector<Stack> stacks;

  const std::uint32_t* key(const Stack& s) const { return ids.data() + s.begin; }
};

// Open addressing over KeyedStacks::stacks (linear probing, at most half full).
class KeyIndex {
 public:
  explicit KeyIndex(KeyedStacks& out) : out_(out), slots_(1024, kEmpty) {}

  // The index of the stack with `key`, added (with zero counts) if new.
  std::uint32_t find_or_add(const std::vector<std::uint32_t>& key) {
    const std::uint64_t h = hash(key.data(), key.size());
    for (std::size_t at = h & (slots_.size() - 1);; at = (at + 1) & (slots_.size() - 1)) {
      const std::uint32_t s = slots_[at];
      if (s == kEmpty) break;
      const KeyedStacks::Stack& stack = out_.stacks[s];
      if (hashes_[s] == h && stack.count == key.size() &&
          std::equal(key.begin(), key.end(), out_.key(stack))) {
        return s;
      }
    }
    const auto s = static_cast<std::uint32_t>(out_.stacks.size());
    out_.stacks.push_back(
        KeyedStacks::Stack{static_cast<std::uint32_t>(out_.ids.size()), static_cast<std::uint32_t>(key.size()), {}});
    out_.ids.insert(out_.ids.end(), key.begin(), key.end());
    hashes_.push_back(h);
    if (2 * out_.stacks.size() > slots_.size()) {
      std::fill(slots_.begin(), slots_.end(), kEmpty);
      slots_.resize(2 * slots_.size(), kEmpty);
      for (std::uint32_t i = 0; i < out_.stacks.size(); ++i) place(i);
    } else {
      place(s);
    }
    return s;
  }

 private:
  static constexpr std::uint32_t kEmpty = 0xffffffffu;

  static std::uint64_t hash(const std::uint32_t* key, std::size_t n) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (std::size_t i = 0; i < n; ++i) h = (h ^ key[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
  }
  void place(std::uint32_t s) {
    std::size_t at = hashes_[s] & (slots_.size() - 1);
    while (slots_[at] != kEmpty) at = (at + 1) & (slots_.size() - 1);
    slots_[at] = s;
  }

  KeyedStacks& out_;
  std::vector<std::uint32_t> slots_;
  std::vector<std::uint64_t> hashes_;  // per stack
};

// Reads one profile into keyed stacks, as normalize_profile() keys it.
Result<KeyedStacks> keyed_stacks(const std::string& path, Symbolizer& symbolizer, Normalizer& normalizer) {
  // The maps section comes last in the file, so records wait as runs of
  // address ids; each distinct address is then symbolized once.
  std::unordered_map<std::uint64_t, std::uint32_t> address_ids;
  std::vector<std::uint64_t> addresses;  // id -> the address looked up
  std::vector<std::uint32_t> frames;     // every record's address ids, in order
  struct Record {
    std::uint32_t frames = 0;
    Counts counts;
  };
  std::vector<Record> records;
  auto profile = read_profile_records(path, [&](const StackRecord& record) {
    for (std::size_t i = 0; i < record.frames.size(); ++i) {
      // Looked up as Symbolizer::for_each_stack does: return addresses less one.
      std::uint64_t address = record.frames[i];
      if (i > 0 && address > 0) --address;
      auto [it, added] = address_ids.try_emplace(address, static_cast<std::uint32_t>(addresses.size()));
      if (added) addresses.push_back(address);
      frames.push_back(it->second);
    }
    records.push_back(Record{static_cast<std::uint32_t>(record.frames.size()), record.counts});
  });
  if (!profile) return fail(std::move(profile.error()));
  // Through the profile's symbols sidecar; a profile of a since rebuilt
  // binary without one is refused rather than misread.
  if (auto ready = prepare_symbols(path, *profile, symbolizer); !ready) return fail(std::move(ready.error()));

  std::vector<Normalizer::Span> spans(addresses.size());
  for (std::size_t id = 0; id < addresses.size(); ++id) {
    spans[id] = normalizer.expand(symbolizer.symbolize(*profile, addresses[id], AddressKind::exact));
  }
  const std::vector<Normalizer::Entry>& entries = normalizer.entries();

  KeyedStacks out;
  out.sample_period = profile->sample_period;
  out.totals = profile->totals;
  out.stacks.reserve(records.size());
  KeyIndex index(out);
  std::vector<Normalizer::Entry> expanded;
  std::vector<std::uint32_t> key;
  std::size_t at = 0;
  for (const Record& record : records) {
    expanded.clear();
    for (std::uint32_t k = 0; k < record.frames; ++k) {
      const Normalizer::Span span = spans[frames[at + k]];
      expanded.insert(expanded.end(), entries.begin() + span.begin, entries.begin() + span.begin + span.count);
    }
    at += record.frames;
    normalizer.key_of(expanded, key);
    KeyedStacks::Stack& stack = out.stacks[index.find_or_add(key)];
    // Summed in record order, as normalize_profile() does: same doubles.
    const ScaledCounts scaled = unsample(record.counts, out.sample_period);
    stack.scaled += scaled;
    out.scaled_totals += scaled;
  }
  return out;
}

// Stack indices of `side` in key order (by the text of the names).
std::vector<std::uint32_t> key_order(const KeyedStacks& side, const std::vector<std::uint32_t>& rank) {
  std::vector<std::uint32_t> order(side.stacks.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const KeyedStacks::Stack& x = side.stacks[a];
    const KeyedStacks::Stack& y = side.stacks[b];
    return std::lexicographical_compare(side.key(x), side.key(x) + x.count, side.key(y), side.key(y) + y.count,
                                        [&](std::uint32_t p, std::uint32_t q) { return rank[p] < rank[q]; });
  });
  return order;
}

bool same_counts(const ScaledCounts& a, const ScaledCounts& b) {
  // diff_profiles' own test for "unchanged": every difference is zero.
  return a.live_objects - b.live_objects == 0 && a.live_bytes - b.live_bytes == 0 &&
         a.accum_objects - b.accum_objects == 0 && a.accum_bytes - b.accum_bytes == 0;
}

}  // namespace

Result<ProfileDiff> diff_profile_files(const std::string& base_path, const std::string& current_path,
                                       Symbolizer& symbolizer, const NormalizeOptions& options) {
  // One Normalizer for both: one id per distinct name, so equal keys are equal id runs.
  Normalizer normalizer(options, symbolizer);
  auto base = keyed_stacks(base_path, symbolizer, normalizer);
  if (!base) return fail(std::move(base.error()));
  auto current = keyed_stacks(current_path, symbolizer, normalizer);
  if (!current) return fail(std::move(current.error()));

  // Stacks on both sides with unchanged counts are counted here and never
  // spelled out; the rest go through diff_profiles() itself, in key order.
  const std::vector<std::uint32_t> rank = normalizer.ranks();
  const std::vector<std::uint32_t> b = key_order(*base, rank);
  const std::vector<std::uint32_t> c = key_order(*current, rank);
  NormalizedProfile changed_base;
  NormalizedProfile changed_current;
  for (auto* side : {&changed_base, &changed_current}) {
    const KeyedStacks& from = side == &changed_base ? *base : *current;
    side->sample_period = from.sample_period;
    side->totals = from.totals;
    side->scaled_totals = from.scaled_totals;
  }
  auto spell = [&](NormalizedProfile& to, const KeyedStacks& from, std::uint32_t s) {
    const KeyedStacks::Stack& stack = from.stacks[s];
    NormalizedStack& out = to.stacks.emplace_back();
    out.frames.reserve(stack.count);
    for (std::uint32_t k = 0; k < stack.count; ++k) out.frames.push_back(normalizer.name(from.key(stack)[k]));
    out.scaled = stack.scaled;
  };
  auto compare = [&](std::uint32_t x, std::uint32_t y) {
    const KeyedStacks::Stack& p = base->stacks[x];
    const KeyedStacks::Stack& q = current->stacks[y];
    const std::uint32_t n = std::min(p.count, q.count);
    for (std::uint32_t k = 0; k < n; ++k) {
      const std::uint32_t rp = rank[base->key(p)[k]];
      const std::uint32_t rq = rank[current->key(q)[k]];
      if (rp != rq) return rp < rq ? -1 : 1;
    }
    return p.count == q.count ? 0 : (p.count < q.count ? -1 : 1);
  };
  std::size_t unchanged = 0;
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < b.size() || j < c.size()) {
    const int order = i == b.size() ? 1 : j == c.size() ? -1 : compare(b[i], c[j]);
    if (order < 0) {
      spell(changed_base, *base, b[i++]);
    } else if (order > 0) {
      spell(changed_current, *current, c[j++]);
    } else if (same_counts(current->stacks[c[j]].scaled, base->stacks[b[i]].scaled)) {
      ++unchanged;
      ++i;
      ++j;
    } else {
      spell(changed_base, *base, b[i++]);
      spell(changed_current, *current, c[j++]);
    }
  }
  base = {};
  current = {};
  ProfileDiff diff = diff_profiles(changed_base, changed_current);
  diff.unchanged_stacks += unchanged;
  return diff;
}

}  // namespace heapgate
