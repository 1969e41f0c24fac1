// SPDX-License-Identifier: MIT
// Driver for jemalloc's jeprof perl script (docs/platform-facts.md §8).
#include "heapgate/jeprof.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "heapgate/sys.h"
#include "heapgate/vocabulary.h"

namespace heapgate {
namespace {

constexpr std::size_t kStderrTailLines = 6;

// jeprof's own option for a format is its word after "--".
constexpr Vocabulary<JeprofFormat, 4> kFormatWords = {{
    {JeprofFormat::text, "text"},
    {JeprofFormat::svg, "svg"},
    {JeprofFormat::collapsed, "collapsed"},
    {JeprofFormat::raw, "raw"},
}};

std::string flag_of(JeprofFormat format) { return "--" + std::string(word_of(kFormatWords, format, "text")); }

// The last few non-empty lines of a program's stderr, on one line.
std::string stderr_tail(const std::string& text) {
  std::vector<std::string_view> lines;
  std::string_view rest = text;
  while (!rest.empty()) {
    std::size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    if (!line.empty()) lines.push_back(line);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
  }
  if (lines.empty()) return "(no output on stderr)";
  std::size_t first = lines.size() > kStderrTailLines ? lines.size() - kStderrTailLines : 0;
  std::string out;
  for (std::size_t i = first; i < lines.size(); ++i) {
    if (!out.empty()) out += " | ";
    out += lines[i];
  }
  return out;
}

Result<void> require_program(const std::string& program, const std::string& why, const std::string& fix) {
  if (sys::find_program(program)) return {};
  return fail(make_error(ErrorCode::unavailable, program, program + " not found on PATH; " + why, fix));
}

Result<void> check_tools(const JeprofOptions& options) {
  const std::string& jeprof = options.jeprof_program;
  if (jeprof.empty()) {
    return fail(make_error(ErrorCode::invalid_argument, "jeprof_program", "empty jeprof program name",
                           "leave it at the default \"jeprof\""));
  }
  if (!sys::find_program(jeprof)) {
    std::string looked =
        jeprof.find('/') != std::string::npos ? jeprof + " is not an executable file" : "no " + jeprof + " on PATH";
    return fail(make_error(ErrorCode::unavailable, jeprof,
                           "jeprof not found (" + looked + "); it renders heap profiles",
                           "apt-get install libjemalloc-dev (it ships jeprof), or set the jeprof program path"));
  }
  if (options.format == JeprofFormat::svg) {
    auto ok = require_program("dot", "jeprof --svg needs Graphviz dot", "apt-get install graphviz");
    if (!ok) return ok;
  }
  for (const char* tool : {"nm", "addr2line", "objdump"}) {
    auto ok = require_program(tool, "jeprof needs binutils to symbolize", "apt-get install binutils");
    if (!ok) return ok;
  }
  return {};
}

Result<void> check_inputs(const JeprofOptions& options) {
  std::vector<std::pair<const char*, const std::string*>> inputs = {{"binary", &options.binary},
                                                                    {"profile", &options.profile}};
  if (options.base) inputs.emplace_back("base profile", &*options.base);
  for (const auto& [what, path] : inputs) {
    if (path->empty())
      return fail(make_error(ErrorCode::invalid_argument, "jeprof", std::string("no ") + what + " given"));
    // jeprof takes a path that does not exist for a URL and fetches it with curl.
    if (!sys::exists(*path)) {
      return fail(make_error(ErrorCode::io_error, *path, std::string(what) + " not found",
                             "pass an existing file (jeprof would treat it as a URL)"));
    }
  }
  return {};
}

// A decimal number as jeprof prints it: "-102400", "0.1", "357.1", "nan", "+inf".
bool take_double(std::string_view token, double& out) {
  if (!token.empty() && token.front() == '+') token.remove_prefix(1);
  if (token == "nan" || token == "-nan") {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (token == "inf" || token == "-inf") {
    out = token.front() == '-' ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    return true;
  }
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), out);
  return ec == std::errc() && end == token.data() + token.size();
}

// "12.5%"; jeprof's Percent() prints a bare "nan", "+inf" or "-inf" (no "%") when the total is 0.
bool take_percent(std::string_view token, double& out) {
  if (token == "nan" || token == "+inf" || token == "-inf") return take_double(token, out);
  if (token.empty() || token.back() != '%') return false;
  return take_double(token.substr(0, token.size() - 1), out);
}

// The next space-separated token; leading spaces are skipped.
std::string_view next_token(std::string_view& rest) {
  std::size_t begin = rest.find_first_not_of(' ');
  if (begin == std::string_view::npos) {
    rest = {};
    return {};
  }
  rest.remove_prefix(begin);
  std::size_t end = rest.find(' ');
  std::string_view token = rest.substr(0, end);
  rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
  return token;
}

bool parse_text_line(std::string_view line, JeprofTextLine& out) {
  std::string_view rest = line;
  bool ok = take_double(next_token(rest), out.flat) && take_percent(next_token(rest), out.flat_percent) &&
            take_percent(next_token(rest), out.sum_percent) && take_double(next_token(rest), out.cum) &&
            take_percent(next_token(rest), out.cum_percent);
  if (!ok || rest.size() < 2 || rest.front() != ' ') return false;
  out.name = std::string(rest.substr(1));
  return true;
}

// "Total: 102400 B" / "Total: 7 objects" / "Total: 0.1 MB"
bool parse_total_line(std::string_view line, JeprofText& out) {
  std::string_view rest = line.substr(6);
  if (!take_double(next_token(rest), out.total)) return false;
  std::size_t unit = rest.find_first_not_of(' ');
  out.unit = unit == std::string_view::npos ? std::string() : std::string(rest.substr(unit));
  return true;
}

}  // namespace

