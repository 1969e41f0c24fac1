// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The operating-system seam on hostile files: FIFOs, devices and directories
// where a file was expected, files over the size limits, the temp files of
// interrupted writes, and directories removed at exit; children started to
// run beside the caller (start_process()).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

namespace fs = std::filesystem;

// Runs `check` in a forked child with a deadline, so a call that blocks
// fails the test instead of hanging it: 0 = passed, 124 = timed out, else
// the check's own failure code.
int in_child_with_deadline(const std::function<int()>& check, unsigned seconds = 10) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(seconds);
    ::_exit(check());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return WTERMSIG(status) == SIGALRM ? 124 : 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

// 0 when `result` failed with an io_error at `path` whose text contains `text`.
template <typename T>
int failed_with(const Result<T>& result, const std::string& path, const std::string& text) {
  if (result) return 1;
  if (result.error().code != ErrorCode::io_error) return 2;
  if (result.error().where != path) return 3;
  if (result.error().what.find(text) == std::string::npos) return 4;
  return 0;
}

TEST(SysRead, AFifoIsRefusedAtOnceNeverOpenedForReading) {
  const std::string dir = testing::make_temp_dir();
  const std::string fifo = dir + "/profile.heap";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // No writer ever opens it: a blocking open() would wait forever.
  EXPECT_EQ(in_child_with_deadline([&] { return failed_with(sys::read_file(fifo), fifo, "a FIFO"); }), 0);
  EXPECT_EQ(in_child_with_deadline([&] { return failed_with(sys::map_file(fifo), fifo, "a FIFO"); }), 0);
  EXPECT_EQ(in_child_with_deadline([&] { return failed_with(sys::open_regular_file(fifo), fifo, "a FIFO"); }), 0);
  auto refused = sys::read_file(fifo);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message(),
            fifo +
                ": is a FIFO (named pipe), not a regular file; fix: pass a regular file (save a stream or a "
                "device's output to a file first)");
}

TEST(SysRead, DevicesAndDirectoriesAreRefusedNotReadWithoutBound) {
  // /dev/zero never ends: read whole, it ran until std::bad_alloc.
  EXPECT_EQ(failed_with(sys::read_file("/dev/zero"), "/dev/zero", "is a character device, not a regular file"), 0);
  EXPECT_EQ(failed_with(sys::map_file("/dev/zero"), "/dev/zero", "is a character device"), 0);
  const std::string dir = testing::make_temp_dir();
  EXPECT_EQ(failed_with(sys::read_file(dir), dir, "is a directory"), 0);
  EXPECT_EQ(failed_with(sys::read_file(dir + "/missing"), dir + "/missing", "No such file"), 0);
}

TEST(SysRead, FilesOverTheLimitOfTheirKindAreRefusedWithSizeAndLimit) {
  const std::string dir = testing::make_temp_dir();
  const std::string small = dir + "/small.json";
  ASSERT_TRUE(sys::write_file_atomic(small, std::string(100, 'x')));
  auto over = sys::read_file(small, sys::SizeLimit{10, "test file"});
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().message(),
            small +
                ": is 100 bytes, over heapgate's limit of 10 bytes for a test file; fix: check that this is the "
                "file you meant");
  EXPECT_EQ(failed_with(sys::map_file(small, sys::SizeLimit{99, "test file"}), small, "is 100 bytes"), 0);
  auto exact = sys::read_file(small, sys::SizeLimit{100, "test file"});
  ASSERT_TRUE(exact) << exact.error().message();
  EXPECT_EQ(*exact, std::string(100, 'x'));

  // A sparse file one byte over the profile limit: refused before any byte is read.
  const std::string huge = dir + "/huge.heap";
  {
    int fd = ::open(huge.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(sys::kProfileSizeLimit.bytes + 1)), 0);
    ::close(fd);
  }
  auto mapped = sys::map_file(huge);
  ASSERT_FALSE(mapped);
  EXPECT_EQ(mapped.error().what,
            "is 1.0 GiB (1073741825 bytes), over heapgate's limit of 1.0 GiB (1073741824 bytes) for a heap profile");
  EXPECT_EQ(failed_with(sys::read_file(huge), huge, "for a heapgate document"), 0);
}

TEST(SysRead, RegularFilesReadAsBefore) {
  const std::string dir = testing::make_temp_dir();
  ASSERT_TRUE(sys::write_file_atomic(dir + "/empty", ""));
  auto empty = sys::map_file(dir + "/empty");
  ASSERT_TRUE(empty) << empty.error().message();
  EXPECT_EQ(empty->text(), "");
  ASSERT_TRUE(sys::write_file_atomic(dir + "/text", "heap_v2/1\n"));
  auto text = sys::map_file(dir + "/text");
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(text->text(), "heap_v2/1\n");
  auto fd = sys::open_regular_file(dir + "/text");
  ASSERT_TRUE(fd) << fd.error().message();
  ::close(*fd);
}

// Sets a file's modification time `seconds_ago` into the past.
void age(const std::string& path, int seconds_ago) {
  struct timespec times[2];
  times[0].tv_sec = times[1].tv_sec = std::time(nullptr) - seconds_ago;
  times[0].tv_nsec = times[1].tv_nsec = 0;
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << path;
}

