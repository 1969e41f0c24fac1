// SPDX-License-Identifier: MIT
// jemalloc heap_v2 parser and writer (grammar: docs/platform-facts.md §6).
#include "heapgate/profile.h"
#include "heapgate/profile_records.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>
#include <utility>

#include "heapgate/stack_sample.h"
#include "heapgate/sys.h"

namespace heapgate {
namespace {

constexpr std::string_view kCountsShape = "<objs>: <bytes> [<objs>: <bytes>]";
constexpr std::string_view kRecordTotalShape = "\"  t*: <objs>: <bytes> [<objs>: <bytes>]\"";
constexpr std::size_t kQuoteLimit = 100;

// Failures below the line level carry only a detail; the Parser adds the position.
template <typename T>
using Detail = tl::expected<T, std::string>;
inline tl::unexpected<std::string> detail(std::string text) { return tl::unexpected<std::string>(std::move(text)); }

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// The text quoted for an error message: escaped, and cut short when long.
std::string quote(std::string_view s) {
  std::string out = "\"";
  std::size_t n = std::min(s.size(), kQuoteLimit);
  for (std::size_t i = 0; i < n; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > n) out += "...";
  out += '"';
  return out;
}

bool eat(std::string_view& rest, std::string_view literal) {
  if (!starts_with(rest, literal)) return false;
  rest.remove_prefix(literal.size());
  return true;
}

// An unsigned number in `base` at the start of `rest`; consumes it.
Detail<std::uint64_t> take_number(std::string_view& rest, int base, std::string_view what) {
  if (!rest.empty() && rest.front() == '-') {
    return detail("negative number in " + std::string(what) + "; expected an unsigned number");
  }
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value, base);
  if (ec == std::errc::result_out_of_range) {
    std::size_t digits = static_cast<std::size_t>(end - rest.data());
    return detail("number " + quote(rest.substr(0, digits)) + " in " + std::string(what) +
                  " overflows 64 bits (max 18446744073709551615)");
  }
  if (ec != std::errc()) {
    return detail("expected " + std::string(what) + " (" + (base == 16 ? "hex" : "decimal") + " digits), got " +
                  quote(rest.substr(0, 20)));
  }
  rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
  return value;
}

Detail<void> expect(std::string_view& rest, std::string_view literal, std::string_view where) {
  if (eat(rest, literal)) return {};
  return detail("expected " + quote(literal) + " " + std::string(where) + ", got " + quote(rest.substr(0, 20)));
}

// A decimal number as jemalloc writes it (1 to 19 digits: no overflow
// possible) at `p`; false for anything else.
bool take_decimal_fast(const char*& p, const char* end, std::uint64_t& out) {
  const char* const digits = p;
  std::uint64_t value = 0;
  for (; p != end && static_cast<unsigned>(*p - '0') < 10u; ++p) value = value * 10 + static_cast<unsigned>(*p - '0');
  out = value;
  return p != digits && p - digits <= 19;
}

bool take_literal_fast(const char*& p, const char* end, std::string_view literal) {
  if (static_cast<std::size_t>(end - p) < literal.size() || std::memcmp(p, literal.data(), literal.size()) != 0) {
    return false;
  }
  p += literal.size();
  return true;
}

// take_counts for the common case; false (with `rest` untouched) at anything
// else, which take_counts then parses again for the exact error message.
bool take_counts_fast(std::string_view& rest, Counts& c) {
  const char* p = rest.data();
  const char* const end = p + rest.size();
  const bool ok = take_decimal_fast(p, end, c.live_objects) && take_literal_fast(p, end, ": ") &&
                  take_decimal_fast(p, end, c.live_bytes) && take_literal_fast(p, end, " [") &&
                  take_decimal_fast(p, end, c.accum_objects) && take_literal_fast(p, end, ": ") &&
                  take_decimal_fast(p, end, c.accum_bytes) && take_literal_fast(p, end, "]");
  if (ok) rest.remove_prefix(static_cast<std::size_t>(p - rest.data()));
  return ok;
}

// `<objs>: <bytes> [<objs>: <bytes>]`
Detail<Counts> take_counts(std::string_view& rest) {
  Counts c;
  if (take_counts_fast(rest, c)) return c;
  c = Counts{};
  auto num = [&](std::uint64_t& out, std::string_view what) -> Detail<void> {
    auto v = take_number(rest, 10, what);
    if (!v) return tl::unexpected(v.error());
    out = *v;
    return {};
  };
  Detail<void> ok = num(c.live_objects, "live objects");
  if (ok) ok = expect(rest, ": ", "after live objects");
  if (ok) ok = num(c.live_bytes, "live bytes");
  if (ok) ok = expect(rest, " [", "after live bytes");
  if (ok) ok = num(c.accum_objects, "accumulated objects");
  if (ok) ok = expect(rest, ": ", "after accumulated objects");
  if (ok) ok = num(c.accum_bytes, "accumulated bytes");
  if (ok) ok = expect(rest, "]", "after accumulated bytes");
  if (!ok) return tl::unexpected(ok.error());
  return c;
}

// One frame: "0x" followed by hex digits, or "0" (printf's "%#x" of zero).
Detail<std::uint64_t> take_frame(std::string_view& rest) {
  if (rest == "0" || starts_with(rest, "0 ")) {
    rest.remove_prefix(1);
    return 0;
  }
  if (!eat(rest, "0x")) return detail("expected a frame address \"0x<hex>\", got " + quote(rest.substr(0, 20)));
  std::string_view digits = rest.substr(0, rest.find(' '));
  auto value = take_number(rest, 16, "frame address");
  if (!value) return value;
  if (!rest.empty() && rest.front() != ' ') {
    return detail("expected a frame address \"0x<hex>\", got " + quote("0x" + std::string(digits)));
  }
  return value;
}

// The frames of an "@" line as jemalloc writes them (" 0x<hex>" or " 0",
// at most 16 hex digits each), without from_chars' generality: most of a
// large profile is these lines. False, with `frames` partly filled, at the
// first thing it does not expect; the caller then parses the line again.
constexpr std::array<std::uint8_t, 256> hex_digit_table() {
  std::array<std::uint8_t, 256> table{};
  for (auto& v : table) v = 0xff;
  for (int c = 0; c < 10; ++c) table[static_cast<std::size_t>('0' + c)] = static_cast<std::uint8_t>(c);
  for (int c = 0; c < 6; ++c) {
    table[static_cast<std::size_t>('a' + c)] = static_cast<std::uint8_t>(10 + c);
    table[static_cast<std::size_t>('A' + c)] = static_cast<std::uint8_t>(10 + c);
  }
  return table;
}
constexpr std::array<std::uint8_t, 256> kHexDigit = hex_digit_table();

bool take_frames_fast(std::string_view rest, std::vector<std::uint64_t>& frames) {
  const char* p = rest.data();
  const char* const end = p + rest.size();
  while (p != end) {
    if (*p != ' ' || end - p < 2 || p[1] != '0' || frames.size() == kMaxProfileFrames) return false;
    p += 2;
    if (p == end || *p == ' ') {
      frames.push_back(0);
      continue;
    }
    if (*p != 'x') return false;
    ++p;
    const char* const digits = p;
    std::uint64_t value = 0;
    for (; p != end; ++p) {
      const std::uint8_t digit = kHexDigit[static_cast<unsigned char>(*p)];
      if (digit > 15) break;
      value = (value << 4) | digit;
    }
    // Not a frame's end, no digits, or more than 64 bits' worth (overflow, or leading zeros).
    if ((p != end && *p != ' ') || p == digits || p - digits > 16) return false;
    frames.push_back(value);
  }
  return true;
}

// Pre-4.0 jemalloc and gperftools wrote "heap profile: ..."; jeprof still reads it, heapgate does not.
bool is_gperftools_header(std::string_view line) { return starts_with(line, "heap profile:"); }

class Parser {
 public:
  using Visit = std::function<void(const StackRecord&)>;
  // `file`, when given, holds `text`: the parser releases what it has read.
  // `visit`, when given, receives the records instead of profile_.stacks.
  Parser(std::string_view text, std::string_view source, const sys::MappedFile* file = nullptr,
         const Visit* visit = nullptr)
      : text_(text), source_(source), file_(file), visit_(visit) {}

