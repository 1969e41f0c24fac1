// SPDX-License-Identifier: MIT
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

std::string signed_count(std::int64_t v) { return (v >= 0 ? "+" : "") + std::to_string(v); }

// "+56 allocations (+1792 B) at strcache::Lru::join_all() (lru.cpp:42)", with
// `threads` ("on other threads") before "at" when known.
std::string describe_change(const CallSiteChange& c, const std::string& threads = {}) {
  const std::int64_t allocations = c.allocations_delta();
  return signed_count(allocations) + (allocations == 1 || allocations == -1 ? " allocation (" : " allocations (") +
         signed_count(c.bytes_delta()) + " B) " + (threads.empty() ? "" : threads + " ") + "at " + c.function +
         (c.location.empty() ? "" : " (" + c.location + ")");
}

}  // namespace

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

std::vector<CallSite> call_sites_of(const std::vector<StackSample>& stacks, std::size_t limit) {
  // Keyed by line: a function that allocates on several lines has a site for
  // each, so a change is named at the line that made it.
  std::map<std::pair<std::string, std::string>, CallSite> by_line;
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
    CallSite& site = by_line[{function, location}];
    site.function = function;
    site.location = location;
    site.allocations += static_cast<std::uint64_t>(s.counts.accum_objects > 0 ? s.counts.accum_objects + 0.5 : 0);
    site.bytes += static_cast<std::uint64_t>(s.counts.accum_bytes > 0 ? s.counts.accum_bytes + 0.5 : 0);
  }
  std::vector<CallSite> all;
  for (auto& [key, site] : by_line) all.push_back(std::move(site));
  std::vector<CallSite> by_bytes = all;
  auto more_allocations = [](const CallSite& a, const CallSite& b) {
    if (a.allocations != b.allocations) return a.allocations > b.allocations;
    return a.function != b.function ? a.function < b.function : a.location < b.location;
  };
  std::sort(all.begin(), all.end(), more_allocations);
  std::sort(by_bytes.begin(), by_bytes.end(), [](const CallSite& a, const CallSite& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    return a.function != b.function ? a.function < b.function : a.location < b.location;
  });
  std::vector<CallSite> out(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(std::min(limit, all.size())));
  for (std::size_t i = 0; i < by_bytes.size() && i < limit; ++i) {
    bool kept = std::any_of(out.begin(), out.end(), [&](const CallSite& c) {
      return c.function == by_bytes[i].function && c.location == by_bytes[i].location;
    });
    if (!kept) out.push_back(by_bytes[i]);
  }
  std::sort(out.begin(), out.end(), more_allocations);
  return out;
}

