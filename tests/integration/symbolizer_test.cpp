// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The Symbolizer on real jemalloc dumps: this test binary (PIE), a shared
// library linked to it, a non-PIE child program, and child processes at
// different ASLR addresses. binutils' addr2line is the independent oracle for
// module offsets.
#include <dlfcn.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/build_id.h"
#include "heapgate/profile.h"
#include "heapgate/profile_scope.h"
#include "heapgate/symbolizer.h"
#include "symbols_lib.h"
#include "heapgate/sys.h"
#include "test_support.h"
#include "workload_runner.h"

namespace {

int g_leak_line = 0;
int g_inline_line = 0;
int g_call_line = 0;

void escape(void* p) { asm volatile("" : : "g"(p) : "memory"); }

__attribute__((noinline)) void symbolizer_test_leak(std::vector<void*>& keep) {
  // clang-format off
  void* p = std::malloc(4000); g_leak_line = __LINE__;  // NOLINT: one line, so __LINE__ is the call's
  // clang-format on
  escape(p);
  keep.push_back(p);
}

__attribute__((always_inline)) inline void* inlined_allocation(std::size_t n) {
  // clang-format off
  void* p = std::malloc(n); g_inline_line = __LINE__;  // NOLINT
  // clang-format on
  escape(p);
  return p;
}

__attribute__((noinline)) void calls_inlined(std::vector<void*>& keep) {
  // clang-format off
  void* p = inlined_allocation(6000); g_call_line = __LINE__;  // NOLINT
  // clang-format on
  keep.push_back(p);
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// Where a function shows up in a profile.
struct Found {
  const heapgate::StackRecord* record = nullptr;
  const heapgate::Location* location = nullptr;
  std::size_t frame = 0;  // index in location->frames
};

std::optional<Found> find_function(heapgate::Symbolizer& symbolizer, const heapgate::Profile& profile,
                                   std::string_view name) {
  for (const auto& record : profile.stacks) {
    for (const heapgate::Location* loc : symbolizer.symbolize_stack(profile, record)) {
      for (std::size_t i = 0; i < loc->frames.size(); ++i) {
        if (contains(loc->frames[i].function, name)) return Found{&record, loc, i};
      }
    }
  }
  return std::nullopt;
}

// binutils' answer for `addr2line -f -C -e module offset`: function, then file:line.
std::vector<std::string> addr2line(std::string_view module, std::uint64_t offset) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(offset));
  auto run = heapgate::sys::run_process({"addr2line", "-f", "-C", "-e", std::string(module), hex});
  EXPECT_TRUE(run && run->exit_code == 0) << (run ? run->stderr_text : run.error().message());
  std::vector<std::string> lines;
  if (!run) return lines;
  std::string line;
  for (char c : run->stdout_text) {
    if (c == '\n') {
      lines.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  return lines;
}

std::string build_id_of(std::string_view path) {
  auto id = heapgate::detail::read_build_id(std::string(path));
  EXPECT_TRUE(id) << id.error().message();
  return id ? *id : std::string();
}

// One in-process dump shared by the tests below: made once, in exact mode.
class SymbolizerInProcess : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!heapgate::testing::mode_unavailable_reason(heapgate::Mode::exact).empty()) return;
    static std::vector<void*> keep;
    keep.reserve(16);
    const std::string path = heapgate::testing::make_temp_dir() + "/in_process.heap";
    {
      heapgate::ProfileScope scope{"symbolizer", {heapgate::Mode::exact, path}};
      symbolizer_test_leak(keep);
      calls_inlined(keep);
      symbols_lib::library_leak(keep, 5000);
      auto result = scope.finish();
      ASSERT_TRUE(result) << result.error().message();
    }
    auto profile = heapgate::read_profile(path);
    ASSERT_TRUE(profile) << profile.error().message();
    profile_ = new heapgate::Profile(std::move(*profile));
  }

  void SetUp() override {
    HEAPGATE_REQUIRE_PROFILING();
    ASSERT_NE(profile_, nullptr);
  }

  static const heapgate::Profile& profile() { return *profile_; }

  static heapgate::Profile* profile_;
};

heapgate::Profile* SymbolizerInProcess::profile_ = nullptr;