  Result<Profile> run() {
    if (text_.empty()) {
      return fail(error_at(1, "empty input: missing header; expected \"heap_v2/<period>\"",
                           "pass a jemalloc (>= 4) heap profile written by prof.dump; an empty file is a dump "
                           "that never started"));
    }
    auto ok = parse_header();
    if (ok) ok = parse_records();
    if (ok) ok = parse_tail();
    if (!ok) return fail(std::move(ok.error()));
    return std::move(profile_);
  }

  // The MAPPED_LIBRARIES section alone: `text_` is its lines.
  Result<std::vector<Mapping>> run_maps() {
    auto ok = parse_maps();
    if (!ok) return fail(std::move(ok.error()));
    return std::move(profile_.mappings);
  }

 private:
  Error error_at(std::size_t line, std::string what, std::string fix = {}) const {
    return make_error(ErrorCode::parse_error, std::string(source_) + ":" + std::to_string(line), std::move(what),
                      std::move(fix));
  }
  Error error(std::string what, std::string fix = {}) const {
    return error_at(line_no_, std::move(what), std::move(fix));
  }
  Error unexpected_eof(std::string_view expected) const {
    return error_at(line_no_ + 1, "truncated file: it ends here; expected " + std::string(expected),
                    "the dump was cut short (process killed while dumping?); take it again");
  }

