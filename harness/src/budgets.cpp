// SPDX-License-Identifier: MIT
// What test code asks of the gate (heapgate/harness.h): budgets, the leak
// check, call-site gating, scoped budgets; and heapgate's test filter syntax.
#include <cstdio>
#include <string>
#include <string_view>

#include "heapgate/gate.h"
#include "heapgate/face.h"
#include "heapgate/harness.h"
#include "test_requests.h"

namespace heapgate::harness {

namespace {

// Budgets are declared in test code: the failure is the running test's,
// through its framework; without one (a budget outside any gated run),
// stderr still says it.
void fail_test(const char* file, int line, const std::string& text) noexcept {
  try {
    if (Face* face = current_face()) {
      face->add_failure(file == nullptr ? "" : file, line, text);
      return;
    }
  } catch (...) {
  }
  std::fprintf(stderr, "%s:%d: %s\n", file == nullptr ? "unknown" : file, line, text.c_str());
}

}  // namespace

TestRequests& test_requests() noexcept {
  static TestRequests requests;
  return requests;
}

void limit(MetricName metric, std::uint64_t value) noexcept {
  auto i = static_cast<std::size_t>(metric);
  if (i >= kMetricCount) return;
  test_requests().limits[i] = value;
  test_requests().limited[i] = true;
}

void limit(MetricName metric, const char* size) noexcept {
  auto parsed = parse_size(size == nullptr ? "" : size);
  if (parsed) {
    limit(metric, *parsed);
    return;
  }
  // A typo in a budget must not pass silently as "no budget".
  fail_test(nullptr, 0, "heapgate: budget " + std::string(to_string(metric)) + ": " + parsed.error().message());
}

void check_leaks(bool enabled) noexcept { test_requests().leak_check = enabled ? 1 : 0; }

void gate_call_sites() noexcept { test_requests().gate_call_sites = true; }

bool gates_call_sites(const std::string& test, const Options& options) {
  return test_requests().gate_call_sites || matches_test_filter(test, options.gate_call_sites);
}

bool measures_alone(const std::string& test, const Options& options) {
  return options.measure_alone && !matches_test_filter(test, options.measure_alone_skip);
}

namespace {

// GoogleTest's wildcard match: `*` any run, `?` any one character.
bool matches_pattern(std::string_view name, std::string_view pattern) noexcept {
  std::size_t n = 0, p = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++n;
      ++p;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool matches_any(std::string_view name, std::string_view patterns) noexcept {
  while (true) {
    const std::size_t colon = patterns.find(':');
    if (matches_pattern(name, patterns.substr(0, colon))) return true;
    if (colon == std::string_view::npos) return false;
    patterns.remove_prefix(colon + 1);
  }
}

}  // namespace

bool matches_test_filter(std::string_view name, std::string_view filter) noexcept {
  if (filter.empty()) return false;
  const std::size_t dash = filter.find('-');
  std::string_view positive = filter.substr(0, dash);
  if (positive.empty()) positive = "*";  // "-Slow.*": everything but
  if (!matches_any(name, positive)) return false;
  return dash == std::string_view::npos || !matches_any(name, filter.substr(dash + 1));
}

ScopedLimit::ScopedLimit(MetricName metric, std::uint64_t limit, const char* file, int line) noexcept
    : metric_(metric), limit_(limit), file_(file), line_(line) {
  if (!allocator_status().hooks_available) return;
  scope_.emplace("scoped budget", ScopeOptions{Mode::counters});
}

ScopedLimit::ScopedLimit(MetricName metric, const char* size, const char* file, int line) noexcept
    : metric_(metric), file_(file), line_(line) {
  auto parsed = parse_size(size == nullptr ? "" : size);
  if (!parsed) {
    fail_test(file, line,
              "heapgate: scoped budget " + std::string(to_string(metric)) + ": " + parsed.error().message());
    return;
  }
  limit_ = *parsed;
  if (!allocator_status().hooks_available) return;
  scope_.emplace("scoped budget", ScopeOptions{Mode::counters});
}

ScopedLimit::~ScopedLimit() {
  if (!scope_) return;
  auto result = scope_->finish();
  if (!result || result->bytes_only) return;  // nothing counted: nothing to say
  const std::string over = explain_over_budget(metric_, limit_, from_scope(*result));
  if (!over.empty()) fail_test(file_, line_, "heapgate: " + over + " in this block");
}

}  // namespace heapgate::harness
