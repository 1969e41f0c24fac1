// SPDX-License-Identifier: MIT
// What a recording says (heapgate/recording.h): its profiles charged to call
// sites with the gate's own rule (call_sites_of()), leaks told from one-time
// setup with the gate's leak rule (grows()) over the snapshots, and the
// summary `heapgate record` prints.
#include "heapgate/recording.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>

#include "heapgate/diff.h"
#include "heapgate/gate.h"
#include "heapgate/normalize.h"
#include "heapgate/profile.h"
#include "heapgate/symbolizer.h"
#include "heapgate/symbols_sidecar.h"
#include "heapgate/sys.h"

namespace heapgate {
namespace {

std::string path_in(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

// The snapshots a process wrote, in order.
std::vector<std::string> snapshot_paths(const RecordedProcess& p) {
  std::vector<std::string> paths;
  for (std::uint64_t n = 1; n <= p.snapshots; ++n) {
    char name[32];
    std::snprintf(name, sizeof name, "snapshot.%04llu.heap", static_cast<unsigned long long>(n));
    paths.push_back(path_in(p.dir, name));
  }
  return paths;
}

// Every stack of a profile, with lines, as StackSamples. A profile in `read`
// was read already, and `symbolizer` wrote its sidecar: it knows its frames.
Result<std::vector<StackSample>> read_stacks(const std::string& path, Symbolizer& symbolizer,
                                             const ReadProfiles* read) {
  NormalizeOptions options;
  options.with_lines = true;
  if (read != nullptr) {
    if (auto it = read->find(path); it != read->end()) {
      return top_stacks(normalize_profile(it->second, symbolizer, options), std::numeric_limits<std::size_t>::max());
    }
  }
  auto profile = read_profile(path);
  if (!profile) return fail(profile.error());
  if (auto ready = prepare_symbols(path, *profile, symbolizer); !ready) return fail(ready.error());
  return top_stacks(normalize_profile(*profile, symbolizer, options), std::numeric_limits<std::size_t>::max());
}

// call_sites_of() charges accumulated counts; a live view's are its live ones.
std::vector<StackSample> live_as_accumulated(std::vector<StackSample> stacks) {
  std::vector<StackSample> out;
  for (StackSample& s : stacks) {
    if (s.counts.live_objects <= 0) continue;
    s.counts.accum_objects = s.counts.live_objects;
    s.counts.accum_bytes = s.counts.live_bytes;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<CallSite> sites_by_bytes(const std::vector<StackSample>& stacks) {
  std::vector<CallSite> sites = call_sites_of(stacks, std::numeric_limits<std::size_t>::max());
  std::sort(sites.begin(), sites.end(), [](const CallSite& a, const CallSite& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.function < b.function;
  });
  return sites;
}

void append(std::vector<StackSample>& to, std::vector<StackSample> from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

// One process' snapshots: each site's live blocks at each of them.
Result<void> follow_snapshots(const RecordedProcess& p, Symbolizer& symbolizer, const ReadProfiles* read,
                              RecordingAnalysis& out) {
  const std::vector<std::string> paths = snapshot_paths(p);
  if (paths.size() < 2) return {};
  std::map<std::pair<std::string, std::string>, SiteGrowth> sites;  // by function and line
  for (std::size_t i = 0; i < paths.size(); ++i) {
    auto stacks = read_stacks(paths[i], symbolizer, read);
    if (!stacks) return fail(stacks.error());
    for (const CallSite& site : sites_by_bytes(live_as_accumulated(std::move(*stacks)))) {
      SiteGrowth& g = sites[{site.function, site.location}];
      if (g.live_bytes.empty()) {
        g.pid = p.pid;
        g.live_allocations.assign(paths.size(), 0);
        g.live_bytes.assign(paths.size(), 0);
      }
      g.site = site;
      g.live_allocations[i] = site.allocations;
      g.live_bytes[i] = site.bytes;
    }
  }
  const std::size_t last = paths.size() - 1;
  for (auto& [name, g] : sites) {
    g.site.allocations = g.live_allocations[last];
    g.site.bytes = g.live_bytes[last];
    if (g.live_bytes[last] != g.live_bytes[0] || g.live_allocations[last] != g.live_allocations[0]) {
      out.growth.push_back(g);
    }
    if (paths.size() < 3 || g.live_allocations[last] == 0) continue;
    const std::size_t middle = last / 2;
    LiveGrowth three;
    for (std::size_t i : {std::size_t{0}, middle, last}) {
      three.live_allocations.push_back(g.live_allocations[i]);
      three.live_bytes.push_back(g.live_bytes[i]);
    }
    (grows(three) ? out.leaks : out.one_time).push_back(g);
  }
  return {};
}

std::int64_t change(const SiteGrowth& g) {
  return static_cast<std::int64_t>(g.live_bytes.back()) - static_cast<std::int64_t>(g.live_bytes.front());
}

std::string bytes_text(std::uint64_t bytes) {
  char text[48];
  if (bytes >= (std::uint64_t{10} << 20)) {
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  } else if (bytes >= (std::uint64_t{10} << 10)) {
    std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / 1024);
  } else {
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  }
  return text;
}

std::string blocks_text(std::uint64_t n) { return std::to_string(n) + (n == 1 ? " block" : " blocks"); }

std::string site_line(const CallSite& site) {
  char head[96];
  std::snprintf(head, sizeof head, "    %10s in %-12s  ", bytes_text(site.bytes).c_str(),
                blocks_text(site.allocations).c_str());
  return head + site.function + (site.location.empty() ? "" : " (" + site.location + ")") + "\n";
}

void append_sites(std::string& out, const std::string& heading, const std::vector<CallSite>& sites, std::size_t top) {
  if (sites.empty()) return;
  out += heading + "\n";
  for (std::size_t i = 0; i < sites.size() && i < top; ++i) out += site_line(sites[i]);
  if (sites.size() > top) out += "    ... and " + std::to_string(sites.size() - top) + " more call sites\n";
}

std::string ending_text(const RecordedProcess& p) {
  if (p.ended == "exit") return "exited";
  if (p.ended == "signal") return "killed by " + sys::describe_signal(p.signal);
  return "ended without writing its profiles (SIGKILL, or it replaced itself with exec())";
}

}  // namespace

Result<RecordingAnalysis> analyze_recording(const Recording& recording, Symbolizer& symbolizer,
                                            const ReadProfiles* read) {
  RecordingAnalysis out;
  for (const RecordedProcess& p : recording.processes) {
    for (const std::string& name : p.profiles) {
      auto stacks = read_stacks(path_in(p.dir, name), symbolizer, read);
      if (!stacks) return fail(stacks.error());
      if (name == "live.heap") {
        append(out.live, live_as_accumulated(std::move(*stacks)));
      } else if (name == "peak.heap") {
        append(out.peak, std::move(*stacks));
      } else if (name == "allocations.heap") {
        append(out.allocations, std::move(*stacks));
      }
    }
    if (auto followed = follow_snapshots(p, symbolizer, read, out); !followed) return fail(followed.error());
  }
  out.live_sites = sites_by_bytes(out.live);
  out.peak_sites = sites_by_bytes(out.peak);
  out.allocation_sites = sites_by_bytes(out.allocations);
  auto by_growth = [](const SiteGrowth& a, const SiteGrowth& b) {
    return change(a) != change(b) ? change(a) > change(b) : a.site.function < b.site.function;
  };
  std::sort(out.leaks.begin(), out.leaks.end(), by_growth);
  std::sort(out.one_time.begin(), out.one_time.end(), by_growth);
  std::sort(out.growth.begin(), out.growth.end(), by_growth);
  return out;
}

Result<void> write_recording_sidecars(const Recording& recording, Symbolizer& symbolizer, ReadProfiles* read) {
  for (const RecordedProcess& p : recording.processes) {
    std::vector<std::string> paths;
    for (const std::string& name : p.profiles) paths.push_back(path_in(p.dir, name));
    for (const std::string& path : snapshot_paths(p)) paths.push_back(path);
    for (const std::string& path : paths) {
      auto profile = read_profile(path);
      if (!profile) return fail(profile.error());
      if (auto written = write_symbols_sidecar(path, *profile, symbolizer); !written) return fail(written.error());
      if (read != nullptr) read->insert_or_assign(path, std::move(*profile));
    }
  }
  return {};
}

std::string recording_summary(const Recording& recording, const RecordingAnalysis& analysis, std::size_t top) {
  std::string out = "heapgate record: ";
  for (std::size_t i = 0; i < recording.command.size(); ++i) out += (i == 0 ? "" : " ") + recording.command[i];
  out += recording.term_signal != 0 ? "\n  killed by " + sys::describe_signal(recording.term_signal)
                                    : "\n  exit code " + std::to_string(recording.exit_code);
  out += ", " + std::to_string(recording.processes.size()) +
         (recording.processes.size() == 1 ? " process" : " processes") + ", " + recording.mode + " mode\n";
  for (const RecordedProcess& p : recording.processes) {
    out += "  pid " + std::to_string(p.pid) + (p.pid == recording.root_pid ? "" : " (child)") + ": " + ending_text(p);
    if (p.counted) {
      out += "; peak " + bytes_text(p.peak_bytes) + (p.peak_is_upper_bound ? " (upper bound)" : "") + ", allocated " +
             bytes_text(p.allocated_bytes) + " in " + std::to_string(p.allocations) +
             (p.allocations == 1 ? " allocation" : " allocations") + ", live at end " + bytes_text(p.live_bytes) +
             " in " + blocks_text(p.live_allocations);
    }
    out += "\n";
    if (!p.not_exact.empty()) out += "    counters only: " + p.not_exact + "\n";
    if (!p.not_counted.empty()) out += "    nothing counted: " + p.not_counted + "\n";
    if (!p.not_written.empty()) out += "    " + p.not_written + "\n";
  }
  append_sites(out, "Peak, by call site:", analysis.peak_sites, top);
  append_sites(out, "All allocations, by call site:", analysis.allocation_sites, top);
  append_sites(out, "Live at exit (leaked), by call site:", analysis.live_sites, top);
  if (!analysis.leaks.empty() || !analysis.one_time.empty()) {
    auto grown = [](const std::vector<SiteGrowth>& list) {
      std::vector<CallSite> sites;
      for (const SiteGrowth& g : list) sites.push_back(g.site);
      return sites;
    };
    append_sites(
        out, "Leaks (live blocks kept growing across the snapshots; as at the last one):", grown(analysis.leaks), top);
    append_sites(out, "One-time (level after start-up):", grown(analysis.one_time), top);
  }
  out += "Profiles: " + recording.dir + "/<pid>/; the page: heapgate report " + recording.dir + "\n";
  return out;
}

}  // namespace heapgate