  // Moves to the next line. False at the end of the text or on a malformed line ending.
  Result<bool> advance() {
    if (pos_ >= text_.size()) {
      have_line_ = false;
      return false;
    }
    ++line_no_;
    std::size_t nl = text_.find('\n', pos_);
    if (nl == std::string_view::npos) {
      line_ = text_.substr(pos_);
      return fail(error("truncated file: the last line " + quote(line_) + " has no newline",
                        "the dump was cut short (process killed while dumping?); take it again"));
    }
    line_ = text_.substr(pos_, nl - pos_);
    release_before(pos_);
    pos_ = nl + 1;
    if (!line_.empty() && line_.back() == '\r') {
      return fail(error("CR LF line ending (Windows); heap_v2 files use LF only",
                        "convert with dos2unix, or mark *.heap as -text in .gitattributes"));
    }
    have_line_ = true;
    return true;
  }

  // A first line that cannot start a heap_v2 file is reported as such, before
  // any complaint about its line ending: binary garbage has no newline either.
  Result<void> check_format(std::string_view first, bool whole_text) const {
    constexpr std::string_view kMagic = "heap_v2/";
    if (starts_with(first, kMagic)) return {};
    if (whole_text && starts_with(kMagic, first)) return {};  // cut short inside the header
    if (is_gperftools_header(first)) {
      return fail(error_at(1,
                           "old format: " + quote(first) +
                               " is the gperftools/jemalloc<4 heap profile format; expected \"heap_v2/<period>\"",
                           "profile with jemalloc >= 4 (heap_v2)"));
    }
    std::string what = starts_with(first, "heap_v") ? "unsupported version " : "missing header: ";
    return fail(error_at(1, what + quote(first) + "; expected \"heap_v2/<period>\"",
                         "pass a jemalloc (>= 4) heap profile written by prof.dump"));
  }