TEST_F(SymbolizerInProcess, NamesANoinlineFunctionWithFileAndLine) {
  heapgate::Symbolizer symbolizer;
  auto found = find_function(symbolizer, profile(), "symbolizer_test_leak");
  ASSERT_TRUE(found);
  const heapgate::Location& loc = *found->location;
  ASSERT_EQ(found->frame, loc.frames.size() - 1);
  const heapgate::SourceFrame& frame = loc.frames.back();
  EXPECT_EQ(frame.function, "(anonymous namespace)::symbolizer_test_leak(std::vector<void*, std::allocator<void*> >&)");
  EXPECT_FALSE(frame.inlined);
  EXPECT_TRUE(ends_with(frame.file, "/tests/integration/symbolizer_test.cpp")) << frame.file;
  EXPECT_EQ(frame.line, static_cast<std::uint32_t>(g_leak_line));
  EXPECT_EQ(found->record->counts.live_objects, 1u);
  EXPECT_EQ(found->record->counts.live_bytes, 4096u);  // 4000 B in jemalloc's 4 KiB class

  auto self = heapgate::sys::self_exe_path();
  ASSERT_TRUE(self);
  EXPECT_EQ(loc.module, *self);
  EXPECT_FALSE(loc.build_id.empty());
  EXPECT_EQ(loc.build_id, build_id_of(loc.module));
  // The offset is what addr2line takes, and is where the function lives in this
  // PIE executable: its address minus the load base.
  auto a2l = addr2line(loc.module, loc.offset);
  ASSERT_EQ(a2l.size(), 2u);
  EXPECT_TRUE(contains(a2l[0], "symbolizer_test_leak")) << a2l[0];
  EXPECT_TRUE(contains(a2l[1], "symbolizer_test.cpp:" + std::to_string(g_leak_line))) << a2l[1];
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&symbolizer_test_leak), &info), 0);
  const auto function_offset =
      reinterpret_cast<std::uintptr_t>(&symbolizer_test_leak) - reinterpret_cast<std::uintptr_t>(info.dli_fbase);
  EXPECT_GT(loc.offset, function_offset);
  EXPECT_LT(loc.offset, function_offset + 256);

  // Every code mapping of this process matches its file's loadable segments.
  heapgate::Symbolizer all;
  all.symbolize_all(profile());
  EXPECT_GE(all.stats().modules_loaded, 3u);  // this test (with heapgate's malloc), the helper library, libc
  EXPECT_EQ(all.stats().mappings_mismatched, 0u);
}

TEST_F(SymbolizerInProcess, ShowsAnAlwaysInlineFunctionAsAnInlinedFrame) {
  heapgate::Symbolizer symbolizer;
  auto found = find_function(symbolizer, profile(), "inlined_allocation");
  ASSERT_TRUE(found);
  const heapgate::Location& loc = *found->location;
  ASSERT_EQ(loc.frames.size(), 2u);
  EXPECT_EQ(found->frame, 0u);
  EXPECT_EQ(loc.frames[0].function, "(anonymous namespace)::inlined_allocation(unsigned long)");
  EXPECT_TRUE(loc.frames[0].inlined);
  EXPECT_EQ(loc.frames[0].line, static_cast<std::uint32_t>(g_inline_line));
  EXPECT_TRUE(ends_with(loc.frames[0].file, "symbolizer_test.cpp")) << loc.frames[0].file;
  // The function it was inlined into, at the line of the inlined call.
  EXPECT_EQ(loc.frames[1].function,
            "(anonymous namespace)::calls_inlined(std::vector<void*, std::allocator<void*> >&)");
  EXPECT_FALSE(loc.frames[1].inlined);
  EXPECT_EQ(loc.frames[1].line, static_cast<std::uint32_t>(g_call_line));
  EXPECT_TRUE(ends_with(loc.frames[1].file, "symbolizer_test.cpp")) << loc.frames[1].file;
  EXPECT_EQ(found->record->counts.live_bytes, 6144u);
}

