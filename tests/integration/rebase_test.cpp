// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Rebasing a profile of one process onto another's layout, so `jeprof --base`
// cancels the stacks two runs share although ASLR placed their code apart.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/jeprof.h"
#include "heapgate/profile.h"
#include "heapgate/rebase.h"
#include "profile_test_support.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

using testing::find_function;
using testing::flat_of;

const Mapping* executable_mapping(const Profile& p, const std::string& path) {
  for (const auto& m : p.mappings) {
    if (m.path == path && m.executable()) return &m;
  }
  return nullptr;
}

bool has_frames(const Profile& p, const std::vector<std::uint64_t>& frames) {
  return std::any_of(p.stacks.begin(), p.stacks.end(), [&](const StackRecord& s) { return s.frames == frames; });
}

// The build-id as binutils reads it, to check heapgate's libelf reader against.
std::string readelf_build_id(const std::string& path) {
  auto run = sys::run_process({"readelf", "-n", path});
  if (!run || run->exit_code != 0) return {};
  const std::string key = "Build ID: ";
  std::size_t at = run->stdout_text.find(key);
  if (at == std::string::npos) return {};
  at += key.size();
  return run->stdout_text.substr(at, run->stdout_text.find('\n', at) - at);
}

// Sets an environment variable for the lifetime of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Two runs of heap_workload: the base does the steady work only; the current
// run also allocates and frees 7 objects (injected_extra) and leaks 3 (injected_leak).
class TwoRuns : public ::testing::Test {
 protected:
  void SetUp() override {
    HEAPGATE_REQUIRE_PROFILING();
    dir_ = testing::make_temp_dir();
    base_path_ = dir_ + "/base.heap";
    current_path_ = dir_ + "/current.heap";
    auto b = testing::run_heap_workload(base_path_, 0, 0);
    ASSERT_TRUE(b) << b.error().message();
    auto c = testing::run_heap_workload(current_path_, 7, 3);
    ASSERT_TRUE(c) << c.error().message();
    auto base = read_profile(base_path_);
    ASSERT_TRUE(base) << base.error().message();
    auto current = read_profile(current_path_);
    ASSERT_TRUE(current) << current.error().message();
    base_ = std::move(*base);
    current_ = std::move(*current);
    std::error_code ec;
    exe_ = std::filesystem::canonical(testing::helper_binary("heap_workload"), ec).string();
    ASSERT_FALSE(ec) << ec.message();
  }

  JeprofText jeprof_text(const std::string& base, bool rebased, const std::string& column) const {
    JeprofOptions o;
    o.binary = exe_;
    o.profile = current_path_;
    o.base = base;
    o.extra_args = {column};
    auto out = rebased ? run_jeprof_rebased(o) : run_jeprof(o);
    EXPECT_TRUE(out) << out.error().message();
    if (!out) return {};
    auto text = parse_jeprof_text(*out);
    EXPECT_TRUE(text) << text.error().message() << "\n" << *out;
    return text ? *text : JeprofText{};
  }

  std::string dir_;
  std::string base_path_;
  std::string current_path_;
  std::string exe_;
  Profile base_;
  Profile current_;
};