std::string_view to_string(JeprofFormat format) noexcept { return word_of(kFormatWords, format, "text"); }

Result<JeprofFormat> parse_jeprof_format(std::string_view text) {
  return parse_word(kFormatWords, text, "format", "format", "text");
}

std::vector<std::string> jeprof_command(const JeprofOptions& options) {
  std::vector<std::string> argv;
  argv.reserve(options.extra_args.size() + 5);
  argv.push_back(options.jeprof_program);
  argv.emplace_back(flag_of(options.format));
  argv.insert(argv.end(), options.extra_args.begin(), options.extra_args.end());
  if (options.base) argv.push_back("--base=" + *options.base);
  argv.push_back(options.binary);
  argv.push_back(options.profile);
  return argv;
}

Result<std::string> run_jeprof(const JeprofOptions& options) {
  auto ok = check_tools(options);
  if (ok) ok = check_inputs(options);
  if (!ok) return fail(std::move(ok.error()));

  sys::ProcessOptions process;
  process.stdout_path = options.output_path;
  process.timeout = options.timeout;
  auto run = sys::run_process(jeprof_command(options), process);
  if (!run) return fail(std::move(run.error()));
  if (run->timed_out) {
    return fail(make_error(
        ErrorCode::external_tool, "jeprof",
        "timed out after " + std::to_string(options.timeout.count()) + " ms: " + stderr_tail(run->stderr_text),
        "raise JeprofOptions::timeout, or render a smaller profile"));
  }
  if (run->exit_code != 0) {
    std::string how = run->term_signal != 0 ? "was killed by signal " + std::to_string(run->term_signal)
                                            : "exited with status " + std::to_string(run->exit_code);
    return fail(make_error(ErrorCode::external_tool, "jeprof", "jeprof " + how + ": " + stderr_tail(run->stderr_text)));
  }
  return std::move(run->stdout_text);
}

const JeprofTextLine* JeprofText::find(std::string_view name) const {
  for (const auto& line : lines) {
    if (line.name == name) return &line;
  }
  return nullptr;
}

Result<JeprofText> parse_jeprof_text(std::string_view text, std::string_view source) {
  JeprofText out;
  bool seen_total = false;
  std::size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    auto where = [&] { return std::string(source) + ":" + std::to_string(line_no); };
    if (!seen_total) {
      if (line.substr(0, 7) != "Total: ") continue;
      if (!parse_total_line(line, out)) {
        return fail(make_error(ErrorCode::parse_error, where(),
                               "expected \"Total: <number> <unit>\", got \"" + std::string(line) + "\""));
      }
      seen_total = true;
      continue;
    }
    if (line.empty()) continue;
    JeprofTextLine parsed;
    if (!parse_text_line(line, parsed)) {
      return fail(
          make_error(ErrorCode::parse_error, where(),
                     "expected \"<flat> <flat%> <sum%> <cum> <cum%> <name>\", got \"" + std::string(line) + "\""));
    }
    out.lines.push_back(std::move(parsed));
  }
  if (!seen_total) {
    return fail(make_error(ErrorCode::parse_error, std::string(source) + ":" + std::to_string(line_no + 1),
                           "no \"Total:\" line in jeprof --text output", "run jeprof with --text"));
  }
  return out;
}

}  // namespace heapgate