TEST_F(SymbolizerInProcess, NamesFunctionsOfASharedLibraryThroughItsOwnFile) {
  heapgate::Symbolizer symbolizer;
  auto found = find_function(symbolizer, profile(), "library_leak");
  ASSERT_TRUE(found);
  const heapgate::Location& loc = *found->location;
  EXPECT_TRUE(ends_with(loc.module, "/libheapgate_symbols_lib.so")) << loc.module;
  const heapgate::SourceFrame& frame = loc.frames[found->frame];
  EXPECT_EQ(frame.function, "symbols_lib::library_leak(std::vector<void*, std::allocator<void*> >&, unsigned long)");
  EXPECT_TRUE(ends_with(frame.file, "/tests/helpers/symbols/symbols_lib.cpp")) << frame.file;
  EXPECT_EQ(frame.line, static_cast<std::uint32_t>(symbols_lib::library_leak_line()));
  EXPECT_FALSE(loc.build_id.empty());
  EXPECT_EQ(loc.build_id, build_id_of(loc.module));
  auto a2l = addr2line(loc.module, loc.offset);
  ASSERT_EQ(a2l.size(), 2u);
  EXPECT_EQ(a2l[0], frame.function);
}

TEST_F(SymbolizerInProcess, AddressesOutsideEveryMappingAreUnknownNotErrors) {
  heapgate::Symbolizer symbolizer;
  const heapgate::Location& exact = symbolizer.symbolize(profile(), 0x10, heapgate::AddressKind::exact);
  EXPECT_FALSE(exact.known());
  EXPECT_TRUE(exact.module.empty());
  EXPECT_TRUE(exact.build_id.empty());
  EXPECT_EQ(exact.offset, 0x10u);
  const heapgate::Location& ret = symbolizer.symbolize(profile(), 0x10);
  EXPECT_EQ(ret.offset, 0xfu);
  EXPECT_EQ(symbolizer.modules_loaded(), 0u);
}

// Rewrites the mapping of this executable in a copy of the profile.
heapgate::Profile with_own_mapping_changed(const heapgate::Profile& profile, const std::string& self,
                                           void (*change)(heapgate::Mapping&)) {
  heapgate::Profile copy = profile;
  for (auto& m : copy.mappings) {
    if (m.path == self) change(m);
  }
  copy.maps_text.clear();
  return copy;
}