TEST_F(TwoRuns, RebaseMovesBaseFramesOntoTheCurrentLayout) {
  // ASLR placed the two processes apart, so the raw addresses of the shared stacks differ.
  const Mapping* base_exe = executable_mapping(base_, exe_);
  const Mapping* current_exe = executable_mapping(current_, exe_);
  ASSERT_NE(base_exe, nullptr) << base_.maps_text;
  ASSERT_NE(current_exe, nullptr) << current_.maps_text;
  ASSERT_NE(base_exe->start, current_exe->start)
      << "both runs have the same layout: is ASLR off (kernel.randomize_va_space=0)?";
  ASSERT_EQ(base_.stacks.size(), 2u);     // steady_work: the freed and the kept blocks
  ASSERT_EQ(current_.stacks.size(), 4u);  // plus injected_extra and injected_leak
  for (const auto& s : base_.stacks) EXPECT_FALSE(has_frames(current_, s.frames));

  auto r = rebase_profile(base_, current_);
  ASSERT_TRUE(r) << r.error().message();
  std::size_t frames = 0;
  for (const auto& s : base_.stacks) frames += s.frames.size();
  EXPECT_EQ(r->total_frames, frames);
  EXPECT_GT(r->rebased_frames, 0u);
  EXPECT_EQ(r->rebased_frames, frames);
  EXPECT_EQ(r->unmapped_frames, 0u);
  EXPECT_EQ(r->unmapped_stacks, 0u);
  EXPECT_TRUE(r->missing_modules.empty());

  // Each base stack is now spelled exactly as the same stack in the current run.
  ASSERT_EQ(r->profile.stacks.size(), base_.stacks.size());
  for (std::size_t i = 0; i < base_.stacks.size(); ++i) {
    EXPECT_TRUE(has_frames(current_, r->profile.stacks[i].frames)) << "stack " << i;
    EXPECT_EQ(r->profile.stacks[i].counts, base_.stacks[i].counts);
    EXPECT_EQ(r->profile.stacks[i].threads, base_.stacks[i].threads);
  }
  EXPECT_EQ(r->profile.totals, base_.totals);
  EXPECT_EQ(r->profile.threads, base_.threads);
  EXPECT_EQ(r->profile.sample_period, base_.sample_period);
  EXPECT_EQ(r->profile.mappings, current_.mappings);
  EXPECT_EQ(r->profile.maps_text, current_.maps_text);

  // The modules: the workload itself (with the build-id binutils reads) and
  // libc. heapgate's allocation entry points are in the workload, so its
  // stacks start there, not in jemalloc.
  auto exe = std::find_if(r->modules.begin(), r->modules.end(), [&](const RebasedModule& m) { return m.path == exe_; });
  ASSERT_NE(exe, r->modules.end());
  EXPECT_FALSE(exe->build_id.empty());
  EXPECT_EQ(exe->build_id, readelf_build_id(exe_));
  EXPECT_EQ(exe->inode, current_exe->inode);
  EXPECT_EQ(exe->device, current_exe->device);
  EXPECT_EQ(exe->frames, 2u * 4u);  // malloc (heapgate's), steady_work, main, _start in each of the two stacks
  auto has_module = [&](const char* name) {
    return std::any_of(r->modules.begin(), r->modules.end(),
                       [&](const RebasedModule& m) { return m.path.find(name) != std::string::npos; });
  };
  EXPECT_TRUE(has_module("libc.so"));
  std::size_t module_frames = 0;
  for (const auto& m : r->modules) module_frames += m.frames;
  EXPECT_EQ(module_frames, r->rebased_frames);

  // The rebased profile is a heap_v2 file like any other.
  auto again = parse_profile(write_profile(r->profile));
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(*again, r->profile);
}

TEST_F(TwoRuns, JeprofBaseRebasedLeavesOnlyTheInjectedAllocations) {
  HEAPGATE_REQUIRE_PROGRAM("jeprof");
  // run_jeprof_rebased writes the rebased base to a private directory under $TMPDIR and removes it.
  const std::string tmp = testing::make_temp_dir();
  ScopedEnv tmpdir("TMPDIR", tmp);

  JeprofText live = jeprof_text(base_path_, /*rebased=*/true, "--inuse_objects");
  EXPECT_EQ(live.total, 3);
  EXPECT_EQ(flat_of(live, "injected_leak"), 3);
  for (const auto& line : live.lines) {
    EXPECT_FALSE(testing::is_address(line.name)) << line.name << ": a base frame did not cancel";
    if (testing::bare_function_name(line.name) != "injected_leak") {
      EXPECT_EQ(line.flat, 0) << line.name;
    }
  }
  EXPECT_EQ(find_function(live, "steady_work"), nullptr);
  EXPECT_EQ(find_function(live, "injected_extra"), nullptr);

  JeprofText allocated = jeprof_text(base_path_, /*rebased=*/true, "--alloc_objects");
  EXPECT_EQ(allocated.total, 10);
  EXPECT_EQ(flat_of(allocated, "injected_extra"), 7);
  EXPECT_EQ(flat_of(allocated, "injected_leak"), 3);
  EXPECT_EQ(flat_of(allocated, "steady_work"), 0);  // 210 - 210: cancelled
  for (const auto& line : allocated.lines) {
    EXPECT_FALSE(testing::is_address(line.name)) << line.name << ": a base frame did not cancel";
    EXPECT_GE(line.flat, 0) << line.name;
  }

  EXPECT_TRUE(std::filesystem::is_empty(tmp)) << "run_jeprof_rebased left files in " << tmp;
}

