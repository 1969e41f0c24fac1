// SPDX-License-Identifier: MIT
// The run guard: fatal and terminating signal handlers that journal the running test with
// write(2), an atexit hook for exit() mid-test, and the watchdog thread that stops a hung test.
#include "run_guard.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "heapgate/gate.h"
#include "heapgate/profile.h"
#include "heapgate/symbolizer.h"
#include "heapgate/sys.h"

namespace heapgate::harness {
namespace {

enum State : int { kIdle, kRunning, kInterrupted };

// Everything a signal handler reads is here, set before the handlers are
// installed or, per test, published through g_state.
std::atomic<int> g_state{kIdle};
pid_t g_pid = 0;  // a forked death-test child must not speak for the run
int g_journal_fd = -1;
RunGuardOptions g_options;
std::atomic<std::int64_t> g_started_ns{0};  // steady clock, when the test started
std::atomic<std::uint64_t> g_watchdog_switches{0};

// The running test's journal lines, built by interruption_line_prefix() when
// it starts: a handler only copies bytes. Two buffers, so that a handler
// never reads one being rewritten.
constexpr std::size_t kLineBytes = 2048;
struct TestLines {
  char crashed[kLineBytes];
  std::size_t crashed_size = 0;
  char killed[kLineBytes];
  std::size_t killed_size = 0;
  char name[kLineBytes];
  std::size_t name_size = 0;
};
TestLines g_lines[2];
std::atomic<int> g_current{0};
std::string g_name;  // for the exit hook and the watchdog (not for handlers)

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGHUP};
struct sigaction g_previous[sizeof kFatalSignals / sizeof kFatalSignals[0]];

std::size_t copy_into(char* out, std::size_t cap, const std::string& text) {
  const std::size_t n = std::min(text.size(), cap);
  std::memcpy(out, text.data(), n);
  return n;
}

// Async-signal-safe pieces of a line.
void append(char* buf, std::size_t& at, std::size_t cap, const char* text, std::size_t n) {
  if (at + n > cap) n = cap - at;
  std::memcpy(buf + at, text, n);
  at += n;
}
void append_number(char* buf, std::size_t& at, std::size_t cap, long value) {
  char digits[24];
  int n = 0;
  if (value < 0) value = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0 && n < 23);
  while (n > 0 && at < cap) buf[at++] = digits[--n];
}

// `{"interrupted":...,"test":"NAME"` + `,"<key>":N}` + newline, to the journal.
void write_line(const char* prefix, std::size_t prefix_size, const char* key, long value) {
  if (g_journal_fd < 0 || prefix_size == 0) return;
  char line[kLineBytes + 64];
  std::size_t at = 0;
  append(line, at, sizeof line, prefix, prefix_size);
  append(line, at, sizeof line, ",\"", 2);
  append(line, at, sizeof line, key, std::strlen(key));
  append(line, at, sizeof line, "\":", 2);
  append_number(line, at, sizeof line, value);
  append(line, at, sizeof line, "}\n", 2);
  (void)!::write(g_journal_fd, line, at);
}

void say(const char* what, const TestLines& lines) {
  char text[kLineBytes + 128];
  std::size_t at = 0;
  append(text, at, sizeof text, "\nheapgate: ", 11);
  append(text, at, sizeof text, lines.name, lines.name_size);
  append(text, at, sizeof text, what, std::strlen(what));
  (void)!::write(STDERR_FILENO, text, at);
}

bool terminating(int signo) { return signo == SIGTERM || signo == SIGINT || signo == SIGHUP; }

