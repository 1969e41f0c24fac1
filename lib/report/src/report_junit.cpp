// SPDX-License-Identifier: MIT
// The JUnit XML reporter (Ant/Jenkins format, junit-10.xsd).
#include <cstdio>
#include <map>
#include <sstream>

#include <pugixml.hpp>

#include "heapgate/report.h"
#include "heapgate/report_files.h"
#include "report_text.h"

namespace heapgate {
namespace {

// A failure's text fits one screen: longer messages are cut here.
constexpr std::size_t kMaxMessageLines = 40;
constexpr std::size_t kMaxStacks = 3;
constexpr std::size_t kMaxFrames = 8;

// XML 1.0 allows neither most control characters nor invalid UTF-8; both
// would make the whole file unreadable to CI, so they become '?'.
std::string xml_safe(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size();) {
    auto c = static_cast<unsigned char>(in[i]);
    if (c < 0x80) {
      bool ok = c >= 0x20 || c == '\t' || c == '\n' || c == '\r';
      out += ok ? static_cast<char>(c) : '?';
      ++i;
      continue;
    }
    std::size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
    if (c >= 0xF5) len = 0;
    bool ok = len != 0 && i + len <= in.size();
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(in[i + k]) & 0xC0) == 0x80;
    if (ok && len == 3) {
      auto c1 = static_cast<unsigned char>(in[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);                            // overlong, surrogates
      ok = ok && !(c == 0xEF && c1 == 0xBF && static_cast<unsigned char>(in[i + 2]) >= 0xBE);  // U+FFFE/F
    }
    if (ok && len == 4) {
      auto c1 = static_cast<unsigned char>(in[i + 1]);
      ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(in.substr(i, len));
      i += len;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
}

std::string seconds(double ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", ms > 0 ? ms / 1000.0 : 0.0);
  return buf;
}

void attr(pugi::xml_node node, const char* name, std::string_view value) {
  node.append_attribute(name).set_value(xml_safe(value).c_str());
}

void property(pugi::xml_node properties, const std::string& name, std::string_view value) {
  pugi::xml_node p = properties.append_child("property");
  attr(p, "name", name);
  attr(p, "value", value);
}

// The failure text: message (cut to one screen), metrics, then top stacks
// unless the message already shows them (the listener puts them there).
std::string failure_text(const TestRecord& t, bool heapgate_failure) {
  std::string text;
  if (!heapgate_failure) {
    text =
        "The test failed its own assertions (see its log); heapgate's verdict: " + std::string(to_string(t.verdict)) +
        ".\n";
  }
  std::size_t lines = 0;
  std::size_t pos = 0;
  while (pos < t.message.size()) {
    std::size_t nl = t.message.find('\n', pos);
    std::size_t end = nl == std::string::npos ? t.message.size() : nl;
    if (lines == kMaxMessageLines) {
      text += "... (the rest is in the JSON report)\n";
      break;
    }
    text.append(t.message, pos, end - pos);
    text += '\n';
    ++lines;
    pos = end + 1;
  }
  if (!t.deltas.empty()) {
    text += "metrics (baseline \xE2\x86\x92 this run):\n";
    for (const auto& d : t.deltas) {
      text += "  " + describe(d);
      if (d.beyond_tolerance) text += ", beyond the limit of " + std::to_string(d.limit);
      text += '\n';
    }
  } else {
    text += "metrics:";
    for (MetricName m : kMetricNames) {
      if (is_measured(t.not_measured, m))
        text += " " + std::string(to_string(m)) + "=" + std::to_string(get(t.metrics, m));
    }
    text += '\n';
    if (!t.not_measured.empty()) text += describe_not_measured(t.not_measured) + "\n";
  }
  bool shown = !t.stacks.empty() && !t.stacks.front().frames.empty() &&
               t.message.find(t.stacks.front().frames.front()) != std::string::npos;
  if (!t.stacks.empty() && !shown) {
    text += "top stacks:\n";
    for (std::size_t i = 0; i < t.stacks.size() && i < kMaxStacks; ++i) {
      const StackSample& s = t.stacks[i];
      text += "  " + detail::describe_stack_counts(s) + "\n";
      for (std::size_t f = 0; f < s.frames.size() && f < kMaxFrames; ++f) text += "    " + s.frames[f] + "\n";
      if (s.frames.size() > kMaxFrames) text += "    ... " + std::to_string(s.frames.size() - kMaxFrames) + " more\n";
    }
  }
  if (!t.budgets.empty()) {
    text += "budgets:";
    for (const auto& [name, limit] : t.budgets) text += " " + name + " <= " + std::to_string(limit);
    text += '\n';
  }
  for (const auto& p : t.profiles) text += "profile: " + p + "\n";
  if (heapgate_failure && t.gtest_failed) text += "The test also failed its own assertions (see its log).\n";
  return text;
}

std::string system_out(const TestRecord& t) {
  std::string out = "heapgate.verdict=" + std::string(to_string(t.verdict)) + "\n";
  out += "heapgate.mode=" + std::string(to_string(t.mode)) + (t.estimated ? " (estimated)\n" : "\n");
  for (MetricName m : kMetricNames) {
    out += "heapgate." + std::string(to_string(m)) + "=" +
           (is_measured(t.not_measured, m) ? std::to_string(get(t.metrics, m)) : std::string("not measured")) + "\n";
  }
  if (t.baseline) {
    for (MetricName m : kMetricNames) {
      out += "heapgate.baseline." + std::string(to_string(m)) + "=" + std::to_string(get(*t.baseline, m)) + "\n";
    }
  }
  for (const auto& [name, limit] : t.budgets) out += "heapgate.budget." + name + "=" + std::to_string(limit) + "\n";
  if (const std::string band = detail::noise_band_text(t); !band.empty()) out += "heapgate.noisy=" + band + "\n";
  if (const std::string parts = detail::thread_parts_text(t); !parts.empty()) {
    out += "heapgate.thread_parts=" + parts + "\n";
  }
  return out;
}

struct SuiteCounts {
  std::size_t tests = 0, failures = 0, errors = 0, skipped = 0;
  double ms = 0;
};

}  // namespace

std::string to_junit_xml(const Report& report) {
  // Suites in order of first appearance; records keep their order within.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const TestRecord*>> suites;
  for (const auto& t : report.tests) {
    auto& list = suites[t.suite];
    if (list.empty()) order.push_back(t.suite);
    list.push_back(&t);
  }

  pugi::xml_document doc;
  pugi::xml_node decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version").set_value("1.0");
  decl.append_attribute("encoding").set_value("UTF-8");
  pugi::xml_node root = doc.append_child("testsuites");
  attr(root, "name", report.run.binary.empty() ? std::string("heapgate") : report.run.binary);

  SuiteCounts total;
  for (const auto& suite_name : order) {
    pugi::xml_node suite = root.append_child("testsuite");
    attr(suite, "name", suite_name.empty() ? std::string("(no suite)") : suite_name);
    pugi::xml_node properties = suite.append_child("properties");
    property(properties, "heapgate.binary", report.run.binary);
    property(properties, "heapgate.build_id", report.run.build_id);
    property(properties, "heapgate.mode", std::string(to_string(report.run.mode)));
    property(properties, "heapgate.jemalloc_version", report.run.jemalloc_version);
    property(properties, "heapgate.strict", report.run.strict ? "true" : "false");
    if (report.run.total_shards > 0) {
      property(properties, "heapgate.shard",
               std::to_string(report.run.shard_index) + "/" + std::to_string(report.run.total_shards));
    }
    if (!report.run.unavailable_reason.empty()) {
      property(properties, "heapgate.unavailable_reason", report.run.unavailable_reason);
    }

    SuiteCounts counts;
    for (const TestRecord* t : suites[suite_name]) {
      pugi::xml_node tc = suite.append_child("testcase");
      attr(tc, "name", t->test.empty() ? t->name : t->test);
      attr(tc, "classname", suite_name);
      attr(tc, "time", seconds(t->duration_ms));
      ++counts.tests;
      counts.ms += t->duration_ms > 0 ? t->duration_ms : 0;
      std::string headline = "heapgate: " + t->name + " " + std::string(to_string(t->verdict));
      if (t->interrupted != Interruption::none) {
        // JUnit's <error>: the test did not fail, it never ended. The whole
        // message, with the threads' stacks of a hung test.
        pugi::xml_node e = tc.append_child("error");
        attr(e, "message", detail::first_line(t->message));
        attr(e, "type", "heapgate." + std::string(to_string(t->interrupted)));
        e.append_child(pugi::node_pcdata).set_value(xml_safe(t->message).c_str());
        ++counts.errors;
      } else if (is_failure(t->verdict, report.run.strict)) {
        pugi::xml_node f = tc.append_child("failure");
        std::string first = detail::first_line(t->message);
        attr(f, "message", first.empty() ? headline : first);
        attr(f, "type", "heapgate." + std::string(to_string(t->verdict)));
        f.append_child(pugi::node_pcdata).set_value(xml_safe(failure_text(*t, true)).c_str());
        ++counts.failures;
      } else if (t->gtest_failed) {
        pugi::xml_node f = tc.append_child("failure");
        attr(f, "message", "the test failed its own assertions (heapgate: " + std::string(to_string(t->verdict)) + ")");
        attr(f, "type", "gtest");
        f.append_child(pugi::node_pcdata).set_value(xml_safe(failure_text(*t, false)).c_str());
        ++counts.failures;
      } else if (t->verdict == Verdict::unavailable || t->verdict == Verdict::missing ||
                 t->verdict == Verdict::skipped) {
        pugi::xml_node s = tc.append_child("skipped");
        std::string first = detail::first_line(t->message);
        attr(s, "message", first.empty() ? headline : first);
        ++counts.skipped;
      }
      tc.append_child("system-out").append_child(pugi::node_pcdata).set_value(xml_safe(system_out(*t)).c_str());
    }
    attr(suite, "tests", std::to_string(counts.tests));
    attr(suite, "failures", std::to_string(counts.failures));
    attr(suite, "errors", std::to_string(counts.errors));
    attr(suite, "skipped", std::to_string(counts.skipped));
    attr(suite, "time", seconds(counts.ms));
    if (!report.run.started_at.empty()) attr(suite, "timestamp", report.run.started_at);
    attr(suite, "hostname", report.run.host.empty() ? std::string("localhost") : report.run.host);
    total.tests += counts.tests;
    total.failures += counts.failures;
    total.errors += counts.errors;
    total.skipped += counts.skipped;
    total.ms += counts.ms;
  }
  attr(root, "tests", std::to_string(total.tests));
  attr(root, "failures", std::to_string(total.failures));
  attr(root, "errors", std::to_string(total.errors));
  attr(root, "time", seconds(total.ms));

  std::ostringstream out;
  doc.save(out, "  ", pugi::format_indent, pugi::encoding_utf8);
  return out.str();
}

}  // namespace heapgate