std::vector<CallSiteChange> call_site_changes(const std::vector<CallSite>& before, const std::vector<CallSite>& after) {
  // Per function, lines are matched: first by location; then a baseline line
  // left over is paired with a line of this run that allocated exactly as
  // much (an edit above the function moved it); what is left is new or gone.
  // A baseline keyed by function (one site per function) pairs the same way.
  std::map<std::string, std::pair<std::vector<const CallSite*>, std::vector<const CallSite*>>> by_function;
  for (const auto& c : before) by_function[c.function].first.push_back(&c);
  for (const auto& c : after) by_function[c.function].second.push_back(&c);
  std::vector<CallSiteChange> list;
  auto add = [&list](const std::string& function, const CallSite* was, const CallSite* is) {
    CallSiteChange ch;
    ch.function = function;
    ch.location = is != nullptr && !is->location.empty() ? is->location : (was != nullptr ? was->location : "");
    if (was != nullptr) {
      ch.allocations_before = was->allocations;
      ch.bytes_before = was->bytes;
    }
    if (is != nullptr) {
      ch.allocations_after = is->allocations;
      ch.bytes_after = is->bytes;
    }
    if (ch.allocations_delta() != 0 || ch.bytes_delta() != 0) list.push_back(std::move(ch));
  };
  for (auto& entry : by_function) {
    // Named references, not structured bindings: a lambda may not capture those in C++17.
    const std::string& function = entry.first;
    std::vector<const CallSite*>& was = entry.second.first;
    std::vector<const CallSite*>& is = entry.second.second;
    auto take = [&](auto matches) {
      for (auto w = was.begin(); w != was.end();) {
        auto i = std::find_if(is.begin(), is.end(), [&](const CallSite* c) { return matches(**w, *c); });
        if (i == is.end()) {
          ++w;
          continue;
        }
        add(function, *w, *i);
        is.erase(i);
        w = was.erase(w);
      }
    };
    take([](const CallSite& a, const CallSite& b) { return a.location == b.location; });
    take([](const CallSite& a, const CallSite& b) { return a.allocations == b.allocations && a.bytes == b.bytes; });
    for (const CallSite* w : was) add(function, w, nullptr);
    for (const CallSite* i : is) add(function, nullptr, i);
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
                                      const GrowthThreads& threads, std::size_t limit) {
  const std::vector<CallSiteChange> list = call_site_changes(before, after);
  std::string out;
  for (std::size_t i = 0; i < list.size() && i < limit; ++i) {
    if (!out.empty()) out += '\n';
    const bool on_them = !threads.threads.empty() && list[i].allocations_delta() > 0 &&
                         static_cast<std::uint64_t>(list[i].allocations_delta()) > threads.more_than;
    out += describe_change(list[i], on_them ? threads.threads : std::string());
  }
  return out;
}

std::vector<std::string> call_sites_beyond(const std::vector<CallSite>& before, const std::vector<CallSite>& after,
                                           const Tolerances& tolerances) {
  // Judged per function, so allocations moving between the lines of one
  // function are no change; named at the line of it that grew most.
  struct FunctionChange {
    CallSiteChange total;
    const CallSiteChange* grew_most = nullptr;
  };
  const std::vector<CallSiteChange> lines = call_site_changes(before, after);
  std::map<std::string, FunctionChange> functions;
  for (const auto& c : before) {
    functions[c.function].total.allocations_before += c.allocations;
    functions[c.function].total.bytes_before += c.bytes;
  }
  for (const auto& c : after) {
    functions[c.function].total.allocations_after += c.allocations;
    functions[c.function].total.bytes_after += c.bytes;
  }
  for (const CallSiteChange& c : lines) {
    FunctionChange& f = functions[c.function];
    auto growth = [](const CallSiteChange& x) { return std::make_pair(x.allocations_delta(), x.bytes_delta()); };
    if (f.grew_most == nullptr || growth(c) > growth(*f.grew_most)) f.grew_most = &c;
  }
  struct Beyond {
    CallSiteChange change;
    std::string why;
  };
  std::vector<Beyond> beyond;
  for (auto& [function, f] : functions) {
    CallSiteChange& c = f.total;
    c.function = function;
    const std::uint64_t allowed_allocations = allowed_change(tolerances[MetricName::allocations], c.allocations_before);
    const std::uint64_t allowed_bytes = allowed_change(tolerances[MetricName::allocated_bytes], c.bytes_before);
    const bool more_allocations =
        c.allocations_after > c.allocations_before && c.allocations_after - c.allocations_before > allowed_allocations;
    const bool more_bytes = c.bytes_after > c.bytes_before && c.bytes_after - c.bytes_before > allowed_bytes;
    if (!more_allocations && !more_bytes) continue;
    const CallSiteChange* line = f.grew_most;
    if (line != nullptr) c.location = line->location;
    std::string why = c.allocations_before == 0 && c.bytes_before == 0 ? ", a new call site"
                      : line != nullptr && line->allocations_before == 0 && line->bytes_before == 0 ? ", a new line"
                                                                                                    : "";
    why += more_allocations ? ", limit +" + std::to_string(allowed_allocations) + " allocations"
                            : ", limit +" + std::to_string(allowed_bytes) + " B";
    beyond.push_back({c, std::move(why)});
  }
  std::stable_sort(beyond.begin(), beyond.end(), [](const Beyond& a, const Beyond& b) {
    return std::make_pair(a.change.allocations_delta(), a.change.bytes_delta()) >
           std::make_pair(b.change.allocations_delta(), b.change.bytes_delta());
  });
  std::vector<std::string> out;
  for (const Beyond& b : beyond) out.push_back(describe_change(b.change) + b.why);
  return out;
}

}  // namespace heapgate