  Result<void> parse_header() {
    std::size_t first_end = text_.find('\n');
    auto format = check_format(text_.substr(0, first_end), first_end == std::string_view::npos);
    if (!format) return format;
    auto got = advance();
    if (!got) return fail(std::move(got.error()));
    std::string_view rest = line_;
    eat(rest, "heap_v2/");
    auto period = take_number(rest, 10, "sample period");
    if (!period) return fail(error("bad header: " + period.error()));
    if (!rest.empty()) return fail(error("trailing text after the sample period: " + quote(line_)));
    if (*period == 0) return fail(error("sample period 0 in " + quote(line_) + "; expected 2^lg_prof_sample >= 1"));
    profile_.sample_period = *period;
    if (visit_ == nullptr) reserve_stacks();

    got = advance();
    if (!got) return fail(std::move(got.error()));
    if (!*got) return fail(unexpected_eof(std::string(kRecordTotalShape) + " after the header"));
    rest = line_;
    if (!eat(rest, "  t*: ")) {
      return fail(
          error("expected " + std::string(kRecordTotalShape) + " after the heap_v2 header, got " + quote(line_)));
    }
    auto totals = take_line_counts(rest, "\"t*:\" line");
    if (!totals) return fail(std::move(totals.error()));
    profile_.totals = *totals;
    return parse_thread_lines(profile_.threads, /*allow_names=*/true);
  }

  // `  tN: <counts>[ name]` lines until a line that is not one. Leaves the next line current.
  Result<void> parse_thread_lines(std::vector<ThreadCounts>& out, bool allow_names) {
    for (;;) {
      auto got = advance();
      if (!got) return fail(std::move(got.error()));
      if (!*got || !starts_with(line_, "  t") || starts_with(line_, "  t*")) return {};
      std::string_view rest = line_.substr(3);
      ThreadCounts t;
      auto uid = take_number(rest, 10, "thread id");
      if (!uid) return fail(error("bad thread line " + quote(line_) + ": " + uid.error()));
      auto colon = expect(rest, ": ", "after the thread id");
      if (!colon) return fail(error("bad thread line " + quote(line_) + ": " + colon.error()));
      t.thread_uid = *uid;
      auto counts = take_counts(rest);
      if (!counts)
        return fail(error("bad counts in thread line " + quote(line_) + ": " + counts.error() +
                          "; expected \"  t<id>: " + std::string(kCountsShape) + "\""));
      t.counts = *counts;
      if (allow_names && eat(rest, " ")) {
        // jemalloc writes " <name>" only when the thread has one, so " " alone is an empty name.
        t.name = std::string(rest);
      } else if (!rest.empty()) {
        return fail(error("trailing text " + quote(rest) + " after the counts of " + quote(line_)));
      }
      out.push_back(std::move(t));
    }
  }

  Result<Counts> take_line_counts(std::string_view rest, std::string_view what) const {
    auto counts = take_counts(rest);
    if (!counts) {
      return fail(error("bad counts in " + std::string(what) + " " + quote(line_) + ": " + counts.error() +
                        "; expected \"" + std::string(kCountsShape) + "\""));
    }
    if (!rest.empty()) return fail(error("trailing text " + quote(rest) + " after the counts of " + quote(line_)));
    return *counts;
  }

  Result<void> parse_records() {
    while (have_line_ && starts_with(line_, "@")) {
      auto ok = parse_record();
      if (!ok) return ok;
    }
    return {};
  }

  Result<void> parse_record() {
    // A visitor gets one reused record, so a record costs no allocation.
    StackRecord fresh;
    StackRecord& record = visit_ != nullptr ? reused_ : fresh;
    record.frames.clear();
    record.threads.clear();
    auto frames = parse_frames(line_.substr(1), record.frames);
    if (!frames) return frames;
    auto got = advance();
    if (!got) return fail(std::move(got.error()));
    if (!*got) return fail(unexpected_eof(std::string(kRecordTotalShape) + " after \"@\" line"));
    std::string_view rest = line_;
    if (!eat(rest, "  t*: ")) {
      return fail(error("record without its t* line: expected " + std::string(kRecordTotalShape) +
                        " after \"@\" line, got " + quote(line_)));
    }
    auto counts = take_line_counts(rest, "\"t*:\" line");
    if (!counts) return fail(std::move(counts.error()));
    record.counts = *counts;
    auto threads = parse_thread_lines(record.threads, /*allow_names=*/false);
    if (!threads) return threads;
    if (visit_ != nullptr) {
      (*visit_)(record);
    } else {
      profile_.stacks.push_back(std::move(record));
    }
    return {};
  }