TEST_F(SymbolizerInProcess, MissingDeletedOrReplacedFilesGiveUnknownFramesWithModuleAndOffset) {
  auto self = heapgate::sys::self_exe_path();
  ASSERT_TRUE(self);
  heapgate::Symbolizer reference;
  auto found = find_function(reference, profile(), "symbolizer_test_leak");
  ASSERT_TRUE(found);
  // The address of the leak's frame in the record, and its file offset.
  const heapgate::StackRecord& record = *found->record;
  std::uint64_t address = 0;
  for (std::size_t i = 1; i < record.frames.size(); ++i) {
    if (&reference.symbolize(profile(), record.frames[i]) == found->location) address = record.frames[i];
  }
  ASSERT_NE(address, 0u);
  const heapgate::Mapping* mapping = profile().find_mapping(address - 1);
  ASSERT_NE(mapping, nullptr);
  const std::uint64_t file_offset = address - 1 - mapping->start + mapping->offset;

  struct Case {
    const char* what;
    void (*change)(heapgate::Mapping&);
    std::string module;
  };
  const Case cases[] = {
      {"deleted", [](heapgate::Mapping& m) { m.path += " (deleted)"; }, *self},
      {"replaced (other inode)", [](heapgate::Mapping& m) { m.inode += 1; }, *self},
      {"rebuilt in place (code segment of another size)",
       [](heapgate::Mapping& m) {
         // More than the largest page the match allows for (64 KiB): a
         // segment a page longer could still round to the mapping's size.
         if (m.executable()) m.end += 0x11000;
       },
       *self},
      {"missing", [](heapgate::Mapping& m) { m.path = "/nonexistent/heapgate/libgone.so"; },
       "/nonexistent/heapgate/libgone.so"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    heapgate::Profile changed = with_own_mapping_changed(profile(), *self, c.change);
    heapgate::Symbolizer symbolizer;
    const heapgate::Location& loc = symbolizer.symbolize(changed, address);
    EXPECT_FALSE(loc.known());
    EXPECT_EQ(loc.module, c.module);
    EXPECT_EQ(loc.offset, file_offset);
    // The whole profile still symbolizes: only this module's frames are unknown.
    auto all = symbolizer.symbolize_all(changed);
    std::size_t frames = 0;
    for (const auto& r : changed.stacks) frames += r.frames.size();
    EXPECT_EQ(all.size(), frames);
    EXPECT_TRUE(find_function(symbolizer, changed, "library_leak"));
    EXPECT_FALSE(find_function(symbolizer, changed, "symbolizer_test_leak"));
  }
}

TEST(Symbolizer, SymbolizesANonPieExecutable) {
  HEAPGATE_REQUIRE_PROFILING();
  const std::string dir = heapgate::testing::make_temp_dir();
  std::string out;
  heapgate::Profile profile = heapgate::testing::run_dumping_helper("symbols_nopie", dir + "/nopie.heap", {}, &out);
  ASSERT_FALSE(profile.stacks.empty());
  const std::string binary = heapgate::testing::helper_binary("symbols_nopie");
  auto elf = heapgate::sys::read_file(binary);
  ASSERT_TRUE(elf);
  ASSERT_GT(elf->size(), 17u);
  ASSERT_EQ(static_cast<unsigned char>((*elf)[16]), 2u) << "expected an ET_EXEC (non-PIE) executable";

  heapgate::Symbolizer symbolizer;
  auto found = find_function(symbolizer, profile, "nopie_leak");
  ASSERT_TRUE(found);
  const heapgate::Location& loc = *found->location;
  EXPECT_EQ(loc.module, binary);
  EXPECT_EQ(loc.build_id, build_id_of(binary));
  EXPECT_EQ(loc.frames.back().function,
            "(anonymous namespace)::nopie_leak(std::vector<void*, std::allocator<void*> >&)");
  EXPECT_TRUE(ends_with(loc.frames.back().file, "/tests/helpers/symbols/nopie_dump.cpp"));
  EXPECT_EQ("line=" + std::to_string(loc.frames.back().line) + "\n", out);
  EXPECT_EQ(found->record->counts.live_objects, 3u);
  // An ET_EXEC module address is absolute (linked at 0x400000).
  EXPECT_GE(loc.offset, 0x400000u);
  auto a2l = addr2line(binary, loc.offset);
  ASSERT_EQ(a2l.size(), 2u);
  EXPECT_EQ(a2l[0], loc.frames.back().function);
}

TEST(Symbolizer, SharesModulesAndAddressesAcrossProcessesOfOneBuild) {
  HEAPGATE_REQUIRE_PROFILING();
  const std::string dir = heapgate::testing::make_temp_dir();
  heapgate::Profile first = heapgate::testing::run_heap_workload(dir, "first.heap", 2, 2);
  heapgate::Profile second = heapgate::testing::run_heap_workload(dir, "second.heap", 2, 2);
  ASSERT_FALSE(first.stacks.empty());
  ASSERT_FALSE(second.stacks.empty());

  heapgate::Symbolizer symbolizer;
  symbolizer.symbolize_all(first);
  const heapgate::SymbolizerStats after_first = symbolizer.stats();
  EXPECT_GE(after_first.modules_loaded, 2u);  // heap_workload (with heapgate's malloc), libc
  EXPECT_GT(after_first.addresses_resolved, 0u);
  symbolizer.symbolize_all(second);
  const heapgate::SymbolizerStats after_second = symbolizer.stats();
  // The second process maps the same files (elsewhere, under ASLR): no file is
  // opened again and no address is looked up in libdw again.
  EXPECT_EQ(after_second.modules_loaded, after_first.modules_loaded);
  EXPECT_EQ(after_second.modules_seen, after_first.modules_seen);
  EXPECT_EQ(after_second.addresses_resolved, after_first.addresses_resolved);
  EXPECT_GT(after_second.cache_hits, after_first.cache_hits);
  EXPECT_EQ(after_second.mappings_mismatched, 0u);  // every code mapping matches its file

  auto in_first = find_function(symbolizer, first, "injected_leak");
  auto in_second = find_function(symbolizer, second, "injected_leak");
  ASSERT_TRUE(in_first);
  ASSERT_TRUE(in_second);
  EXPECT_EQ(in_first->location, in_second->location);  // one cached Location
  EXPECT_EQ(in_first->location->frames.back().function, "(anonymous namespace)::injected_leak(int)");
}

}  // namespace
