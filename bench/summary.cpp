// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The ratios scripts/bench.sh prints at the end, from the --benchmark_out
// JSON of each bench binary:
//   bench_summary [scope=F] [scope_noprof=F] [diff_<stacks>=F ...] [listener=F] [http=F]
// A file that is missing, or a benchmark absent from it (e.g. jeprof not
// installed), leaves its lines out.
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "heapgate/sys.h"

namespace {

using json = nlohmann::json;

// Wall time per iteration in nanoseconds, by benchmark name, for each input label.
std::map<std::string, std::map<std::string, double>> g_times;
// User counters (peak_rss_MB, cpu_s, ...), by label, benchmark name and counter.
std::map<std::string, std::map<std::string, std::map<std::string, double>>> g_counters;

// The registered name: Google Benchmark appends "/iterations:5",
// "/real_time", "/min_time:..." and "/repeats:3" when those are set.
std::string registered_name(const std::string& name) {
  std::string out;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    std::string part = name.substr(start, end - start);
    bool suffix = part == "real_time" || part.rfind("iterations:", 0) == 0 || part.rfind("min_time:", 0) == 0 ||
                  part.rfind("repeats:", 0) == 0;
    if (!suffix) out += (out.empty() ? "" : "/") + part;
    start = end + 1;
  }
  return out;
}

double to_ns(double value, const std::string& unit) {
  if (unit == "us") return value * 1e3;
  if (unit == "ms") return value * 1e6;
  if (unit == "s") return value * 1e9;
  return value;
}

void load(const std::string& label, const std::string& path) {
  auto text = heapgate::sys::read_file(path);
  if (!text) return;
  // Google Benchmark writes NaN for undefined statistics; JSON has no NaN.
  for (std::size_t at = text->find(": NaN"); at != std::string::npos; at = text->find(": NaN", at)) {
    text->replace(at, 5, ": null");
  }
  json doc = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("benchmarks")) return;
  for (const json& b : doc["benchmarks"]) {
    if (b.value("error_occurred", false) || b.value("run_type", "iteration") != "iteration") continue;
    if (!b.contains("real_time") || !b["real_time"].is_number()) continue;
    const std::string name = registered_name(b.value("name", ""));
    g_times[label][name] = to_ns(b["real_time"].get<double>(), b.value("time_unit", "ns"));
    for (const char* counter : {"peak_rss_MB", "rss_per_input", "cpu_s"}) {
      if (b.contains(counter) && b[counter].is_number()) g_counters[label][name][counter] = b[counter].get<double>();
    }
  }
}

std::optional<double> counter_of(const std::string& label, const std::string& name, const std::string& counter) {
  auto file = g_counters.find(label);
  if (file == g_counters.end()) return std::nullopt;
  auto bench = file->second.find(name);
  if (bench == file->second.end()) return std::nullopt;
  auto it = bench->second.find(counter);
  if (it == bench->second.end()) return std::nullopt;
  return it->second;
}

std::optional<double> time_of(const std::string& label, const std::string& name) {
  auto file = g_times.find(label);
  if (file == g_times.end()) return std::nullopt;
  auto it = file->second.find(name);
  if (it == file->second.end()) return std::nullopt;
  return it->second;
}

// "0.51 µs", "104 µs", "24.0 s": three significant digits in a readable unit.
std::string human(double ns) {
  const char* unit = "ns";
  double v = ns;
  if (ns >= 1e9) {
    v = ns / 1e9;
    unit = "s";
  } else if (ns >= 1e6) {
    v = ns / 1e6;
    unit = "ms";
  } else if (ns >= 1e3) {
    v = ns / 1e3;
    unit = "µs";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, unit);
  return buf;
}

std::string ratio(double a, double b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, a / b >= 10 ? "%.0fx" : "%.1fx", a / b);
  return buf;
}

void listener(const std::string& suite, double tests) {
  auto off = time_of("listener", suite + "/off");
  if (!off) return;
  std::string line = "listener, " + suite + ": off " + human(*off);
  for (const char* mode : {"counters", "exact"}) {
    auto t = time_of("listener", suite + "/" + mode);
    if (!t) continue;
    line += std::string("; ") + mode + " " + human(*t) + " (" + ratio(*t, *off) + " off, +" +
            human((*t - *off) / tests) + " per test)";
  }
  std::printf("%s\n", line.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::size_t eq = arg.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "usage: bench_summary LABEL=FILE...\n");
      return 2;
    }
    load(arg.substr(0, eq), arg.substr(eq + 1));
  }
  listener("1000 trivial tests", 1000);
  listener("heavy test", 1);
  for (const char* mode : {"counters", "exact"}) {
    if (auto t = time_of("scope", std::string("BM_EmptyScope/") + mode)) {
      std::printf("ProfileScope start+finish, %s: %s\n", mode, human(*t).c_str());
    }
  }
  for (const char* label : {"scope_noprof", "scope"}) {
    auto plain = time_of(label, "BM_MallocFreePlain");
    if (!plain) continue;
    std::string line = std::string("malloc+free pair, ") +
                       (std::string(label) == "scope" ? "profiling enabled" : "jemalloc defaults") + ": " +
                       human(*plain);
    for (const char* mode : {"counters", "exact"}) {
      if (auto t = time_of(label, std::string("BM_MallocFreeInScope/") + mode)) {
        line += std::string("; in ") + (mode[0] == 'e' ? "an " : "a ") + mode + " scope " + human(*t) + " (" +
                ratio(*t, *plain) + ")";
      }
    }
    std::printf("%s\n", line.c_str());
  }
  // diff_<stacks>=FILE: `heapgate diff` against `jeprof --text --base`, both as child processes.
  for (const auto& [label, times] : g_times) {
    if (label.rfind("diff_", 0) != 0) continue;
    auto heapgate = time_of(label, "heapgate/diff");
    auto jeprof = time_of(label, "jeprof/--text --base");
    if (!heapgate || !jeprof) continue;
    std::string line = "diff, " + label.substr(5) + " stacks per profile: heapgate " + human(*heapgate);
    auto cpu = counter_of(label, "heapgate/diff", "cpu_s");
    auto jeprof_cpu = counter_of(label, "jeprof/--text --base", "cpu_s");
    if (cpu) line += " (CPU " + human(*cpu * 1e9) + ")";
    line += ", jeprof --text --base " + human(*jeprof);
    if (jeprof_cpu) line += " (CPU " + human(*jeprof_cpu * 1e9) + ")";
    line += ": heapgate " + ratio(*jeprof, *heapgate) + " faster";
    if (cpu && jeprof_cpu) line += " (" + ratio(*jeprof_cpu, *cpu) + " in CPU time)";
    if (auto rss = counter_of(label, "heapgate/diff", "peak_rss_MB")) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "; heapgate's peak RSS %.0f MB = %.2fx the two files", *rss,
                    counter_of(label, "heapgate/diff", "rss_per_input").value_or(0));
      line += buf;
    }
    std::printf("%s\n", line.c_str());
  }
  auto state = time_of("http", "http/state/keep-alive");
  auto not_found = time_of("http", "http/404/keep-alive");
  auto fresh = time_of("http", "http/state/new-connection");
  if (state) {
    std::string line = "HTTP GET /memory-profiler/state: " + human(*state) + " per request (kept-alive connection";
    if (not_found) line += "; a 404 on the same server takes " + human(*not_found) + ", " + ratio(*state, *not_found);
    line += ")";
    if (fresh) line += ", " + human(*fresh) + " with a new connection";
    std::printf("%s\n", line.c_str());
  }
  return 0;
}
