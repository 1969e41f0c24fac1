// SPDX-License-Identifier: MIT
// libheapgate_record.so: what `heapgate record` preloads (LD_PRELOAD, before
// jemalloc) into a program that knows nothing of heapgate. Its constructor
// starts the recording (recording.h) from the environment the command set;
// the recording follows fork() children, and is written at exit() (a return
// from main included) or by a handler of the signals that end a process.
//
//   HEAPGATE_RECORD_DIR          where each process writes DIR/<pid>/ (required)
//   HEAPGATE_RECORD_MODE         exact (default) or counters
//   HEAPGATE_RECORD_SNAPSHOT_MS  a live-heap snapshot every N ms (exact)
//   HEAPGATE_RECORD_SNAPSHOT_SIGNAL=1  a snapshot on each SIGUSR2 (exact)
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "heapgate/integration.h"
#include "process_recorder.h"

namespace heapgate::detail {
namespace {

// The signals whose default action ends the process. SIGKILL cannot be
// caught: `heapgate record` says so when a process left no files.
constexpr int kEndingSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};

long g_snapshot_ms = 0;
bool g_snapshot_on_signal = false;
std::atomic<bool> g_snapshot_asked{false};

void on_ending_signal(int signo) {
  const int saved_errno = errno;
  finish_recording(signo);
  // SA_RESETHAND restored the default action; the signal stays blocked until
  // this handler returns, then ends the process as it would have.
  (void)::raise(signo);
  errno = saved_errno;
}

void on_snapshot_signal(int) { g_snapshot_asked.store(true); }

void install_handlers() noexcept {
  for (int signo : kEndingSignals) {
    struct sigaction current {};
    // A signal the program's parent ignored (a shell's background job and
    // SIGINT) stays ignored.
    if (::sigaction(signo, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction action {};
    action.sa_handler = on_ending_signal;
    action.sa_flags = SA_RESETHAND | SA_RESTART;
    sigemptyset(&action.sa_mask);
    (void)::sigaction(signo, &action, nullptr);
  }
  if (g_snapshot_on_signal) {
    struct sigaction action {};
    action.sa_handler = on_snapshot_signal;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    (void)::sigaction(SIGUSR2, &action, nullptr);
  }
}

// Writes snapshots every g_snapshot_ms, and when SIGUSR2 asks. Its own
// allocations (thread start-up) are heapgate's, not the program's.
void* snapshot_thread(void*) {
  HookSuppressor suppress;
  long waited_ms = 0;
  for (;;) {
    const timespec step{0, 20 * 1000 * 1000};
    ::nanosleep(&step, nullptr);
    waited_ms += 20;
    const bool due = g_snapshot_ms > 0 && waited_ms >= g_snapshot_ms;
    if (due || g_snapshot_asked.exchange(false)) {
      write_snapshot();
      if (due) waited_ms = 0;
    }
  }
  return nullptr;
}

void start_snapshot_thread() noexcept {
  if (g_snapshot_ms <= 0 && !g_snapshot_on_signal) return;
  HookSuppressor suppress;
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return;
  (void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  // Born with every signal blocked, so signals go to the program's threads:
  // a handler that ran on this one while it writes a snapshot would wait for
  // the lock it holds.
  sigset_t all, before;
  sigfillset(&all);
  (void)pthread_sigmask(SIG_BLOCK, &all, &before);
  pthread_t thread;
  (void)pthread_create(&thread, &attr, snapshot_thread, nullptr);
  (void)pthread_sigmask(SIG_SETMASK, &before, nullptr);
  (void)pthread_attr_destroy(&attr);
}

void at_exit() { finish_recording(0); }

// _exit() skips atexit handlers; programs end with it on purpose (dash
// always, a fork child that must not flush its parent's stdio). Found at
// start: dlsym may allocate.
using ExitFn = void (*)(int);
ExitFn g_real_exit = nullptr;
ExitFn g_real_Exit = nullptr;

// fork() copies only the calling thread: the child restarts its own
// recording and, when asked for, its own snapshot thread.
void in_fork_child() {
  restart_recording_in_child();
  start_snapshot_thread();
}

__attribute__((constructor)) void start() {
  const char* dir = std::getenv("HEAPGATE_RECORD_DIR");
  if (dir == nullptr || *dir == '\0') return;
  RecordingConfig config;
  config.dir = dir;
  const char* mode = std::getenv("HEAPGATE_RECORD_MODE");
  config.exact = mode == nullptr || std::strcmp(mode, "counters") != 0;
  if (const char* every = std::getenv("HEAPGATE_RECORD_SNAPSHOT_MS")) g_snapshot_ms = std::strtol(every, nullptr, 10);
  const char* on_signal = std::getenv("HEAPGATE_RECORD_SNAPSHOT_SIGNAL");
  g_snapshot_on_signal = on_signal != nullptr && std::strcmp(on_signal, "1") == 0;
  g_real_exit = reinterpret_cast<ExitFn>(::dlsym(RTLD_NEXT, "_exit"));
  g_real_Exit = reinterpret_cast<ExitFn>(::dlsym(RTLD_NEXT, "_Exit"));
  (void)start_recording(config);
  // Registered after the counting's own fork handlers (start_recording made
  // them), so in the child the counting's locks are released before this runs.
  (void)pthread_atfork(nullptr, nullptr, in_fork_child);
  // The first atexit handler runs last: after the program's static
  // destructors, which are registered later, so what they free is not a leak.
  (void)std::atexit(at_exit);
  install_handlers();
  start_snapshot_thread();
}

}  // namespace
}  // namespace heapgate::detail

// The program's calls of _exit() and _Exit() reach these first (calls inside
// the C library, e.g. exit()'s own, do not). The real one is the one behind,
// or the system call when none was found.
extern "C" __attribute__((visibility("default"), noreturn)) void _exit(int status) {
  heapgate::detail::finish_recording(0);
  if (heapgate::detail::g_real_exit != nullptr) heapgate::detail::g_real_exit(status);
  for (;;) ::syscall(SYS_exit_group, status);
}

extern "C" __attribute__((visibility("default"), noreturn)) void _Exit(int status) {
  heapgate::detail::finish_recording(0);
  if (heapgate::detail::g_real_Exit != nullptr) heapgate::detail::g_real_Exit(status);
  for (;;) ::syscall(SYS_exit_group, status);
}