TEST_F(TwoRuns, WithoutRebaseTheSharedStacksDoNotCancel) {
  HEAPGATE_REQUIRE_PROGRAM("jeprof");
  JeprofText raw = jeprof_text(base_path_, /*rebased=*/false, "--alloc_objects");
  // jeprof subtracts by raw address: the base's steady_work lands at addresses
  // the current layout does not map, so the current steady_work stays whole...
  EXPECT_EQ(flat_of(raw, "steady_work"), 210);
  // ...and the base's shows up as a negative, unsymbolized address.
  EXPECT_TRUE(std::any_of(raw.lines.begin(), raw.lines.end(),
                          [](const JeprofTextLine& l) { return testing::is_address(l.name) && l.flat == -210; }));
}

TEST_F(TwoRuns, ADifferentFileAtTheSamePathIsAConflict) {
  Profile rebuilt = current_;
  for (auto& m : rebuilt.mappings) {
    if (m.path == exe_) m.inode += 1;  // what relinking does: a new file at the old path
  }
  rebuilt.maps_text.clear();
  auto r = rebase_profile(base_, rebuilt);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::conflict);
  EXPECT_EQ(r.error().where, exe_);
  EXPECT_NE(r.error().what.find("different builds of " + exe_), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().what.find("inode"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().fix.find("symbolic diff"), std::string::npos) << r.error().message();
}

