// SPDX-License-Identifier: MIT
// A recording's page (heapgate/recording_html.h).
#include "heapgate/recording_html.h"

#include <algorithm>
#include <cstdio>

#include "heapgate/flamegraph.h"
#include "heapgate/sys.h"
#include "html_page.h"
#include "heapgate/markup.h"

namespace heapgate {
namespace {

using detail::escape_markup;

// Enough to read a program's heap; more would make the page slow to open.
constexpr std::size_t kMaxFlameStacks = 400;
constexpr std::size_t kMaxSites = 20;

std::string num(std::uint64_t v) { return std::to_string(v); }

std::string site_name(const CallSite& site) {
  return "<code>" + escape_markup(site.function) + "</code>" +
         (site.location.empty() ? "" : " <span class=\"muted small\">" + escape_markup(site.location) + "</span>");
}

std::string sites_table(const std::vector<CallSite>& sites, const char* what) {
  if (sites.empty()) return "<p class=\"muted\">No " + std::string(what) + ".</p>\n";
  std::string out = "<table><thead><tr><th>call site</th><th>bytes</th><th>blocks</th></tr></thead><tbody>\n";
  for (std::size_t i = 0; i < sites.size() && i < kMaxSites; ++i) {
    out += "<tr><td>" + site_name(sites[i]) + "</td><td class=\"num\">" + num(sites[i].bytes) +
           "</td><td class=\"num\">" + num(sites[i].allocations) + "</td></tr>\n";
  }
  out += "</tbody></table>\n";
  if (sites.size() > kMaxSites) out += "<p class=\"muted small\">and " + num(sites.size() - kMaxSites) + " more</p>\n";
  return out;
}

// The stacks' accumulated bytes (analyze_recording() puts each view's bytes there).
std::string flame(const std::vector<StackSample>& stacks, const std::string& title, const std::string& caption) {
  std::vector<FoldedStack> folded;
  for (const StackSample& s : stacks) {
    FoldedStack f;
    f.frames.assign(s.frames.rbegin(), s.frames.rend());
    f.value = s.counts.accum_bytes;
    folded.push_back(std::move(f));
  }
  FlamegraphOptions options;
  options.title = title;
  options.subtitle = std::to_string(stacks.size()) + (stacks.size() == 1 ? " stack" : " stacks");
  options.unit = "bytes";
  options.xml_declaration = false;
  options.short_labels = true;
  options.max_stacks = kMaxFlameStacks;
  return std::string(detail::kFlameFigureStart) + render_flamegraph_svg(folded, options) + "<figcaption>" +
         escape_markup(caption) +
         " The root at the bottom, callees above their callers, width = bytes. Hover a frame for its full name and "
         "file:line; click to zoom; search highlights matching frames.</figcaption></figure>\n";
}

std::string series(const std::vector<std::uint64_t>& values) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) out += (i == 0 ? "" : " → ") + num(values[i]);
  return out;
}

std::string growth_table(const std::vector<SiteGrowth>& sites, bool with_series) {
  std::string out =
      "<table><thead><tr><th>call site</th><th>pid</th><th>live bytes, first → last snapshot</th><th>change</th>" +
      std::string(with_series ? "<th>live blocks at each snapshot</th>" : "") + "</tr></thead><tbody>\n";
  for (std::size_t i = 0; i < sites.size() && i < kMaxSites; ++i) {
    const SiteGrowth& g = sites[i];
    const auto delta = static_cast<long long>(g.live_bytes.back()) - static_cast<long long>(g.live_bytes.front());
    char change[32];
    std::snprintf(change, sizeof change, "%+lld", delta);
    out += "<tr><td>" + site_name(g.site) + "</td><td class=\"num\">" + num(g.pid) + "</td><td class=\"num\">" +
           num(g.live_bytes.front()) + " → " + num(g.live_bytes.back()) + "</td><td class=\"num\">" + change + "</td>" +
           (with_series ? "<td class=\"small\">" + series(g.live_allocations) + "</td>" : "") + "</tr>\n";
  }
  out += "</tbody></table>\n";
  return out;
}

