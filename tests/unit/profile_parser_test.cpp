// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// heap_v2 parser and writer on hand-written and recorded fixtures, the
// malformed corpus, and a generated fuzz loop. Needs no jemalloc.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/profile.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

using testing::data_path;

std::string read_text(const std::string& relative) {
  auto text = sys::read_file(data_path(relative));
  EXPECT_TRUE(text) << text.error().message();
  return text ? *text : std::string();
}

Profile parse_fixture(const std::string& relative) {
  auto p = read_profile(data_path(relative));
  EXPECT_TRUE(p) << p.error().message();
  return p ? *p : Profile{};
}

// jeprof's AdjustSamples for one (n, s) pair, written out here independently of heapgate.
double jeprof_scale(double n, double s, double period) { return 1.0 / (1.0 - std::exp(-((s / n) / period))); }

void expect_round_trip(const std::string& relative) {
  std::string text = read_text(relative);
  auto p = parse_profile(text, relative);
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(write_profile(*p), text) << relative;
  auto again = parse_profile(write_profile(*p));
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(*again, *p) << relative;
}

TEST(ProfileParser, ParsesARecordedJemallocDump) {
  Profile p = parse_fixture("profiles/workload_recorded.heap");
  EXPECT_EQ(p.sample_period, 1u);
  EXPECT_FALSE(p.sampled());
  EXPECT_EQ(p.totals, (Counts{13, 10528, 220, 23664}));
  ASSERT_EQ(p.threads.size(), 1u);
  EXPECT_EQ(p.threads[0].thread_uid, 0u);
  EXPECT_FALSE(p.threads[0].name.has_value());
  ASSERT_EQ(p.stacks.size(), 4u);
  Counts sum;
  for (const auto& s : p.stacks) {
    EXPECT_EQ(s.frames.size(), 9u);
    ASSERT_EQ(s.threads.size(), 1u);
    EXPECT_EQ(s.threads[0].counts, s.counts);
    sum.live_objects += s.counts.live_objects;
    sum.live_bytes += s.counts.live_bytes;
    sum.accum_objects += s.counts.accum_objects;
    sum.accum_bytes += s.counts.accum_bytes;
  }
  EXPECT_EQ(sum, p.totals);
  EXPECT_EQ(p.stacks[0].frames[0], 0x7f37672a2630u);
  EXPECT_EQ(p.stacks[3].counts, (Counts{3, 288, 3, 288}));  // injected_leak: 3 x 96 B
  ASSERT_GE(p.mappings.size(), 5u);
  EXPECT_EQ(p.mappings[1].start, 0x555c92af4000u);
  EXPECT_EQ(p.mappings[1].end, 0x555c92b24000u);
  EXPECT_EQ(p.mappings[1].permissions, "r-xp");
  EXPECT_EQ(p.mappings[1].offset, 0x4000u);
  EXPECT_EQ(p.mappings[1].device, "fe:00");
  EXPECT_EQ(p.mappings[1].inode, 5309039u);
  EXPECT_EQ(p.mappings[1].path, "/work/main/build-p/tests/heap_workload");
  EXPECT_TRUE(p.mappings[1].executable());
  EXPECT_TRUE(p.mappings[1].file_backed());
  // The executable's code holds the workload's caller frames.
  const Mapping* m = p.find_mapping(p.stacks[0].frames[4]);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m, &p.mappings[1]);
  expect_round_trip("profiles/workload_recorded.heap");
}