void on_signal(int signo) {
  const int saved_errno = errno;
  int expected = kRunning;
  if (::getpid() == g_pid && g_state.compare_exchange_strong(expected, kInterrupted)) {
    const TestLines& lines = g_lines[g_current.load(std::memory_order_acquire)];
    if (terminating(signo)) {
      write_line(lines.killed, lines.killed_size, "signal", signo);
      say(": killed by a signal while it ran; the report keeps the tests before it\n", lines);
    } else {
      write_line(lines.crashed, lines.crashed_size, "signal", signo);
      say(": crashed (a fatal signal) while it ran; the report keeps the tests before it\n", lines);
    }
  }
  // The signal goes on as if heapgate were not here: the previous handler,
  // or the default action. A fault re-executes and meets it; the others are
  // raised again.
  for (std::size_t i = 0; i < sizeof kFatalSignals / sizeof kFatalSignals[0]; ++i) {
    if (kFatalSignals[i] == signo) ::sigaction(signo, &g_previous[i], nullptr);
  }
  errno = saved_errno;
  if (signo != SIGSEGV && signo != SIGBUS && signo != SIGFPE && signo != SIGILL) ::raise(signo);
}

[[noreturn]] void end_process() {
  std::fflush(nullptr);
  ::_exit(exit_status(GateExit::incomplete));
}

std::atomic<int> g_exit_status{-1};

// exit() while a test runs: the test called it (or a library did). At the
// normal end of the program: the status the listener asked for, if any.
void on_exit() {
  int expected = kRunning;
  if (::getpid() != g_pid) return;
  if (!g_state.compare_exchange_strong(expected, kInterrupted)) {
    if (const int status = g_exit_status.load(); status >= 0) {
      std::fflush(nullptr);
      ::_exit(status);
    }
    return;
  }
  std::fprintf(stderr, "\nheapgate: %s called exit() while it ran; the report keeps the tests before it\n",
               g_name.c_str());
  if (g_options.finish_interrupted) {
    g_options.finish_interrupted(interrupted_record(g_name, Interruption::exited, "exit() was called"));
  }
  end_process();
}