  Result<void> parse_frames(std::string_view rest, std::vector<std::uint64_t>& frames) {
    if (rest.find_first_not_of(' ') == std::string_view::npos) {
      return fail(error("empty stack: " + quote(line_) + " has no frames; expected \"@ 0x<hex> 0x<hex> ...\""));
    }
    // No pass to count the frames first: a line the fast path takes has one
    // space per frame, so the limit is checked on what it found. A kept
    // record's frames go through a reused buffer and are copied at their
    // exact size; a visitor's reused record takes them directly.
    std::vector<std::uint64_t>& into = visit_ != nullptr ? frames : frames_;
    into.clear();
    if (take_frames_fast(rest, into) && into.size() <= kMaxProfileFrames) {
      if (&into != &frames) frames.assign(into.begin(), into.end());
      return {};
    }
    std::size_t count = static_cast<std::size_t>(std::count(rest.begin(), rest.end(), ' '));
    if (count > kMaxProfileFrames) {
      return fail(error("too many frames: " + std::to_string(count) + " in one \"@\" record; at most " +
                        std::to_string(kMaxProfileFrames) + " expected (jemalloc records <= 256)"));
    }
    // Anything unusual is parsed again, slowly, for the exact error message.
    frames.clear();
    frames.reserve(count);
    while (!rest.empty()) {
      if (!eat(rest, " ")) return fail(error("expected \" 0x<hex>\" in \"@\" line " + quote(line_)));
      auto frame = take_frame(rest);
      if (!frame) return fail(error("bad \"@\" line " + quote(line_) + ": " + frame.error()));
      frames.push_back(*frame);
    }
    return {};
  }

  // After the records: the end, or a blank line and the MAPPED_LIBRARIES section.
  Result<void> parse_tail() {
    if (!have_line_) return {};
    if (line_.empty()) {
      auto got = advance();
      if (!got) return fail(std::move(got.error()));
      if (!*got) return fail(unexpected_eof("\"MAPPED_LIBRARIES:\" after the blank line"));
      if (line_ != "MAPPED_LIBRARIES:") {
        return fail(
            error("expected \"MAPPED_LIBRARIES:\" after the blank line, got " + quote(line_) + " (trailing garbage?)"));
      }
    } else if (line_ != "MAPPED_LIBRARIES:") {
      return fail(error("unexpected line (trailing garbage?) " + quote(line_) +
                        "; expected an \"@ 0x...\" record, a \"  t<id>:\" line of the record above, a blank "
                        "line and \"MAPPED_LIBRARIES:\", or the end of the file"));
    }
    return parse_maps();
  }

  Result<void> parse_maps() {
    std::string_view maps = text_.substr(pos_);
    profile_.maps_text = std::string(maps);
    // Capped by the shortest valid maps line ("0-1 r--p 0 0:0 0\n"), so junk cannot inflate it.
    auto lines = static_cast<std::size_t>(std::count(maps.begin(), maps.end(), '\n'));
    profile_.mappings.reserve(std::min(lines, maps.size() / 17));
    for (;;) {
      auto got = advance();
      if (!got) return fail(std::move(got.error()));
      // A live process always has mappings: an empty section means the dump was cut short.
      if (!*got && profile_.mappings.empty()) {
        return fail(unexpected_eof("/proc/PID/maps lines after \"MAPPED_LIBRARIES:\""));
      }
      if (!*got) return {};
      auto mapping = parse_mapping(line_);
      if (!mapping) {
        return fail(error("bad maps line " + quote(line_) + ": " + mapping.error() +
                          "; expected \"<start>-<end> <perms> <offset> <dev> <inode> [<path>]\" as in /proc/PID/maps"));
      }
      if (!profile_.mappings.empty() && mapping->start < profile_.mappings.back().end) {
        return fail(error("maps line " + quote(line_) +
                          " is out of order or overlaps the line above; "
                          "expected ascending addresses as /proc/PID/maps prints them"));
      }
      profile_.mappings.push_back(std::move(*mapping));
    }
  }