TEST(ProfileParser, UnsamplesASampledProfileAsJeprofDoes) {
  Profile p = parse_fixture("profiles/sampled.heap");
  EXPECT_EQ(p.sample_period, 524288u);
  EXPECT_TRUE(p.sampled());
  ASSERT_EQ(p.stacks.size(), 3u);

  // 185 samples of 1 KiB: jeprof printed 97,088,030 B for this pair (docs/platform-facts.md §7).
  const Counts& c = p.stacks[0].counts;
  ScaledCounts s = unsample(c, p.sample_period);
  const double live_scale = jeprof_scale(185, 189440, 524288);
  EXPECT_NEAR(live_scale, 512.5, 0.01);
  EXPECT_DOUBLE_EQ(s.live_objects, 185 * live_scale);
  EXPECT_DOUBLE_EQ(s.live_bytes, 189440 * live_scale);
  EXPECT_EQ(static_cast<std::uint64_t>(s.live_bytes), 97088030u);  // jeprof's "%d" truncates
  // The accumulated pair is scaled with its own ratio, not the live one.
  const double accum_scale = jeprof_scale(190, 194560, 524288);
  EXPECT_DOUBLE_EQ(s.accum_objects, 190 * accum_scale);
  EXPECT_DOUBLE_EQ(s.accum_bytes, 194560 * accum_scale);

  // Large objects are almost always sampled: the scale is close to 1.
  ScaledCounts big = unsample(p.stacks[1].counts, p.sample_period);
  EXPECT_DOUBLE_EQ(big.live_bytes, 7340032 * jeprof_scale(7, 7340032, 524288));
  EXPECT_LT(big.live_bytes, 7340032 * 1.2);  // ratio 2: scale 1/(1-e^-2) = 1.157
  EXPECT_GT(big.live_bytes, 7340032.0);

  // n == 0 keeps s unscaled, as jeprof does (prof_unbias can write "0: 400").
  ScaledCounts zero = unsample(p.stacks[2].counts, p.sample_period);
  EXPECT_EQ(zero.live_objects, 0.0);
  EXPECT_EQ(zero.live_bytes, 400.0);
  EXPECT_EQ(zero.accum_objects, 0.0);

  // n > 0 with s == 0 cannot come from jemalloc; it stays finite rather than inf/NaN.
  ScaledCounts odd = unsample(Counts{3, 0, 0, 0}, 524288);
  EXPECT_EQ(odd.live_objects, 3.0);
  EXPECT_EQ(odd.live_bytes, 0.0);
  expect_round_trip("profiles/sampled.heap");
}

TEST(ProfileParser, PeriodOneIsNotScaled) {
  Profile p = parse_fixture("profiles/period1.heap");
  EXPECT_EQ(p.sample_period, 1u);
  ASSERT_EQ(p.stacks.size(), 1u);
  ScaledCounts s = unsample(p.stacks[0].counts, p.sample_period);
  EXPECT_EQ(s.live_objects, 5.0);
  EXPECT_EQ(s.live_bytes, 40.0);
  EXPECT_EQ(s.accum_objects, 9.0);
  EXPECT_EQ(s.accum_bytes, 72.0);
  // jeprof's formula would inflate 8-byte objects at period 1; heapgate keeps them exact.
  EXPECT_GT(5 * jeprof_scale(5, 40, 1), 5.001);
  // A period of 0 (a Profile built by hand) is treated like 1.
  EXPECT_EQ(unsample(p.stacks[0].counts, 0).live_objects, 5.0);
  expect_round_trip("profiles/period1.heap");
}

TEST(ProfileParser, AcceptsAProfileWithoutMappedLibraries) {
  Profile p = parse_fixture("profiles/no_maps.heap");
  EXPECT_TRUE(p.mappings.empty());
  EXPECT_TRUE(p.maps_text.empty());
  EXPECT_EQ(p.find_mapping(0x7f0000001010), nullptr);
  ASSERT_EQ(p.stacks.size(), 1u);
  EXPECT_EQ(p.stacks[0].frames, (std::vector<std::uint64_t>{0x7f0000001010, 0x555500001234, 0}));
  EXPECT_EQ(p.stacks[0].counts, (Counts{3, 3072, 4, 4096}));
  expect_round_trip("profiles/no_maps.heap");
}

