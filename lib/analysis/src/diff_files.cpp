// SPDX-License-Identifier: MIT
// diff_profile_files() (heapgate/diff_files.h): reads records as interned address ids, symbolizes
// each address once, keys stacks as runs of name ids and spells out only the stacks that changed.
#include "heapgate/diff_files.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <system_error>
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

  static constexpr std::uint32_t kNone = 0xffffffffu;

  // The index of the stack with key [key, key + n), or kNone.
  std::uint32_t find(const std::uint32_t* key, std::size_t n) const { return find(key, n, hash(key, n)); }

  // The index of the stack with `key`, added (with zero counts) if new.
  std::uint32_t find_or_add(const std::vector<std::uint32_t>& key) {
    const std::uint64_t h = hash(key.data(), key.size());
    if (const std::uint32_t found = find(key.data(), key.size(), h); found != kNone) return found;
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
  static constexpr std::uint32_t kEmpty = kNone;

  std::uint32_t find(const std::uint32_t* key, std::size_t n, std::uint64_t h) const {
    for (std::size_t at = h & (slots_.size() - 1);; at = (at + 1) & (slots_.size() - 1)) {
      const std::uint32_t s = slots_[at];
      if (s == kEmpty) return kNone;
      const KeyedStacks::Stack& stack = out_.stacks[s];
      if (hashes_[s] == h && stack.count == n && std::equal(key, key + n, out_.key(stack))) return s;
    }
  }

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

// Address -> dense id (open addressing, at most half full): a profile's
// frames repeat a few thousand addresses hundreds of thousands of times.
class AddressIds {
 public:
  AddressIds() : slots_(1024, kEmpty) {}

  std::uint32_t id(std::uint64_t address) {
    std::size_t at = slot(address);
    for (; slots_[at] != kEmpty; at = (at + 1) & (slots_.size() - 1)) {
      if (addresses_[slots_[at]] == address) return slots_[at];
    }
    const auto id = static_cast<std::uint32_t>(addresses_.size());
    addresses_.push_back(address);
    if (2 * addresses_.size() > slots_.size()) {
      std::fill(slots_.begin(), slots_.end(), kEmpty);
      slots_.resize(2 * slots_.size(), kEmpty);
      for (std::uint32_t i = 0; i < addresses_.size(); ++i) place(i);
    } else {
      slots_[at] = id;
    }
    return id;
  }
  /// id -> address, in order of first appearance.
  const std::vector<std::uint64_t>& addresses() const { return addresses_; }

 private:
  static constexpr std::uint32_t kEmpty = 0xffffffffu;
  std::size_t slot(std::uint64_t address) const {
    return static_cast<std::size_t>((address * 0x9e3779b97f4a7c15ull) >> 32) & (slots_.size() - 1);
  }
  void place(std::uint32_t id) {
    std::size_t at = slot(addresses_[id]);
    while (slots_[at] != kEmpty) at = (at + 1) & (slots_.size() - 1);
    slots_[at] = id;
  }

  std::vector<std::uint32_t> slots_;
  std::vector<std::uint64_t> addresses_;
};

// Reads one profile into `out` (and its `index`), keyed as normalize_profile() keys it.
// `profile` (the caller's, alive until the symbolizer is done with it) gets
// everything but the records: Symbolizer::set_known keys a sidecar's
// addresses by the Profile's address, which must not be reused by the other
// side's Profile.
Result<void> keyed_stacks(const std::string& path, Symbolizer& symbolizer, Normalizer& normalizer, Profile& profile,
                          KeyedStacks& out, KeyIndex& index) {
  // The maps section comes last in the file, so records wait as runs of
  // address ids; each distinct address is then symbolized once.
  AddressIds address_ids;
  std::vector<std::uint32_t> frames;  // every record's address ids, in order
  struct Record {
    std::uint32_t frames = 0;
    Counts counts;
  };
  std::vector<Record> records;
  // A frame takes at least 8 bytes of text (" 0x" and jemalloc's addresses);
  // reserving by the file's size spares the growth copies and their page
  // faults, and the capacity never used is never touched.
  std::error_code size_error;
  const std::uintmax_t file_size = std::filesystem::file_size(path, size_error);
  if (!size_error) {
    frames.reserve(static_cast<std::size_t>(std::min<std::uintmax_t>(file_size / 8, 1u << 28)));
    // Records run to hundreds of bytes (tens of frames); more than this just grow.
    records.reserve(static_cast<std::size_t>(std::min<std::uintmax_t>(file_size / 256, 1u << 24)));
  }
  auto read = read_profile_records(path, [&](const StackRecord& record) {
    for (std::size_t i = 0; i < record.frames.size(); ++i) {
      // Looked up as Symbolizer::for_each_stack does: return addresses less one.
      std::uint64_t address = record.frames[i];
      if (i > 0 && address > 0) --address;
      frames.push_back(address_ids.id(address));
    }
    records.push_back(Record{static_cast<std::uint32_t>(record.frames.size()), record.counts});
  });
  if (!read) return fail(std::move(read.error()));
  profile = std::move(*read);
  // Through the profile's symbols sidecar; a profile of a since rebuilt
  // binary without one is refused rather than misread.
  if (auto ready = prepare_symbols(path, profile, symbolizer); !ready) return fail(std::move(ready.error()));

  const std::vector<std::uint64_t>& addresses = address_ids.addresses();
  std::vector<Normalizer::Span> spans(addresses.size());
  for (std::size_t id = 0; id < addresses.size(); ++id) {
    spans[id] = normalizer.expand(symbolizer.symbolize(profile, addresses[id], AddressKind::exact));
  }
  const std::vector<Normalizer::Entry>& entries = normalizer.entries();

  out.sample_period = profile.sample_period;
  out.totals = profile.totals;
  out.stacks.reserve(records.size());
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
  return {};
}

// Sorts stack indices of `side` into key order (by the text of the names).
void sort_by_key(std::vector<std::uint32_t>& order, const KeyedStacks& side, const std::vector<std::uint32_t>& rank) {
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const KeyedStacks::Stack& x = side.stacks[a];
    const KeyedStacks::Stack& y = side.stacks[b];
    return std::lexicographical_compare(side.key(x), side.key(x) + x.count, side.key(y), side.key(y) + y.count,
                                        [&](std::uint32_t p, std::uint32_t q) { return rank[p] < rank[q]; });
  });
}

}  // namespace