  static Detail<Mapping> parse_mapping(std::string_view rest) {
    Mapping m;
    auto hex = [&](std::uint64_t& out, std::string_view what) -> Detail<void> {
      auto v = take_number(rest, 16, what);
      if (!v) return tl::unexpected(v.error());
      out = *v;
      return {};
    };
    Detail<void> ok = hex(m.start, "start address");
    if (ok) ok = expect(rest, "-", "after the start address");
    if (ok) ok = hex(m.end, "end address");
    if (ok) ok = expect(rest, " ", "after the end address");
    if (ok) ok = take_permissions(rest, m.permissions);
    if (ok) ok = expect(rest, " ", "after the permissions");
    if (ok) ok = hex(m.offset, "file offset");
    if (ok) ok = expect(rest, " ", "after the file offset");
    if (ok) ok = take_device(rest, m.device);
    if (ok) ok = expect(rest, " ", "after the device");
    if (ok) {
      auto inode = take_number(rest, 10, "inode");
      if (inode)
        m.inode = *inode;
      else
        ok = tl::unexpected(inode.error());
    }
    if (!ok) return tl::unexpected(ok.error());
    if (!rest.empty() && rest.front() != ' ') return detail("expected a space after the inode");
    std::size_t path_start = rest.find_first_not_of(' ');
    if (path_start != std::string_view::npos) m.path = std::string(rest.substr(path_start));
    if (m.start >= m.end) return detail("start address is not below the end address");
    return m;
  }

  static Detail<void> take_permissions(std::string_view& rest, std::string& out) {
    static constexpr std::string_view kAllowed[4] = {"r-", "w-", "x-", "ps"};
    if (rest.size() < 4) return detail("expected permissions like \"r-xp\"");
    for (std::size_t i = 0; i < 4; ++i) {
      if (kAllowed[i].find(rest[i]) == std::string_view::npos) {
        return detail("expected permissions like \"r-xp\", got " + quote(rest.substr(0, 4)));
      }
    }
    out = std::string(rest.substr(0, 4));
    rest.remove_prefix(4);
    return {};
  }

  static Detail<void> take_device(std::string_view& rest, std::string& out) {
    std::string_view dev = rest.substr(0, rest.find(' '));
    std::size_t colon = dev.find(':');
    auto all_hex = [](std::string_view s) {
      return !s.empty() &&
             std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
    };
    if (colon == std::string_view::npos || !all_hex(dev.substr(0, colon)) || !all_hex(dev.substr(colon + 1))) {
      return detail("expected a device \"<major>:<minor>\" in hex, got " + quote(dev));
    }
    out = std::string(dev);
    rest.remove_prefix(dev.size());
    return {};
  }

  // One pass over the text to size the stack vector: records start with "\n@".
  // Capped by the shortest valid record ("@ 0\n  t*: 0: 0 [0: 0]\n"), so junk cannot inflate it.
  void reserve_stacks() {
    std::size_t records = 0;
    std::size_t released = pos_;
    for (std::size_t at = text_.find("\n@", pos_ > 0 ? pos_ - 1 : 0); at != std::string_view::npos;
         at = text_.find("\n@", at + 2)) {
      ++records;
      // Read ahead of the parser: let go of it here too (the parse reads it again).
      if (file_ != nullptr && at - released >= kReleaseStep) {
        file_->release_before(at);
        released = at;
      }
    }
    profile_.stacks.reserve(std::min(records, text_.size() / 22));
  }