TEST(ProfileParser, KeepsThreadNamesAndMapKinds) {
  Profile p = parse_fixture("profiles/thread_names.heap");
  ASSERT_EQ(p.threads.size(), 4u);
  EXPECT_EQ(p.threads[0].name, std::optional<std::string>("main"));
  EXPECT_EQ(p.threads[1].name, std::optional<std::string>("worker 1"));
  EXPECT_EQ(p.threads[1].counts, (Counts{2, 512, 4, 1024}));
  EXPECT_FALSE(p.threads[2].name.has_value());
  EXPECT_EQ(p.threads[3].name, std::optional<std::string>(""));  // "] " with nothing after
  ASSERT_EQ(p.stacks.size(), 1u);
  ASSERT_EQ(p.stacks[0].threads.size(), 3u);
  for (const auto& t : p.stacks[0].threads) EXPECT_FALSE(t.name.has_value());
  EXPECT_EQ(p.stacks[0].threads[2].thread_uid, 2u);

  ASSERT_EQ(p.mappings.size(), 7u);
  EXPECT_EQ(p.mappings[3].path, "[heap]");
  EXPECT_FALSE(p.mappings[3].file_backed());
  EXPECT_FALSE(p.mappings[5].file_backed());  // [stack]
  EXPECT_TRUE(p.mappings[6].executable());    // [vdso]
  EXPECT_FALSE(p.mappings[6].file_backed());
  EXPECT_TRUE(p.mappings[4].deleted());
  EXPECT_TRUE(p.mappings[4].file_backed());
  EXPECT_EQ(p.mappings[4].path, "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 (deleted)");
  EXPECT_FALSE(p.mappings[1].deleted());
  expect_round_trip("profiles/thread_names.heap");
}

TEST(ProfileParser, FindMappingHonoursBounds) {
  Profile p = parse_fixture("profiles/thread_names.heap");
  const Mapping* code = p.find_mapping(0x555500001234);
  ASSERT_NE(code, nullptr);
  EXPECT_EQ(code->permissions, "r-xp");
  EXPECT_EQ(p.find_mapping(0x555500001000), code);            // start is inclusive
  EXPECT_EQ(p.find_mapping(0x555500003000), &p.mappings[2]);  // end is exclusive
  EXPECT_EQ(p.find_mapping(0x555499ffffff), nullptr);         // below every mapping
  EXPECT_EQ(p.find_mapping(0x600000000000), nullptr);         // in a gap
  EXPECT_EQ(p.find_mapping(0xffffffffffffffff), nullptr);     // above every mapping
}

TEST(ProfileWriter, RendersMappingsAsProcMapsWhenThereIsNoText) {
  Profile p;
  p.sample_period = 1;
  p.totals = {2, 128, 2, 128};
  p.threads.push_back({7, {2, 128, 2, 128}, std::string("io")});
  p.stacks.push_back({{0x7f0000001010, 0x555500001234, 0}, {2, 128, 2, 128}, {{7, {2, 128, 2, 128}, {}}}});
  p.mappings.push_back({0x555500001000, 0x555500003000, "r-xp", 0x1000, "fe:00", 1234, "/usr/bin/app"});
  p.mappings.push_back({0x7f0000000000, 0x7f0000002000, "rw-p", 0, "00:00", 0, ""});
  std::string text = write_profile(p);
  EXPECT_NE(text.find("\n@ 0x7f0000001010 0x555500001234 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  t7: 2: 128 [2: 128] io\n"), std::string::npos) << text;
  // The kernel's layout: zero-padded hex, the path in column 73.
  EXPECT_NE(text.find("\nMAPPED_LIBRARIES:\n555500001000-555500003000 r-xp 00001000 fe:00 1234"
                      "                       /usr/bin/app\n7f0000000000-7f0000002000 rw-p 00000000 00:00 0 \n"),
            std::string::npos)
      << text;
  auto parsed = parse_profile(text);
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->mappings, p.mappings);
  EXPECT_EQ(parsed->stacks, p.stacks);
  EXPECT_EQ(parsed->threads, p.threads);
  EXPECT_EQ(write_profile(*parsed), text);
}

TEST(ProfileParser, ReadProfileNamesAMissingFile) {
  std::string path = testing::make_temp_dir() + "/absent.heap";
  auto p = read_profile(path);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, ErrorCode::io_error);
  EXPECT_EQ(p.error().where, path);
}

struct MalformedCase {
  const char* file;
  std::size_t line;
  const char* found;     // what the message must quote or name as found
  const char* expected;  // what the message must say was expected
};