Result<ProfileDiff> diff_profile_files(const std::string& base_path, const std::string& current_path,
                                       Symbolizer& symbolizer, const NormalizeOptions& options) {
  // One Normalizer for both: one id per distinct name, so equal keys are equal id runs.
  Normalizer normalizer(options, symbolizer);
  Profile base_profile;
  KeyedStacks base;
  KeyIndex base_index(base);
  if (auto read = keyed_stacks(base_path, symbolizer, normalizer, base_profile, base, base_index); !read) {
    return fail(std::move(read.error()));
  }
  Profile current_profile;
  KeyedStacks current;
  KeyIndex current_index(current);
  if (auto read = keyed_stacks(current_path, symbolizer, normalizer, current_profile, current, current_index); !read) {
    return fail(std::move(read.error()));
  }

  // Stacks on both sides with unchanged counts (found by key, not by a sort)
  // are counted here and never spelled out; the rest go through
  // diff_profiles() itself, in key order.
  std::size_t unchanged = 0;
  std::vector<std::uint32_t> changed_b;
  std::vector<std::uint32_t> changed_c;
  std::vector<bool> matched(current.stacks.size(), false);
  for (std::uint32_t s = 0; s < base.stacks.size(); ++s) {
    const KeyedStacks::Stack& stack = base.stacks[s];
    const std::uint32_t t = current_index.find(base.key(stack), stack.count);
    if (t == KeyIndex::kNone) {
      changed_b.push_back(s);
      continue;
    }
    matched[t] = true;
    if (counts_unchanged(stack.scaled, current.stacks[t].scaled)) {
      ++unchanged;
    } else {
      changed_b.push_back(s);
      changed_c.push_back(t);
    }
  }
  for (std::uint32_t t = 0; t < current.stacks.size(); ++t) {
    if (!matched[t]) changed_c.push_back(t);
  }
  const std::vector<std::uint32_t> rank = normalizer.ranks();
  sort_by_key(changed_b, base, rank);
  sort_by_key(changed_c, current, rank);
  auto spelled = [&](const KeyedStacks& from, const std::vector<std::uint32_t>& order) {
    NormalizedProfile to;
    to.sample_period = from.sample_period;
    to.totals = from.totals;
    to.scaled_totals = from.scaled_totals;
    to.stacks.reserve(order.size());
    for (std::uint32_t s : order) {
      const KeyedStacks::Stack& stack = from.stacks[s];
      NormalizedStack& out = to.stacks.emplace_back();
      out.frames.reserve(stack.count);
      for (std::uint32_t k = 0; k < stack.count; ++k) out.frames.push_back(normalizer.name(from.key(stack)[k]));
      out.scaled = stack.scaled;
    }
    return to;
  };
  const NormalizedProfile changed_base = spelled(base, changed_b);
  const NormalizedProfile changed_current = spelled(current, changed_c);
  ProfileDiff diff = diff_profiles(changed_base, changed_current);
  diff.unchanged_stacks += unchanged;
  return diff;
}

}  // namespace heapgate
