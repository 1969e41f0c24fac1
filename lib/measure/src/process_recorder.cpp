// SPDX-License-Identifier: MIT
// Whole-process recording for `heapgate record` (process_recorder.h): start_recording(), the fork
// child's restart, write_snapshot() and finish_recording() writing DIR/<pid>/ without allocating.
#include "process_recorder.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>

#include "heapgate/allocator.h"
#include "heapgate/integration.h"
#include "heapgate/process_json.h"
#include "alloc_counting.h"
#include "raw_writer.h"
#include "stack_capture.h"

namespace heapgate::detail {
namespace {

// How long the end of a process waits for a lock another thread holds: a
// thread inside the allocator's bookkeeping leaves it in microseconds; one
// that never does (it crashed there) must not hang the exit.
constexpr int kLockWaitMs = 2000;

// Everything in fixed arrays: finish_recording() runs in signal handlers.
struct State {
  char dir[PATH_MAX] = {};
  char process_dir[PATH_MAX] = {};
  pid_t pid = 0;  // the process recording; a vfork() child shares this memory but not the pid
  bool exact = false;
  bool counting = false;
  int window = -1;
  CountedTotals start;
  char not_exact[256] = {};    // why counters measured when exact was asked for
  char not_counted[256] = {};  // why nothing was measured
  std::atomic<bool> finished{false};
  std::atomic<unsigned> snapshots{0};
};
State g_state;

// dst = a + b (+ c), cut to fit.
void join(char* dst, std::size_t size, std::string_view a, std::string_view b, std::string_view c = {}) noexcept {
  std::size_t n = 0;
  for (std::string_view part : {a, b, c}) {
    const std::size_t take = part.size() < size - 1 - n ? part.size() : size - 1 - n;
    std::memcpy(dst + n, part.data(), take);
    n += take;
  }
  dst[n] = '\0';
}

void copy_text(char (&dst)[256], std::string_view text) noexcept { join(dst, sizeof dst, text, {}); }

std::string_view decimal(std::uint64_t v, char (&buf)[24]) noexcept {
  int n = 0;
  char digits[24];
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  for (int i = 0; i < n; ++i) buf[i] = digits[n - 1 - i];
  return std::string_view(buf, static_cast<std::size_t>(n));
}

void set_process_dir() noexcept {
  char pid[24];
  join(g_state.process_dir, sizeof g_state.process_dir, g_state.dir, "/",
       decimal(static_cast<std::uint64_t>(::getpid()), pid));
}

// DIR/<pid>/<name>, written under a temporary name and renamed, so a file
// that exists is whole. False when it could not be written.
template <typename Fill>
bool write_file(std::string_view name, Fill fill) noexcept {
  (void)::mkdir(g_state.process_dir, 0777);
  char path[PATH_MAX];
  char temp[PATH_MAX];
  join(path, sizeof path, g_state.process_dir, "/", name);
  join(temp, sizeof temp, path, ".tmp");
  const int fd = ::open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return false;
  const bool ok = fill(fd);
  const bool closed = ::close(fd) == 0;
  if (!ok || !closed || ::rename(temp, path) != 0) {
    (void)::unlink(temp);
    return false;
  }
  return true;
}

bool write_view(std::string_view name, CaptureView view, CaptureTotals* totals) noexcept {
  return write_file(name, [&](int fd) { return write_capture_view(fd, view, kLockWaitMs, totals); });
}

void start_counting() noexcept {
  g_state.window = open_window();
  g_state.counting = g_state.window >= 0;
  if (!g_state.counting) {
    copy_text(g_state.not_counted, why_no_counting()[0] != '\0' ? why_no_counting() : "no counting window was free");
    return;
  }
  g_state.start = counted_totals();
}

}  // namespace

bool start_recording(const RecordingConfig& config) noexcept {
  HookSuppressor suppress;
  join(g_state.dir, sizeof g_state.dir, config.dir, {});
  g_state.pid = ::getpid();
  set_process_dir();
  g_state.exact = false;
  if (config.exact) {
    const AllocatorStatus& status = allocator_status();
    if (status.exact_through_hooks && counting_source() != CountingSource::none) {
      g_state.exact = true;
    } else {
      copy_text(g_state.not_exact,
                !status.why_not_exact.empty() ? status.why_not_exact.c_str() : "libunwind.so.8 could not be loaded");
    }
  }
  if (g_state.exact) {
    track_peak_stacks(true);
    // Before the window: the window's first counted allocation is recorded.
    g_state.exact = begin_stack_capture();
  }
  start_counting();
  return g_state.counting;
}

void restart_recording_in_child() noexcept {
  HookSuppressor suppress;
  g_state.pid = ::getpid();
  set_process_dir();
  g_state.finished.store(false);
  g_state.snapshots.store(0);
  if (!g_state.counting) return;
  // The parent's blocks live on in the child, but they are the parent's:
  // the child's profiles hold what the child allocated.
  (void)close_window(g_state.window);
  if (g_state.exact) g_state.exact = begin_stack_capture();
  start_counting();
}

void write_snapshot() noexcept {
  if (!g_state.exact || g_state.finished.load()) return;
  HookSuppressor suppress;
  const unsigned n = g_state.snapshots.load() + 1;
  char name[32] = "snapshot.";
  char digits[24];
  const std::string_view number = decimal(n, digits);
  std::size_t at = std::strlen(name);
  for (std::size_t pad = number.size(); pad < 4; ++pad) name[at++] = '0';
  std::memcpy(name + at, number.data(), number.size());
  std::memcpy(name + at + number.size(), ".heap", 6);
  if (write_view(name, CaptureView::live, nullptr)) g_state.snapshots.store(n);
}

void finish_recording(int signo) noexcept {
  // A vfork() child ending (it shares the parent's memory, and no fork
  // handler told it apart) must not mark the parent's recording finished.
  if (g_state.pid != ::getpid()) return;
  if (g_state.finished.exchange(true)) return;
  HookSuppressor suppress;
  CaptureTotals totals;
  bool live = false, allocations = false, peak = false, counted = false;
  bool upper_bound = false;
  if (g_state.exact) {
    live = write_view("live.heap", CaptureView::live, &totals);
    allocations = write_view("allocations.heap", CaptureView::allocations, nullptr);
    peak = write_view("peak.heap", CaptureView::peak, nullptr);
    counted = live;
  } else if (g_state.counting) {
    WindowResult window;
    CountedTotals now;
    counted = try_peek_window(g_state.window, kLockWaitMs, &window, &now);
    if (counted) {
      totals.allocations = now.allocations - g_state.start.allocations;
      totals.allocated_bytes = now.allocated_bytes - g_state.start.allocated_bytes;
      totals.live_allocations = window.live_allocations;
      totals.live_bytes = window.live_bytes;
      totals.peak_bytes = window.peak_bytes;
      // Each thread's own highest point, summed (alloc_counting.h).
      upper_bound = window.other_thread_allocations != 0;
    }
  }
  char exe[PATH_MAX];
  const ssize_t exe_size = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  const std::string_view exe_path(exe, exe_size > 0 ? static_cast<std::size_t>(exe_size) : 0);
  const unsigned snapshots = g_state.snapshots.load();
  // The process is ending (exit or a fatal signal): a file that cannot be
  // written has nobody left to tell; the command reports the missing
  // process.json as "ended without writing".
  (void)write_file("process.json", [&](int fd) {
    namespace key = process_json;
    RawWriter out(fd);
    const char* separator = "{\n  \"";
    auto name = [&](std::string_view field) {
      out.put(separator);
      out.put(field);
      out.put("\": ");
      separator = ",\n  \"";
    };
    auto number = [&](std::string_view field, std::uint64_t value) {
      name(field);
      out.number(value);
    };
    auto boolean = [&](std::string_view field, bool value) {
      name(field);
      out.put(value ? "true" : "false");
    };
    auto text = [&](std::string_view field, std::string_view value) {
      name(field);
      out.json_string(value);
    };
    text(key::schema, key::kSchema);
    number(key::pid, static_cast<std::uint64_t>(::getpid()));
    number(key::ppid, static_cast<std::uint64_t>(::getppid()));
    text(key::exe, exe_path);
    text(key::mode, g_state.exact ? "exact" : "counters");
    text(key::ended, signo == 0 ? "exit" : "signal");
    number(key::signal, static_cast<std::uint64_t>(signo));
    boolean(key::counted, counted);
    if (counted) {
      number(key::allocations, totals.allocations);
      number(key::allocated_bytes, totals.allocated_bytes);
      number(key::live_allocations, totals.live_allocations);
      number(key::live_bytes, totals.live_bytes);
      number(key::peak_bytes, totals.peak_bytes);
      boolean(key::peak_is_upper_bound, upper_bound);
      if (g_state.exact) {
        number(key::peak_stacks_allocations, totals.peak_copy_allocations);
        number(key::peak_stacks_bytes, totals.peak_copy_bytes);
      }
    }
    number(key::snapshots, snapshots);
    name(key::profiles);
    out.put("[");
    const char* sep = "";
    for (auto [written, file] :
         {std::pair<bool, const char*>{live, "live.heap"}, {allocations, "allocations.heap"}, {peak, "peak.heap"}}) {
      if (!written) continue;
      out.put(sep);
      out.json_string(file);
      sep = ", ";
    }
    out.put("]");
    if (g_state.not_exact[0] != '\0') text(key::not_exact, g_state.not_exact);
    if (g_state.not_counted[0] != '\0') text(key::not_counted, g_state.not_counted);
    if (g_state.exact && !(live && allocations && peak)) {
      text(key::not_written,
           "a profile could not be written: the recording stayed locked by another thread, or DIR "
           "could not be written");
    }
    out.put("\n}\n");
    return out.flush();
  });
}

}  // namespace heapgate::detail