std::string ending(const RecordedProcess& p) {
  if (p.ended == "exit") return "exited";
  if (p.ended == "signal") return "killed by " + sys::describe_signal(p.signal);
  return "wrote nothing (SIGKILL, or it replaced itself with exec())";
}

}  // namespace

std::string recording_to_html(const Recording& r, const RecordingAnalysis& a) {
  std::string command;
  for (const std::string& part : r.command) command += (command.empty() ? "" : " ") + part;
  std::string out = detail::page_head("heapgate record: " + command);
  out += "<h1>heapgate record: <code>" + escape_markup(command) + "</code></h1>\n";
  out += "<table class=\"run\">\n<tr><th>ended</th><td>" +
         (r.term_signal != 0 ? "killed by " + escape_markup(sys::describe_signal(r.term_signal))
                             : "exit code " + std::to_string(r.exit_code)) +
         "</td></tr>\n<tr><th>mode</th><td>" + escape_markup(r.mode) + "</td></tr>\n<tr><th>recording</th><td><code>" +
         escape_markup(r.dir) + "</code></td></tr>\n";
  if (r.snapshot_every_ms > 0) out += "<tr><th>snapshots</th><td>every " + num(r.snapshot_every_ms) + " ms</td></tr>\n";
  out +=
      "</table>\n<h2>Processes</h2>\n<table><thead><tr><th>pid</th><th>ended</th><th>peak bytes</th>"
      "<th>allocated bytes</th><th>allocations</th><th>live at end: bytes</th><th>blocks</th></tr></thead><tbody>\n";
  for (const RecordedProcess& p : r.processes) {
    out += "<tr><td class=\"num\">" + num(p.pid) + (p.pid == r.root_pid ? "" : " (child)") + "</td><td>" +
           escape_markup(ending(p)) + "</td>";
    if (p.counted) {
      out += "<td class=\"num\">" + num(p.peak_bytes) + (p.peak_is_upper_bound ? " (upper bound)" : "") +
             "</td><td class=\"num\">" + num(p.allocated_bytes) + "</td><td class=\"num\">" + num(p.allocations) +
             "</td><td class=\"num\">" + num(p.live_bytes) + "</td><td class=\"num\">" + num(p.live_allocations) +
             "</td>";
    } else {
      out += "<td colspan=\"5\" class=\"muted\">not counted</td>";
    }
    out += "</tr>\n";
    for (const std::string* why : {&p.not_exact, &p.not_counted, &p.not_written}) {
      if (!why->empty()) out += "<tr><td></td><td colspan=\"6\" class=\"note\">" + escape_markup(*why) + "</td></tr>\n";
    }
  }
  out += "</tbody></table>\n";

  if (!a.leaks.empty() || !a.one_time.empty() || !a.growth.empty()) {
    out += "<h2>Growth over time</h2>\n";
    out += "<h3>Leaks: live blocks kept growing across the snapshots</h3>\n";
    out += a.leaks.empty() ? "<p class=\"muted\">None.</p>\n" : growth_table(a.leaks, true);
    out += "<h3>One-time: level after start-up</h3>\n";
    out += a.one_time.empty() ? "<p class=\"muted\">None.</p>\n" : growth_table(a.one_time, true);
    out += "<h3>Every call site that changed between the first and the last snapshot</h3>\n";
    out += a.growth.empty() ? "<p class=\"muted\">None.</p>\n" : growth_table(a.growth, false);
  }
  out += "<h2>Live at exit</h2>\n" + sites_table(a.live_sites, "block was live at exit");
  if (!a.live.empty()) out += flame(a.live, "Live at exit", "What was still allocated when the program ended.");
  out += "<h2>At the peak</h2>\n" + sites_table(a.peak_sites, "peak was recorded (exact mode records it)");
  if (!a.peak.empty()) out += flame(a.peak, "Peak", "The blocks live when the most bytes were live at once.");
  out += "<h2>All allocations</h2>\n" + sites_table(a.allocation_sites, "allocations were recorded");
  if (!a.allocations.empty()) out += flame(a.allocations, "All allocations", "Every allocation, freed or not.");
  out +=
      "<p class=\"muted small\">Generated by heapgate from a " + escape_markup(kRecordingSchema) + " recording.</p>\n";
  out += detail::page_end();
  return out;
}

}  // namespace heapgate
