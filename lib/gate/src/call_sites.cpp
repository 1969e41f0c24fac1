// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Call sites: a test's stacks charged to the functions that allocate
// (call_sites_of()), how they changed against a baseline's, and which grew
// beyond the test's tolerance (rule 6 of judge()).
#include "heapgate/gate.h"

#include <algorithm>
#include <map>
#include <utility>

#include "heapgate/frame_text.h"

namespace heapgate {
namespace {

// The standard library's and the allocator's frames: an allocation is charged
// to the code that asked for it, so a std::vector growing in parse() is parse()'s.
bool is_library_frame(const std::string& function) {
  for (const char* prefix : {"std::", "__gnu_cxx::", "operator new", "operator delete", "__cxx"}) {
    if (function.rfind(prefix, 0) == 0) return true;
  }
  // The C allocation functions, where a stack (jeprof's, a hand-made one) still has them.
  for (const char* name :
       {"malloc", "calloc", "realloc", "aligned_alloc", "posix_memalign", "memalign", "valloc", "strdup", "strndup"}) {
    if (function == name) return true;
  }
  return false;
}

std::string signed_count(std::int64_t v) { return (v >= 0 ? "+" : "") + std::to_string(v); }

// "+56 allocations (+1792 B) at strcache::Lru::join_all() (lru.cpp:42)"
std::string describe_change(const CallSiteChange& c) {
  const std::int64_t allocations = c.allocations_delta();
  return signed_count(allocations) + (allocations == 1 || allocations == -1 ? " allocation (" : " allocations (") +
         signed_count(c.bytes_delta()) + " B) at " + c.function + (c.location.empty() ? "" : " (" + c.location + ")");
}

}  // namespace

std::vector<CallSite> call_sites_of(const std::vector<StackSample>& stacks, std::size_t limit) {
  std::map<std::string, CallSite> by_function;
  for (const auto& s : stacks) {
    if (s.frames.empty()) continue;
    std::size_t pick = 0;
    for (std::size_t i = 0; i < s.frames.size(); ++i) {
      if (!is_library_frame(split_frame(s.frames[i]).function)) {
        pick = i;
        break;
      }
    }
    auto [function, location] = split_frame(s.frames[pick]);
    function = elide_template_arguments(function);
    CallSite& site = by_function[function];
    site.function = function;
    if (site.location.empty()) site.location = location;
    site.allocations += static_cast<std::uint64_t>(s.counts.accum_objects > 0 ? s.counts.accum_objects + 0.5 : 0);
    site.bytes += static_cast<std::uint64_t>(s.counts.accum_bytes > 0 ? s.counts.accum_bytes + 0.5 : 0);
  }
  std::vector<CallSite> all;
  for (auto& [name, site] : by_function) all.push_back(std::move(site));
  std::vector<CallSite> by_bytes = all;
  auto more_allocations = [](const CallSite& a, const CallSite& b) {
    return a.allocations != b.allocations ? a.allocations > b.allocations : a.function < b.function;
  };
  std::sort(all.begin(), all.end(), more_allocations);
  std::sort(by_bytes.begin(), by_bytes.end(), [](const CallSite& a, const CallSite& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.function < b.function;
  });
  std::vector<CallSite> out(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(std::min(limit, all.size())));
  for (std::size_t i = 0; i < by_bytes.size() && i < limit; ++i) {
    bool kept =
        std::any_of(out.begin(), out.end(), [&](const CallSite& c) { return c.function == by_bytes[i].function; });
    if (!kept) out.push_back(by_bytes[i]);
  }
  std::sort(out.begin(), out.end(), more_allocations);
  return out;
}

std::vector<CallSiteChange> call_site_changes(const std::vector<CallSite>& before, const std::vector<CallSite>& after) {
  std::map<std::string, CallSiteChange> changes;
  for (const auto& c : before) {
    CallSiteChange& ch = changes[c.function];
    ch.function = c.function;
    ch.location = c.location;
    ch.allocations_before += c.allocations;
    ch.bytes_before += c.bytes;
  }
  for (const auto& c : after) {
    CallSiteChange& ch = changes[c.function];
    ch.function = c.function;
    if (!c.location.empty()) ch.location = c.location;
    ch.allocations_after += c.allocations;
    ch.bytes_after += c.bytes;
  }
  std::vector<CallSiteChange> list;
  for (auto& [name, ch] : changes) {
    if (ch.allocations_delta() != 0 || ch.bytes_delta() != 0) list.push_back(ch);
  }
  // The map gave function order; stable keeps it among equal changes.
  std::stable_sort(list.begin(), list.end(), [](const CallSiteChange& a, const CallSiteChange& b) {
    auto mag = [](std::int64_t v) { return v < 0 ? -v : v; };
    return mag(a.allocations_delta()) != mag(b.allocations_delta())
               ? mag(a.allocations_delta()) > mag(b.allocations_delta())
               : mag(a.bytes_delta()) > mag(b.bytes_delta());
  });
  return list;
}

std::string explain_call_site_changes(const std::vector<CallSite>& before, const std::vector<CallSite>& after,
                                      std::size_t limit) {
  const std::vector<CallSiteChange> list = call_site_changes(before, after);
  std::string out;
  for (std::size_t i = 0; i < list.size() && i < limit; ++i) {
    if (!out.empty()) out += '\n';
    out += describe_change(list[i]);
  }
  return out;
}

std::vector<std::string> call_sites_beyond(const std::vector<CallSite>& before, const std::vector<CallSite>& after,
                                           const Tolerances& tolerances) {
  std::vector<std::string> out;
  for (const CallSiteChange& c : call_site_changes(before, after)) {
    const std::uint64_t allowed_allocations = allowed_change(tolerances[MetricName::allocations], c.allocations_before);
    const std::uint64_t allowed_bytes = allowed_change(tolerances[MetricName::allocated_bytes], c.bytes_before);
    const bool more_allocations =
        c.allocations_after > c.allocations_before && c.allocations_after - c.allocations_before > allowed_allocations;
    const bool more_bytes = c.bytes_after > c.bytes_before && c.bytes_after - c.bytes_before > allowed_bytes;
    if (!more_allocations && !more_bytes) continue;
    std::string line = describe_change(c);
    line += c.allocations_before == 0 && c.bytes_before == 0 ? ", a new call site" : "";
    line += more_allocations ? ", limit +" + std::to_string(allowed_allocations) + " allocations"
                             : ", limit +" + std::to_string(allowed_bytes) + " B";
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace heapgate