// One entry per file in tests/data/profiles/malformed (MalformedProfiles.CorpusIsFullyListed checks).
const MalformedCase kMalformed[] = {
    {"truncated_record.heap", 5, "truncated file", "expected \"  t*: <objs>: <bytes>"},
    {"truncated_line.heap", 5, "\"  t*: 1: 6\"", "has no newline"},
    {"truncated_maps.heap", 9, "truncated file", "/proc/PID/maps lines after \"MAPPED_LIBRARIES:\""},
    {"bad_number.heap", 5, "got \"x: 64 [1: 64]\"", "expected \": \" after live objects"},
    {"negative.heap", 3, "negative number in live objects", "expected an unsigned number"},
    {"huge_counts.heap", 5, "\"18446744073709551616\"", "overflows 64 bits"},
    {"missing_record_total.heap", 5, "got \"@ 0x7f0000001020\"", "record without its t* line: expected \"  t*:"},
    {"missing_header_total.heap", 2, "got \"@ 0x7f0000001010\"", "expected \"  t*: <objs>"},
    {"header_only.heap", 2, "truncated file", "expected \"  t*: <objs>"},
    {"empty_stack.heap", 4, "empty stack: \"@\" has no frames", "expected \"@ 0x<hex> 0x<hex> ...\""},
    {"too_many_frames.heap", 4, "too many frames: 1025", "at most 1024 expected"},
    {"bad_frame.heap", 4, "got \"0x7f00zz\"", "expected a frame address \"0x<hex>\""},
    {"missing_header.heap", 1, "missing header: \"  t*: 1: 64 [1: 64]\"", "expected \"heap_v2/<period>\""},
    {"gperftools.heap", 1, "gperftools/jemalloc<4 heap profile format", "expected \"heap_v2/<period>\""},
    {"heap_v3.heap", 1, "unsupported version \"heap_v3/1\"", "expected \"heap_v2/<period>\""},
    {"period_zero.heap", 1, "sample period 0", "expected 2^lg_prof_sample >= 1"},
    {"crlf.heap", 1, "CR LF line ending", "use LF only"},
    {"binary.heap", 1, "\"\\x7fELF\\x02\\x01\\x01\\x00", "expected \"heap_v2/<period>\""},
    {"empty.heap", 1, "empty input", "expected \"heap_v2/<period>\""},
    {"maps_out_of_order.heap", 10, "out of order", "expected ascending addresses"},
    {"bad_maps_line.heap", 9, "got \"rwzp\"", "expected permissions like \"r-xp\""},
    {"trailing_garbage.heap", 7, "unexpected line (trailing garbage?) \"hello world\"",
     "expected an \"@ 0x...\" record"},
    {"blank_then_garbage.heap", 8, "got \"hello world\"", "expected \"MAPPED_LIBRARIES:\" after the blank line"},
    {"bad_thread_line.heap", 3, "got \"x: 1: 64 [1: 64]\"", "expected thread id (decimal digits)"},
    {"record_thread_name.heap", 6, "trailing text \" main\"", "\"  t0: 1: 64 [1: 64] main\""},
    {"missing_accum.heap", 2, "got \"\"", "expected \" [\" after live bytes"},
};

TEST(MalformedProfiles, EachFileFailsWithWhereWhatAndExpected) {
  for (const auto& c : kMalformed) {
    SCOPED_TRACE(c.file);
    const std::string path = data_path(std::string("profiles/malformed/") + c.file);
    ASSERT_TRUE(sys::exists(path));
    auto p = read_profile(path);
    ASSERT_FALSE(p) << "parsed without error";
    const Error& e = p.error();
    EXPECT_EQ(e.code, ErrorCode::parse_error) << e.message();
    EXPECT_EQ(e.where, path + ":" + std::to_string(c.line)) << e.message();
    EXPECT_NE(e.what.find(c.found), std::string::npos) << "missing \"" << c.found << "\" in: " << e.message();
    EXPECT_NE(e.what.find(c.expected), std::string::npos) << "missing \"" << c.expected << "\" in: " << e.message();
    EXPECT_EQ(e.message().rfind(path + ":" + std::to_string(c.line) + ": ", 0), 0u) << e.message();
  }
}

TEST(MalformedProfiles, NameTheFixWhereThereIsOne) {
  auto crlf = read_profile(data_path("profiles/malformed/crlf.heap"));
  ASSERT_FALSE(crlf);
  EXPECT_NE(crlf.error().fix.find("dos2unix"), std::string::npos) << crlf.error().message();
  auto old = read_profile(data_path("profiles/malformed/gperftools.heap"));
  ASSERT_FALSE(old);
  EXPECT_NE(old.error().fix.find("jemalloc >= 4"), std::string::npos) << old.error().message();
  auto cut = read_profile(data_path("profiles/malformed/truncated_record.heap"));
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().fix.find("cut short"), std::string::npos) << cut.error().message();
}