std::string_view base_name(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The stacks of every thread, symbolized, one frame a line.
std::string thread_stacks_text() {
  const std::vector<sys::ThreadStack> stacks = sys::capture_thread_stacks(std::chrono::milliseconds(500));
  auto maps = sys::read_file("/proc/self/maps");
  Profile process;
  if (maps) {
    auto parsed = parse_profile("heap_v2/1\n  t*: 0: 0 [0: 0]\n\nMAPPED_LIBRARIES:\n" + *maps, "/proc/self/maps");
    if (parsed) process = std::move(*parsed);
  }
  Symbolizer symbols;
  const int self = static_cast<int>(::gettid());
  std::string text = std::to_string(stacks.size() - 1) + " threads besides heapgate's watchdog:";
  for (const sys::ThreadStack& stack : stacks) {
    if (stack.tid == self) continue;  // the watchdog's own
    text += "\n  thread " + std::to_string(stack.tid) + " \"" + stack.name + "\"";
    if (!stack.captured) {
      text += ": no stack (it did not answer the signal)";
      continue;
    }
    int shown = 0;
    for (std::size_t i = 0; i < stack.frames.size() && shown < 24; ++i) {
      const Location& where =
          symbols.symbolize(process, stack.frames[i], i == 0 ? AddressKind::exact : AddressKind::return_address);
      std::string frame;
      if (where.frames.empty()) {
        char address[32];
        std::snprintf(address, sizeof address, "0x%llx", static_cast<unsigned long long>(stack.frames[i]));
        frame = address;
        if (!where.module.empty()) frame += " (" + std::string(base_name(where.module)) + ")";
      } else {
        const SourceFrame& f = where.frames.back();
        frame = f.function.size() > 200 ? std::string(f.function.substr(0, 200)) + "…" : std::string(f.function);
        if (!f.file.empty()) frame += " (" + std::string(base_name(f.file)) + ":" + std::to_string(f.line) + ")";
      }
      text += "\n    #" + std::to_string(shown++) + " " + frame;
    }
  }
  return text;
}

void watch() {
  const auto limit = std::chrono::duration_cast<std::chrono::nanoseconds>(g_options.timeout).count();
  for (;;) {
    // Published before each sleep, counting the switch the sleep makes.
    struct rusage own {};
    if (::getrusage(RUSAGE_THREAD, &own) == 0) {
      g_watchdog_switches.store(
          static_cast<std::uint64_t>(own.ru_nvcsw) + static_cast<std::uint64_t>(own.ru_nivcsw) + 1,
          std::memory_order_release);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    if (g_state.load(std::memory_order_acquire) != kRunning) continue;
    const std::int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
    if (now - g_started_ns.load(std::memory_order_relaxed) < limit) continue;
    int expected = kRunning;
    if (!g_state.compare_exchange_strong(expected, kInterrupted)) continue;
    const TestLines& lines = g_lines[g_current.load(std::memory_order_acquire)];
    const long seconds = static_cast<long>(g_options.timeout.count());
    // First what needs no memory, so the journal names the test whatever follows.
    std::string prefix = interruption_line_prefix(Interruption::hung, g_name);
    write_line(prefix.data(), prefix.size(), "seconds", seconds);
    say(": still running after the test timeout (--heapgate_test_timeout); stopping the run\n", lines);
    // Writing the report allocates; if the hung test holds a lock that needs,
    // the process ends anyway.
    struct sigaction alarm_action {};
    alarm_action.sa_handler = [](int) { ::_exit(exit_status(GateExit::incomplete)); };
    ::sigaction(SIGALRM, &alarm_action, nullptr);
    ::alarm(60);
    TestRecord record = interrupted_record(
        g_name, Interruption::hung,
        "still running after " + std::to_string(seconds) + " s, the limit of --heapgate_test_timeout");
    record.message += "\n" + thread_stacks_text();
    if (g_options.finish_interrupted) g_options.finish_interrupted(std::move(record));
    end_process();
  }
}

std::atomic<bool> g_watchdog_started{false};

}  // namespace

std::uint64_t guard_thread_switches() noexcept { return g_watchdog_switches.load(std::memory_order_acquire); }

int guard_threads() noexcept { return g_watchdog_started.load(std::memory_order_acquire) ? 1 : 0; }

void start_run_guard(RunGuardOptions options) {
  static std::once_flag once;
  std::call_once(once, [&] {
    g_options = std::move(options);
    g_pid = ::getpid();
    g_journal_fd = g_options.journal_fd;
    struct sigaction action {};
    action.sa_handler = on_signal;
    action.sa_flags = SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    for (std::size_t i = 0; i < sizeof kFatalSignals / sizeof kFatalSignals[0]; ++i) {
      ::sigaction(kFatalSignals[i], &action, &g_previous[i]);
    }
    std::atexit(on_exit);
    if (g_options.timeout.count() > 0) {
      std::thread(watch).detach();
      g_watchdog_started.store(true, std::memory_order_release);
    }
  });
}

void guard_test_started(const std::string& name) {
  const int next = 1 - g_current.load(std::memory_order_relaxed);
  TestLines& lines = g_lines[next];
  lines.crashed_size = copy_into(lines.crashed, kLineBytes, interruption_line_prefix(Interruption::crashed, name));
  lines.killed_size = copy_into(lines.killed, kLineBytes, interruption_line_prefix(Interruption::killed, name));
  lines.name_size = copy_into(lines.name, kLineBytes, name);
  g_name = name;
  g_current.store(next, std::memory_order_release);
  g_started_ns.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  g_state.store(kRunning, std::memory_order_release);
}

void guard_exit_status(int code) { g_exit_status.store(code); }

void guard_test_ended() {
  int expected = kRunning;
  if (g_state.compare_exchange_strong(expected, kIdle)) return;
  // The watchdog got there first and is ending the process.
  if (expected == kInterrupted && ::getpid() == g_pid) {
    for (;;) ::pause();
  }
}

}  // namespace heapgate::harness