TEST(SysWrite, StaleTempFilesOfTheSameTargetAreRemovedAndNothingElse) {
  const std::string dir = testing::make_temp_dir();
  const std::string target = dir + "/suite.json";
  const int stale = static_cast<int>(sys::kStaleTempAge.count()) + 60;
  // What kill -9 in the middle of write_file_atomic leaves: `<target>.tmp.XXXXXX`.
  const std::string orphan = target + ".tmp.Ab3dE9";
  ASSERT_TRUE(sys::write_file_atomic(orphan, std::string(8 << 20, '{')));
  age(orphan, stale);
  // Everything else stays, however old: other targets, other patterns, a
  // fresh temp file (a writer at work), a directory, a link.
  const std::vector<std::string> kept_files = {
      dir + "/other.json.tmp.Ab3dE9", target + ".tmp.Ab3dE", target + ".tmp.Ab3dE9x",
      target + ".tmp.Ab-dE9",         target + ".tmp.",      target + ".bak",
      dir + "/xsuite.json.tmp.Ab3dE9"};
  for (const auto& file : kept_files) {
    ASSERT_TRUE(sys::write_file_atomic(file, "keep"));
    age(file, stale);
  }
  const std::string fresh = target + ".tmp.Fresh1";
  ASSERT_TRUE(sys::write_file_atomic(fresh, "a writer at work"));
  const std::string directory = target + ".tmp.Dir123";
  fs::create_directory(directory);
  age(directory, stale);
  const std::string link = target + ".tmp.Link12";
  fs::create_symlink(dir + "/other.json.tmp.Ab3dE9", link);
  age(link, stale);

  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(sys::write_file_atomic(target, "{}\n"));
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(said,
            "heapgate: removed 1 stale temporary file of an interrupted write of " + target + ": " + orphan + "\n");
  EXPECT_FALSE(sys::exists(orphan));
  for (const auto& file : kept_files) EXPECT_TRUE(sys::exists(file)) << file;
  EXPECT_TRUE(sys::exists(fresh));
  EXPECT_TRUE(fs::is_directory(directory));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(*sys::read_file(target), "{}\n");

  // Nothing stale: nothing said.
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(sys::write_file_atomic(target, "{}\n"));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(SysRemoveAtExit, TheDirectoryGoesWithTheProcessThatAskedNotWithAForkedChild) {
  // Not under testing::make_temp_dir(): the forked processes' exit would
  // remove those (test_support's own atexit handler) and hide what is tested.
  const std::string dir = sys::temp_root() + "/heapgate-sys-test-" + std::to_string(::getpid()) + "-scratch";
  pid_t pid = ::fork();
  if (pid == 0) {
    fs::create_directories(dir + "/sub");
    if (!sys::write_file_atomic(dir + "/sub/dump.heap", "x")) ::_exit(3);
    sys::remove_at_exit(dir);
    // A forked child that exits normally (a death test with exit(0)) shares
    // the registration but not the directory's lifetime.
    pid_t child = ::fork();
    if (child == 0) std::exit(0);
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!fs::exists(dir + "/sub/dump.heap")) ::_exit(4);
    std::exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(fs::exists(dir));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// A started child runs while the caller goes on, and wait_for_process() reaps
// it with its exit status and what it wrote to its stderr file.
TEST(SysStartedProcess, RunsBesideTheCallerAndIsReapedWithItsStatusAndStderr) {
  const std::string dir = testing::make_temp_dir();
  const std::string marker = dir + "/marker";
  sys::ProcessOptions options;
  options.stdout_path = dir + "/out.txt";
  // It waits for a file the caller writes after starting it: it can only
  // finish if start_process() returned before it ended.
  auto started = sys::start_process(
      {"sh", "-c", "while [ ! -e " + marker + " ]; do sleep 0.01; done; echo out; echo err >&2; exit 7"}, options,
      dir + "/err.txt");
  ASSERT_TRUE(started) << started.error().message();
  ASSERT_TRUE(sys::write_file_atomic(marker, "go"));
  const sys::ProcessResult result = sys::wait_for_process(*started, std::chrono::seconds(30));
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 7);
  EXPECT_EQ(result.stderr_text, "err\n");
  auto out = sys::read_file(dir + "/out.txt");
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, "out\n");
}

// Past its timeout the child and what it started are stopped (its process
// group), and the result says so.
TEST(SysStartedProcess, PastItsTimeoutItsWholeGroupIsStopped) {
  const std::string dir = testing::make_temp_dir();
  const std::string pid_file = dir + "/grandchild.pid";
  auto started = sys::start_process({"sh", "-c", "sleep 60 & echo $! > " + pid_file + "; wait"}, {}, dir + "/err.txt");
  ASSERT_TRUE(started) << started.error().message();
  std::string grandchild;
  for (int i = 0; i < 500 && grandchild.empty(); ++i) {
    if (auto text = sys::read_file(pid_file); text && !text->empty() && text->back() == '\n') grandchild = *text;
    ::usleep(10 * 1000);
  }
  ASSERT_FALSE(grandchild.empty());
  const sys::ProcessResult result =
      sys::wait_for_process(*started, std::chrono::milliseconds(100), std::chrono::milliseconds(100));
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.exit_code, -1);
  // The grandchild got the same SIGTERM.
  const pid_t sleeper = static_cast<pid_t>(std::stol(grandchild));
  const bool gone = testing::process_ends_within(sleeper, 2.0);
  EXPECT_TRUE(gone) << "pid " << sleeper << " outlived its group's stop";
}

}  // namespace
}  // namespace heapgate