TEST(MalformedProfiles, CorpusIsFullyListed) {
  std::set<std::string> listed;
  for (const auto& c : kMalformed) listed.insert(c.file);
  std::set<std::string> on_disk;
  for (const auto& entry : std::filesystem::directory_iterator(data_path("profiles/malformed"))) {
    if (entry.path().extension() == ".heap") on_disk.insert(entry.path().filename().string());
  }
  EXPECT_EQ(on_disk, listed);
}

// Every outcome of parsing arbitrary text is a profile or a parse_error that
// names "<fuzz>:LINE" inside the text; a profile must survive write and parse.
void expect_sane_outcome(std::string_view text) {
  auto p = parse_profile(text, "<fuzz>");
  if (p) {
    auto again = parse_profile(write_profile(*p), "<rewritten>");
    ASSERT_TRUE(again) << again.error().message();
    ASSERT_EQ(*again, *p);
    return;
  }
  const Error& e = p.error();
  ASSERT_EQ(e.code, ErrorCode::parse_error) << e.message();
  ASSERT_EQ(e.where.rfind("<fuzz>:", 0), 0u) << e.message();
  std::size_t line = std::stoul(e.where.substr(7));
  std::size_t lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  ASSERT_GE(line, 1u);
  ASSERT_LE(line, lines + 1) << e.message();
  ASSERT_FALSE(e.what.empty());
}

TEST(ProfileParserFuzz, EveryTruncationOfARecordedDump) {
  const std::string text = read_text("profiles/workload_recorded.heap");
  ASSERT_GT(text.size(), 1000u);
  std::size_t parsed = 0;
  for (std::size_t n = 0; n <= text.size(); ++n) {
    std::string_view prefix(text.data(), n);
    auto p = parse_profile(prefix, "<fuzz>");
    if (p) {
      ++parsed;
      // A prefix that parses ends on a line boundary, and is written back unchanged.
      ASSERT_EQ(write_profile(*p), prefix) << "prefix of " << n << " bytes";
    } else {
      ASSERT_NO_FATAL_FAILURE(expect_sane_outcome(prefix)) << "prefix of " << n << " bytes";
    }
  }
  // Prefixes that end after a complete record or maps line are valid profiles.
  EXPECT_GE(parsed, 10u);
  EXPECT_LT(parsed, 100u);
}

TEST(ProfileParserFuzz, RandomEditsNeverCrash) {
  std::vector<std::string> seeds;
  for (const char* f : {"profiles/workload_recorded.heap", "profiles/sampled.heap", "profiles/thread_names.heap",
                        "profiles/no_maps.heap"}) {
    seeds.push_back(read_text(f));
  }
  std::mt19937 rng(0x4ea9'a7e5);  // fixed: a failure must reproduce
  static constexpr char kInteresting[] = {'\n', ' ', '0', '9', 'x', '-', ':', '@', '[', ']', 't', '*', '\r', '\0'};
  std::size_t accepted = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string text = seeds[static_cast<std::size_t>(i) % seeds.size()];
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits && !text.empty(); ++k) {
      std::size_t at = rng() % text.size();
      switch (rng() % 5) {
        case 0:
          text[at] = static_cast<char>(text[at] ^ (1u << (rng() % 8)));
          break;
        case 1:
          text[at] = kInteresting[rng() % sizeof kInteresting];
          break;
        case 2:
          text.erase(at, 1 + rng() % 8);
          break;
        case 3:
          text.insert(at, 1, kInteresting[rng() % sizeof kInteresting]);
          break;
        default:
          text.insert(at, text.substr(rng() % text.size(), 1 + rng() % 40));
          break;
      }
    }
    ASSERT_NO_FATAL_FAILURE(expect_sane_outcome(text)) << "iteration " << i;
    accepted += parse_profile(text).has_value() ? 1 : 0;
  }
  // Both outcomes occur, so the loop explores the parser and not just its first check.
  EXPECT_GT(accepted, 50u);
  EXPECT_LT(accepted, 3950u);
}

}  // namespace
}  // namespace heapgate