  // Lets go of the mapped text before `offset` (the start of the current
  // line), a step at a time: only a window of a large file stays resident.
  void release_before(std::size_t offset) {
    if (file_ != nullptr && offset - released_ >= kReleaseStep) {
      file_->release_before(offset);
      released_ = offset;
    }
  }

  static constexpr std::size_t kReleaseStep = std::size_t{1} << 20;

  std::string_view text_;
  std::string_view source_;
  std::size_t pos_ = 0;      // offset of the next line
  std::size_t line_no_ = 0;  // 1-based number of line_
  std::string_view line_;    // the current line, without its "\n"
  bool have_line_ = false;   // line_ is valid (not past the end)
  const sys::MappedFile* file_ = nullptr;
  std::size_t released_ = 0;  // text before this offset has been released
  const Visit* visit_ = nullptr;
  StackRecord reused_;                 // the record handed to visit_
  std::vector<std::uint64_t> frames_;  // parse_frames' buffer
  Profile profile_;
};

void append_number(std::string& out, std::uint64_t value, int base = 10) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value, base);
  (void)ec;  // 24 bytes hold any uint64 in base 10 or 16
  out.append(buf, end);
}

void append_counts(std::string& out, const Counts& c) {
  append_number(out, c.live_objects);
  out += ": ";
  append_number(out, c.live_bytes);
  out += " [";
  append_number(out, c.accum_objects);
  out += ": ";
  append_number(out, c.accum_bytes);
  out += ']';
}

void append_thread(std::string& out, const ThreadCounts& t, bool with_name) {
  out += "  t";
  append_number(out, t.thread_uid);
  out += ": ";
  append_counts(out, t.counts);
  if (with_name && t.name) {
    out += ' ';
    out += *t.name;
  }
  out += '\n';
}

void append_hex_padded(std::string& out, std::uint64_t value, std::size_t width) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value, 16);
  (void)ec;
  for (auto n = static_cast<std::size_t>(end - buf); n < width; ++n) out += '0';
  out.append(buf, end);
}

// A /proc/PID/maps line as the kernel prints it (show_vma_header_prefix + seq_pad).
void append_mapping(std::string& out, const Mapping& m) {
  std::size_t line_start = out.size();
  append_hex_padded(out, m.start, 8);
  out += '-';
  append_hex_padded(out, m.end, 8);
  out += ' ';
  out += m.permissions;
  out += ' ';
  append_hex_padded(out, m.offset, 8);
  out += ' ';
  out += m.device;
  out += ' ';
  append_number(out, m.inode);
  out += ' ';
  if (!m.path.empty()) {
    constexpr std::size_t kPathColumn = 72;  // 25 + sizeof(void*) * 6 - 1
    while (out.size() - line_start < kPathColumn) out += ' ';
    out += ' ';
    out += m.path;
  }
  out += '\n';
}

double scale_factor(std::uint64_t n, std::uint64_t s, std::uint64_t period) {
  double ratio = (static_cast<double>(s) / static_cast<double>(n)) / static_cast<double>(period);
  return 1.0 / (1.0 - std::exp(-ratio));
}

}  // namespace

bool Mapping::deleted() const {
  constexpr std::string_view kSuffix = " (deleted)";
  return path.size() >= kSuffix.size() && std::string_view(path).substr(path.size() - kSuffix.size()) == kSuffix;
}

const Mapping* Profile::find_mapping(std::uint64_t address) const {
  auto it = std::upper_bound(mappings.begin(), mappings.end(), address,
                             [](std::uint64_t a, const Mapping& m) { return a < m.start; });
  if (it == mappings.begin()) return nullptr;
  --it;
  return it->contains(address) ? &*it : nullptr;
}