TEST_F(TwoRuns, AProfileWithoutMapsIsInvalidArgument) {
  auto no_maps = read_profile(testing::data_path("profiles/no_maps.heap"));
  ASSERT_TRUE(no_maps) << no_maps.error().message();
  auto as_base = rebase_profile(*no_maps, current_);
  ASSERT_FALSE(as_base);
  EXPECT_EQ(as_base.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(as_base.error().where, "base");
  EXPECT_NE(as_base.error().what.find("MAPPED_LIBRARIES"), std::string::npos) << as_base.error().message();
  auto as_current = rebase_profile(base_, *no_maps);
  ASSERT_FALSE(as_current);
  EXPECT_EQ(as_current.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(as_current.error().where, "current");
}

TEST_F(TwoRuns, RunJeprofRebasedChecksItsInputs) {
  JeprofOptions o;
  o.binary = exe_;
  o.profile = current_path_;
  auto no_base = run_jeprof_rebased(o);
  ASSERT_FALSE(no_base);
  EXPECT_EQ(no_base.error().code, ErrorCode::invalid_argument);

  const std::string missing = dir_ + "/missing.heap";
  auto absent = run_jeprof_base_rebased(exe_, missing, current_path_);
  ASSERT_FALSE(absent);
  EXPECT_EQ(absent.error().code, ErrorCode::io_error);
  EXPECT_EQ(absent.error().where, missing);

  auto broken = run_jeprof_base_rebased(exe_, testing::data_path("profiles/malformed/crlf.heap"), current_path_);
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().code, ErrorCode::parse_error);
}

// Hand-made layouts, to pin down the arithmetic and every kind of frame.
Mapping map(std::uint64_t start, std::uint64_t end, const char* perms, std::uint64_t offset, std::uint64_t inode,
            const char* path) {
  return Mapping{start, end, perms, offset, inode == 0 ? "00:00" : "fe:01", inode, path};
}

Profile layout(std::vector<Mapping> mappings, std::vector<std::vector<std::uint64_t>> stacks) {
  Profile p;
  p.mappings = std::move(mappings);
  for (auto& frames : stacks) p.stacks.push_back({std::move(frames), {1, 64, 1, 64}, {}});
  return p;
}

TEST(Rebase, MovesEachKindOfFrameAsDocumented) {
  Profile base = layout(
      {
          map(0x1000, 0x2000, "r--p", 0x0, 10, "/bin/app"),
          map(0x2000, 0x4000, "r-xp", 0x1000, 10, "/bin/app"),
          map(0x10000, 0x11000, "r-xp", 0x0, 20, "/lib/only-in-base.so"),
          map(0x20000, 0x21000, "r-xp", 0x0, 0, "[vdso]"),
          map(0x30000, 0x31000, "rw-p", 0x0, 0, ""),
          map(0x40000, 0x42000, "r-xp", 0x5000, 30, "/lib/libx.so (deleted)"),
          map(0x60000, 0x61000, "r-xp", 0x0, 98, "/lib/unused.so"),
      },
      {
          {0x2100, 0x4000, 0x40010},
          {0x2200, 0x10010, 0x20010, 0x30010, 0x999999, 0},
      });
  Profile current = layout(
      {
          map(0x7000, 0x8000, "r--p", 0x0, 10, "/bin/app"), map(0x8000, 0xa000, "r-xp", 0x1000, 10, "/bin/app"),
          map(0x50000, 0x52000, "r-xp", 0x5000, 30, "/lib/libx.so"),
          map(0x70000, 0x71000, "r-xp", 0x0, 99, "/lib/unused.so"),  // rebuilt, but no base frame uses it
      },
      {});
  auto r = rebase_profile(base, current);
  ASSERT_TRUE(r) << r.error().message();
  // 0x2100: /bin/app file offset 0x1100 -> 0x8100. 0x4000 is a return address at
  // the end of the code mapping: found at 0x3fff, moved to 0xa000. The deleted
  // libx.so is the same file (same inode) as current's libx.so.
  EXPECT_EQ(r->profile.stacks[0].frames, (std::vector<std::uint64_t>{0x8100, 0xa000, 0x50010}));
  EXPECT_EQ(r->profile.stacks[1].frames, (std::vector<std::uint64_t>{0x8200, 0x10010, 0x20010, 0x30010, 0x999999, 0}));
  EXPECT_EQ(r->total_frames, 9u);
  EXPECT_EQ(r->rebased_frames, 4u);
  EXPECT_EQ(r->unmapped_frames, 5u);
  EXPECT_EQ(r->unmapped_stacks, 1u);
  ASSERT_EQ(r->modules.size(), 2u);
  EXPECT_EQ(r->modules[0].path, "/bin/app");
  EXPECT_EQ(r->modules[0].frames, 3u);
  EXPECT_EQ(r->modules[0].inode, 10u);
  EXPECT_EQ(r->modules[0].build_id, "");  // no such file on disk
  EXPECT_EQ(r->modules[1].path, "/lib/libx.so");
  EXPECT_EQ(r->modules[1].frames, 1u);
  EXPECT_EQ(r->missing_modules, (std::vector<std::string>{"/lib/only-in-base.so"}));
  EXPECT_EQ(r->profile.mappings, current.mappings);

  // The same layouts with /bin/app rebuilt between the runs.
  current.mappings[1].inode = 11;
  auto conflict = rebase_profile(base, current);
  ASSERT_FALSE(conflict);
  EXPECT_EQ(conflict.error().code, ErrorCode::conflict);
  EXPECT_EQ(conflict.error().where, "/bin/app");
  EXPECT_NE(conflict.error().what.find("inode 10"), std::string::npos) << conflict.error().message();
  EXPECT_NE(conflict.error().what.find("inode 11"), std::string::npos) << conflict.error().message();
}

TEST(Rebase, RejectsUnsortedMappingsOfAHandBuiltProfile) {
  Profile base = layout(
      {map(0x7000, 0x8000, "r-xp", 0x0, 10, "/bin/app"), map(0x1000, 0x2000, "r--p", 0x0, 10, "/bin/app")}, {{0x7010}});
  Profile current = layout({map(0x7000, 0x8000, "r-xp", 0x0, 10, "/bin/app")}, {});
  auto r = rebase_profile(base, current);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(r.error().where, "base");
  EXPECT_NE(r.error().what.find("out of order"), std::string::npos) << r.error().message();
}

TEST(Rebase, AFileMappedAtAnotherOffsetIsMissing) {
  Profile base = layout({map(0x1000, 0x2000, "r-xp", 0x3000, 10, "/bin/app")}, {{0x1010}});
  Profile current = layout({map(0x7000, 0x8000, "r-xp", 0x0, 10, "/bin/app")}, {});
  auto r = rebase_profile(base, current);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->profile.stacks[0].frames, (std::vector<std::uint64_t>{0x1010}));
  EXPECT_EQ(r->unmapped_frames, 1u);
  EXPECT_EQ(r->missing_modules, (std::vector<std::string>{"/bin/app"}));
  EXPECT_TRUE(r->modules.empty());
}

}  // namespace
}  // namespace heapgate