namespace {

Result<Profile> run_parser(std::string_view text, std::string_view source, const sys::MappedFile* file = nullptr,
                           const Parser::Visit* visit = nullptr) {
  try {
    return Parser(text, source, file, visit).run();
  } catch (const std::exception& e) {
    // Only allocation failures (and a visitor's exceptions) can throw here;
    // they must not cross the API.
    return fail(make_error(ErrorCode::internal, std::string(source), std::string("parsing failed: ") + e.what()));
  }
}

Result<Profile> read_with(const std::string& path, const Parser::Visit* visit) {
  auto file = sys::map_file(path, sys::kProfileSizeLimit, sys::MapAccess::sequential);
  if (!file) return fail(std::move(file.error()));
  return run_parser(file->text(), path, &*file, visit);
}

}  // namespace

Result<Profile> parse_profile(std::string_view text, std::string_view source) { return run_parser(text, source); }

Result<std::vector<Mapping>> parse_mappings(std::string_view maps_text, std::string_view source) {
  try {
    return Parser(maps_text, source).run_maps();
  } catch (const std::exception& e) {
    return fail(make_error(ErrorCode::internal, std::string(source), std::string("parsing failed: ") + e.what()));
  }
}

Result<Profile> read_profile(const std::string& path) { return read_with(path, nullptr); }

Result<Profile> read_profile_records(const std::string& path,
                                     const std::function<void(const StackRecord& record)>& visit) {
  return read_with(path, &visit);
}

std::string write_profile(const Profile& profile) {
  std::string out;
  // Typical records: ~20 frames of ~15 bytes plus two count lines.
  out.reserve(64 + profile.threads.size() * 48 + profile.stacks.size() * 400 + profile.maps_text.size());
  out += "heap_v2/";
  append_number(out, profile.sample_period);
  out += "\n  t*: ";
  append_counts(out, profile.totals);
  out += '\n';
  for (const auto& t : profile.threads) append_thread(out, t, /*with_name=*/true);
  for (const auto& record : profile.stacks) {
    out += '@';
    for (std::uint64_t frame : record.frames) {
      // printf("%#" PRIxPTR) prints zero as "0", without the prefix.
      out += frame == 0 ? " " : " 0x";
      append_number(out, frame, 16);
    }
    out += "\n  t*: ";
    append_counts(out, record.counts);
    out += '\n';
    for (const auto& t : record.threads) append_thread(out, t, /*with_name=*/false);
  }
  if (!profile.maps_text.empty()) {
    out += "\nMAPPED_LIBRARIES:\n";
    out += profile.maps_text;
  } else if (!profile.mappings.empty()) {
    out += "\nMAPPED_LIBRARIES:\n";
    for (const auto& m : profile.mappings) append_mapping(out, m);
  }
  return out;
}

ScaledCounts unsample(const Counts& counts, std::uint64_t sample_period) {
  ScaledCounts out{static_cast<double>(counts.live_objects), static_cast<double>(counts.live_bytes),
                   static_cast<double>(counts.accum_objects), static_cast<double>(counts.accum_bytes)};
  if (sample_period <= 1) return out;
  if (counts.live_objects != 0 && counts.live_bytes != 0) {
    double f = scale_factor(counts.live_objects, counts.live_bytes, sample_period);
    out.live_objects *= f;
    out.live_bytes *= f;
  }
  if (counts.accum_objects != 0 && counts.accum_bytes != 0) {
    double f = scale_factor(counts.accum_objects, counts.accum_bytes, sample_period);
    out.accum_objects *= f;
    out.accum_bytes *= f;
  }
  return out;
}

bool operator==(const StackSample& a, const StackSample& b) noexcept {
  return a.frames == b.frames && a.counts == b.counts;
}
bool operator!=(const StackSample& a, const StackSample& b) noexcept { return !(a == b); }

}  // namespace heapgate
