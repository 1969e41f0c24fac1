// SPDX-License-Identifier: MIT
// The operating-system seam (heapgate/sys.h): files read, mapped and written atomically, private
// temp dirs, child processes with timeouts, re-exec with MALLOC_CONF, all threads' stacks.
#include "heapgate/sys.h"

#include <dirent.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>
#include <utility>

extern char** environ;

namespace heapgate::sys {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

// Closes a file descriptor on scope exit.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& other) noexcept : fd(other.fd) { other.fd = -1; }
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset(other.fd);
      other.fd = -1;
    }
    return *this;
  }
  ~Fd() { reset(); }
  void reset(int replacement = -1) {
    if (fd >= 0) ::close(fd);
    fd = replacement;
  }
};

}  // namespace

void* find_symbol(const char* name) noexcept { return ::dlsym(RTLD_DEFAULT, name); }

namespace {

// One stack request at a time: the handler fills these in the signalled thread.
constexpr int kMaxStackFrames = 64;
void* g_stack_frames[kMaxStackFrames];
std::atomic<int> g_stack_depth{0};
std::atomic<bool> g_stack_done{false};

void unwind_on_signal(int) {
  const int saved_errno = errno;
  g_stack_depth.store(::backtrace(g_stack_frames, kMaxStackFrames), std::memory_order_relaxed);
  g_stack_done.store(true, std::memory_order_release);
  errno = saved_errno;
}

std::string thread_name(int tid) {
  auto comm = read_file("/proc/self/task/" + std::to_string(tid) + "/comm", kDocumentSizeLimit);
  if (!comm) return {};
  std::string name = *comm;
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
  return name;
}

// The signal trampoline the kernel returns through (glibc's __restore_rt on
// x86-64: mov $15, %rax; syscall), a local symbol dladdr does not name.
bool is_signal_trampoline(const void* address) {
#if defined(__x86_64__)
  static const unsigned char kRestoreRt[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
  return std::memcmp(address, kRestoreRt, sizeof kRestoreRt) == 0;
#else
  (void)address;
  return false;
#endif
}

// Frames up to and including the signal trampoline are the handler's own.
std::vector<std::uintptr_t> interrupted_frames(void* const* frames, int depth) {
  int first = depth > 2 ? 2 : 0;  // the handler, then the trampoline, where it cannot be recognized
  for (int i = 0; i < depth && i < 4; ++i) {
    if (is_signal_trampoline(frames[i])) {
      first = i + 1;
      break;
    }
  }
  std::vector<std::uintptr_t> out;
  for (int i = first; i < depth; ++i) out.push_back(reinterpret_cast<std::uintptr_t>(frames[i]));
  return out;
}

}  // namespace

std::vector<ThreadStack> capture_thread_stacks(std::chrono::milliseconds wait) {
  std::vector<ThreadStack> stacks;
  const int self = static_cast<int>(::gettid());
  {
    void* frames[kMaxStackFrames];
    const int depth = ::backtrace(frames, kMaxStackFrames);  // also loads the unwinder before any handler needs it
    ThreadStack mine;
    mine.tid = self;
    mine.name = thread_name(self);
    mine.captured = true;
    for (int i = 1; i < depth; ++i) mine.frames.push_back(reinterpret_cast<std::uintptr_t>(frames[i]));
    stacks.push_back(std::move(mine));
  }
  std::vector<int> tids;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (dirent* entry = ::readdir(dir)) {
      const int tid = std::atoi(entry->d_name);
      if (tid > 0 && tid != self) tids.push_back(tid);
    }
    ::closedir(dir);
  }
  std::sort(tids.begin(), tids.end());
  const int signo = SIGRTMIN + 4;
  struct sigaction action {};
  struct sigaction previous {};
  action.sa_handler = unwind_on_signal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (::sigaction(signo, &action, &previous) != 0) return stacks;
  for (int tid : tids) {
    ThreadStack stack;
    stack.tid = tid;
    stack.name = thread_name(tid);
    g_stack_done.store(false, std::memory_order_relaxed);
    if (::tgkill(::getpid(), tid, signo) == 0) {
      const auto deadline = std::chrono::steady_clock::now() + wait;
      while (!g_stack_done.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      if (g_stack_done.load(std::memory_order_acquire)) {
        stack.captured = true;
        stack.frames = interrupted_frames(g_stack_frames, g_stack_depth.load(std::memory_order_relaxed));
      }
    }
    const bool answered = stack.captured;
    stacks.push_back(std::move(stack));
    // A thread that answers late would write into the next one's frames:
    // the rest are named without their stacks.
    if (!answered) {
      for (int rest : tids) {
        if (rest <= tid) continue;
        ThreadStack unasked;
        unasked.tid = rest;
        unasked.name = thread_name(rest);
        stacks.push_back(std::move(unasked));
      }
      break;
    }
  }
  ::sigaction(signo, &previous, nullptr);
  return stacks;
}

int injected_write_error([[maybe_unused]] std::string_view path) noexcept {
#ifndef HEAPGATE_FAULT_INJECTION
  return 0;
#else
  static const char* const spec = std::getenv("HEAPGATE_INJECT_WRITE_ERROR");
  if (spec == nullptr) return 0;
  const std::string_view text(spec);
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos || path.find(text.substr(colon + 1)) == std::string_view::npos) return 0;
  const std::string_view name = text.substr(0, colon);
  if (name == "EIO") return EIO;
  if (name == "ENOSPC") return ENOSPC;
  if (name == "EDQUOT") return EDQUOT;
  if (name == "EROFS") return EROFS;
  return 0;
#endif
}

std::string describe_signal(int signo) {
  const char* abbrev = ::sigabbrev_np(signo);
  return "signal " + std::to_string(signo) + (abbrev != nullptr ? std::string(" (SIG") + abbrev + ")" : std::string());
}

std::string file_name_part(const std::string& name, const std::string& fallback) {
  std::string out;
  for (char c : name.substr(0, 100)) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
    out += ok ? c : '_';
  }
  return out.empty() ? fallback : out;
}

std::string temp_root() {
  const char* t = std::getenv("TMPDIR");
  return (t != nullptr && *t != '\0') ? std::string(t) : std::string("/tmp");
}

Result<std::string> make_private_dir(const std::string& prefix) {
  std::string tmpl = temp_root() + "/" + prefix + "XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    int err = errno;
    return fail(make_error(ErrorCode::io_error, tmpl, "cannot create a private directory: " + errno_text(err),
                           "set TMPDIR to a writable directory"));
  }
  return std::string(buf.data());
}

namespace {

struct ExitRemovals {
  std::mutex mutex;
  std::vector<std::pair<pid_t, std::string>> dirs;
};

// Never destroyed: the atexit handler may run after static destructors.
ExitRemovals& exit_removals() {
  static auto* removals = new ExitRemovals();
  return *removals;
}

void remove_registered_dirs() {
  ExitRemovals& removals = exit_removals();
  std::lock_guard<std::mutex> lock(removals.mutex);
  const pid_t self = ::getpid();
  for (const auto& [owner, dir] : removals.dirs) {
    if (owner != self) continue;
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);  // best effort: the process is ending
  }
  removals.dirs.clear();
}

}  // namespace

void remove_at_exit(const std::string& dir) {
  static std::once_flag registered;
  std::call_once(registered, [] { std::atexit(remove_registered_dirs); });
  ExitRemovals& removals = exit_removals();
  std::lock_guard<std::mutex> lock(removals.mutex);
  removals.dirs.emplace_back(::getpid(), dir);
}

// What a file that is not a regular file is, for messages.
static const char* file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

static Error not_regular(const std::string& path, mode_t mode) {
  return make_error(ErrorCode::io_error, path, std::string("is ") + file_type_name(mode) + ", not a regular file",
                    "pass a regular file (save a stream or a device's output to a file first)");
}

// "1.5 GiB (1610612736 bytes)": both, so the limit reads at a glance and the
// size exactly.
static std::string describe_size(std::uint64_t bytes) {
  char text[64];
  static const char* const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < sizeof units / sizeof *units) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(text, sizeof text, "%.1f %s (%llu bytes)", value, units[unit],
                  static_cast<unsigned long long>(bytes));
  }
  return text;
}

static Error too_large(const std::string& path, std::uint64_t size, SizeLimit limit, bool at_least) {
  const std::string what = std::string("is ") + (at_least ? "more than " : "") + describe_size(size) +
                           ", over heapgate's limit of " + describe_size(limit.bytes) + " for a " + limit.kind;
  return make_error(ErrorCode::io_error, path, what, "check that this is the file you meant");
}

Result<int> open_regular_file(const std::string& path) {
  // stat() first: open() itself blocks on a FIFO without a writer, and
  // opening some devices has effects of its own.
  struct stat before {};
  if (::stat(path.c_str(), &before) != 0) {
    int err = errno;
    return fail(make_error(ErrorCode::io_error, path, "cannot open for reading: " + errno_text(err)));
  }
  if (!S_ISREG(before.st_mode)) return fail(not_regular(path, before.st_mode));
  // O_NONBLOCK: should a FIFO be swapped in after the stat, open() still returns.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    int err = errno;
    return fail(make_error(ErrorCode::io_error, path, "cannot open for reading: " + errno_text(err)));
  }
  struct stat after {};
  if (::fstat(fd, &after) != 0) {
    int err = errno;
    ::close(fd);
    return fail(make_error(ErrorCode::io_error, path, "cannot stat: " + errno_text(err)));
  }
  if (!S_ISREG(after.st_mode)) {
    ::close(fd);
    return fail(not_regular(path, after.st_mode));
  }
  return fd;
}

// Opens the regular file `path` into `fd`, stats it and checks its size.
static Result<void> open_for_reading(const std::string& path, SizeLimit limit, Fd& fd, struct stat& st) {
  auto opened = open_regular_file(path);
  if (!opened) return fail(std::move(opened.error()));
  fd.reset(*opened);
  if (::fstat(fd.fd, &st) != 0) {
    int err = errno;
    return fail(make_error(ErrorCode::io_error, path, "cannot stat: " + errno_text(err)));
  }
  if (static_cast<std::uint64_t>(st.st_size) > limit.bytes) {
    return fail(too_large(path, static_cast<std::uint64_t>(st.st_size), limit, false));
  }
  return {};
}

// Reads the open file to its end, never more than `limit` bytes: a file may
// grow after fstat.
static Result<std::string> read_open_file(const std::string& path, SizeLimit limit, int fd, const struct stat& st) {
  // One read into a buffer of the file's size: profiles run to tens of MB, and
  // a stream-and-copy doubles both the time and the peak memory.
  std::string out;
  out.resize(st.st_size > 0 ? static_cast<std::size_t>(st.st_size) : 0);
  std::size_t used = 0;
  for (;;) {
    if (used == out.size()) {
      if (used > limit.bytes) return fail(too_large(path, used, limit, true));
      out.resize(out.size() + 65536);  // grew since fstat
    }
    ssize_t n = ::read(fd, &out[used], out.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      return fail(make_error(ErrorCode::io_error, path, "read failed: " + errno_text(err)));
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  if (used > limit.bytes) return fail(too_large(path, used, limit, false));
  out.resize(used);
  return out;
}

Result<std::string> read_file(const std::string& path, SizeLimit limit) {
  Fd fd;
  struct stat st {};
  if (auto opened = open_for_reading(path, limit, fd, st); !opened) return fail(std::move(opened.error()));
  return read_open_file(path, limit, fd.fd, st);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), copy_(std::move(other.copy_)) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = other.data_;
    size_ = other.size_;
    copy_ = std::move(other.copy_);
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

void MappedFile::release_before(std::size_t offset) const noexcept {
  if (data_ == nullptr) return;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t bytes = std::min(offset, size_) / page * page;
  if (bytes > 0) ::madvise(data_, bytes, MADV_DONTNEED);
}

Result<MappedFile> map_file(const std::string& path, SizeLimit limit, MapAccess access) {
  Fd fd;
  struct stat st {};
  if (auto opened = open_for_reading(path, limit, fd, st); !opened) return fail(std::move(opened.error()));
  MappedFile file;
  if (st.st_size == 0) return file;
  const int flags = access == MapAccess::whole ? MAP_PRIVATE | MAP_POPULATE : MAP_PRIVATE;
  void* data = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, flags, fd.fd, 0);
  if (data != MAP_FAILED && access == MapAccess::sequential) {
    ::madvise(data, static_cast<std::size_t>(st.st_size), MADV_SEQUENTIAL);
  }
  if (data == MAP_FAILED) {
    // Some file systems cannot map files; reading them works as well.
    auto text = read_open_file(path, limit, fd.fd, st);
    if (!text) return fail(std::move(text.error()));
    file.copy_ = std::move(*text);
    return file;
  }
  file.data_ = data;
  file.size_ = static_cast<std::size_t>(st.st_size);
  return file;
}

namespace {

constexpr std::string_view kTempInfix = ".tmp.";
constexpr std::size_t kTempRandomLength = 6;  // mkstemp's XXXXXX

bool is_temp_name_of(std::string_view name, std::string_view target) {
  if (name.size() != target.size() + kTempInfix.size() + kTempRandomLength) return false;
  if (name.substr(0, target.size()) != target || name.substr(target.size(), kTempInfix.size()) != kTempInfix) {
    return false;
  }
  for (char c : name.substr(target.size() + kTempInfix.size())) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum) return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> remove_stale_temp_files(const std::string& path) {
  std::vector<std::string> removed;
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string target = slash == std::string::npos ? path : path.substr(slash + 1);
  if (target.empty()) return removed;
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) return removed;
  const int dir_fd = ::dirfd(handle);
  const auto now = std::chrono::system_clock::now();
  while (const dirent* entry = ::readdir(handle)) {
    if (!is_temp_name_of(entry->d_name, target)) continue;
    struct stat st {};
    // Relative to the open directory and without following links: what is
    // checked is what is removed.
    if (::fstatat(dir_fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) continue;
    const auto modified = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::seconds(st.st_mtim.tv_sec)));
    if (now - modified <= kStaleTempAge) continue;
    if (::unlinkat(dir_fd, entry->d_name, 0) == 0) {
      removed.push_back(slash == std::string::npos ? std::string(entry->d_name) : dir + "/" + entry->d_name);
    }
  }
  ::closedir(handle);
  std::sort(removed.begin(), removed.end());
  return removed;
}

Result<void> write_file_atomic(const std::string& path, const std::string& content, Durability durability) {
  // rename() over a device or a FIFO replaces the node itself: `-o /dev/full`
  // run as root turned /dev/full into a regular file. Only regular files (or
  // nothing yet) are replaced.
  if (struct stat existing; ::stat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode)) {
    return fail(make_error(ErrorCode::io_error, path,
                           std::string("is ") + file_type_name(existing.st_mode) +
                               ", not a regular file; heapgate "
                               "writes files by replacing them",
                           "name a regular file to write, or leave out the output option to write to stdout"));
  }
  // The scan reads the whole directory: per test, in a directory of profiles,
  // it made writing them quadratic. A profile's stale temporary file is
  // clutter, not a wrong result, so only the durable writes look.
  if (auto stale = durability == Durability::machine_crash ? remove_stale_temp_files(path) : std::vector<std::string>{};
      !stale.empty()) {
    std::string names;
    for (const auto& name : stale) names += (names.empty() ? "" : ", ") + name;
    std::fprintf(stderr, "heapgate: removed %zu stale temporary file%s of an interrupted write of %s: %s\n",
                 stale.size(), stale.size() == 1 ? "" : "s", path.c_str(), names.c_str());
  }
  std::string tmp = path + ".tmp.XXXXXX";
  std::vector<char> buf(tmp.begin(), tmp.end());
  buf.push_back('\0');
  Fd fd(::mkstemp(buf.data()));
  if (fd.fd < 0) {
    int err = errno;
    return fail(make_error(ErrorCode::io_error, path, "cannot create a temporary file beside it: " + errno_text(err),
                           "check that the directory exists and is writable"));
  }
  std::string tmp_path(buf.data());
  // The file at `path` is left as it was: the temporary file goes.
  auto discard = [&](int err, const char* what) {
    fd.reset();
    ::unlink(tmp_path.c_str());
    return fail(make_error(ErrorCode::io_error, path, std::string(what) + ": " + errno_text(err) + "; it is unchanged",
                           err == ENOSPC || err == EDQUOT ? "free space on its file system, or write it elsewhere"
                                                          : "check the file system it is on, then run again"));
  };
  const char* p = content.data();
  std::size_t left = content.size();
  if (int injected = injected_write_error(path)) return discard(injected, "write failed");
  while (left > 0) {
    ssize_t n = ::write(fd.fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return discard(errno, "write failed");
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  // mkstemp creates 0600; published files get the usual 0644 (less the umask).
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd.fd, 0666 & ~mask);
  if (durability == Durability::machine_crash && ::fsync(fd.fd) != 0) return discard(errno, "fsync failed");
  fd.reset();
  if (::rename(tmp_path.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp_path.c_str());
    return fail(make_error(ErrorCode::io_error, path, "rename failed: " + errno_text(err)));
  }
  return {};
}

bool exists(const std::string& path) noexcept {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::optional<std::string> read_link(const std::string& path) {
  std::vector<char> buf(4096);
  ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size() - 1);
  if (n < 0) return std::nullopt;
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

Result<std::string> self_exe_path() {
  auto target = read_link("/proc/self/exe");
  if (!target) {
    int err = errno;
    return fail(make_error(ErrorCode::io_error, "/proc/self/exe", "readlink failed: " + errno_text(err)));
  }
  return *target;
}

std::optional<std::string> find_program(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    if (::access(program.c_str(), X_OK) == 0) return program;
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t begin = 0;
  while (begin <= dirs.size()) {
    std::size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(begin, end - begin);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + program;
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    begin = end + 1;
  }
  return std::nullopt;
}

namespace {

// What posix_spawn needs for `argv` under `options`: the program found on
// PATH, the environment and the argument vector, owned.
struct SpawnSpec {
  std::string program;
  std::vector<std::string> env_storage;
  std::vector<std::string> args;
  std::vector<char*> envp;
  std::vector<char*> cargv;
};

Result<SpawnSpec> spawn_spec(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (argv.empty()) return fail(make_error(ErrorCode::invalid_argument, "run_process", "empty argument vector"));
  auto program = find_program(argv[0]);
  if (!program) {
    return fail(make_error(ErrorCode::unavailable, argv[0], "program not found on PATH",
                           "install it or add its directory to PATH"));
  }
  SpawnSpec spec;
  spec.program = *program;
  // Environment: the current one, minus unset_env, with extra_env replacing same-named entries.
  auto key_of = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv(*e);
    std::string key = key_of(kv);
    bool drop = false;
    for (const auto& u : options.unset_env) drop = drop || u == key;
    for (const auto& x : options.extra_env) drop = drop || key_of(x) == key;
    if (!drop) spec.env_storage.push_back(std::move(kv));
  }
  for (const auto& x : options.extra_env) spec.env_storage.push_back(x);
  for (auto& e : spec.env_storage) spec.envp.push_back(e.data());
  spec.envp.push_back(nullptr);
  spec.args = argv;
  for (auto& a : spec.args) spec.cargv.push_back(a.data());
  spec.cargv.push_back(nullptr);
  return spec;
}

// Starts `spec` with stdin from /dev/null, stdout and stderr on the given
// descriptors, in a process group of its own: a timeout then stops what it
// started too.
Result<pid_t> spawn(SpawnSpec& spec, int out_fd, int err_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, spec.program.c_str(), &actions, &attr, spec.cargv.data(), spec.envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return fail(make_error(ErrorCode::unavailable, spec.program, "cannot start: " + errno_text(rc)));
  return pid;
}

Result<Fd> open_for_output(const std::string& path) {
  Fd file;
  file.fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (file.fd < 0) {
    int err = errno;
    return fail(make_error(ErrorCode::io_error, path, "cannot open for writing: " + errno_text(err)));
  }
  return file;
}

void fill_exit_status(int status, ProcessResult& result) {
  if (WIFEXITED(status) && !result.timed_out && !result.stopped) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.term_signal = WTERMSIG(status);
  }
}

}  // namespace

Result<StartedProcess> start_process(const std::vector<std::string>& argv, const ProcessOptions& options,
                                     const std::string& stderr_path) {
  auto spec = spawn_spec(argv, options);
  if (!spec) return fail(spec.error());
  auto err_file = open_for_output(stderr_path);
  if (!err_file) return fail(err_file.error());
  auto out_file = open_for_output(options.stdout_path ? *options.stdout_path : std::string("/dev/null"));
  if (!out_file) return fail(out_file.error());
  auto pid = spawn(*spec, out_file->fd, err_file->fd);
  if (!pid) return fail(pid.error());
  return StartedProcess{*pid, stderr_path};
}

ProcessResult wait_for_process(const StartedProcess& process, std::chrono::milliseconds timeout,
                               std::chrono::milliseconds grace) {
  using Clock = std::chrono::steady_clock;
  ProcessResult result;
  const Clock::time_point deadline = Clock::now() + timeout;
  std::optional<Clock::time_point> kill_at;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(process.pid, &status, WNOHANG);
    if (done == process.pid) break;
    if (done < 0 && errno != EINTR) return result;  // not our child (already waited for)
    const Clock::time_point now = Clock::now();
    if (!kill_at && now >= deadline) {
      result.timed_out = true;
      ::kill(-process.pid, SIGTERM);
      kill_at = now + grace;
    } else if (kill_at && now >= *kill_at) {
      ::kill(-process.pid, SIGKILL);
      while (::waitpid(process.pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  fill_exit_status(status, result);
  if (auto text = read_file(process.stderr_path)) result.stderr_text = std::move(*text);
  return result;
}

void kill_process_group(const StartedProcess& process) noexcept {
  if (process.pid > 0) ::kill(-process.pid, SIGKILL);
}

Result<ProcessResult> run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  auto spec = spawn_spec(argv, options);
  if (!spec) return fail(spec.error());

  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  if (::pipe2(err_pipe, O_CLOEXEC) != 0 || (!options.stdout_path && ::pipe2(out_pipe, O_CLOEXEC) != 0)) {
    int err = errno;
    return fail(make_error(ErrorCode::io_error, argv[0], "pipe failed: " + errno_text(err)));
  }
  Fd err_r(err_pipe[0]), err_w(err_pipe[1]), out_r(out_pipe[0]), out_w(out_pipe[1]);
  Fd out_file;
  if (options.stdout_path) {
    auto opened = open_for_output(*options.stdout_path);
    if (!opened) return fail(opened.error());
    out_file = std::move(*opened);
  }
  auto spawned = spawn(*spec, options.stdout_path ? out_file.fd : out_w.fd, err_w.fd);
  if (!spawned) return fail(spawned.error());
  const pid_t pid = *spawned;
  err_w.reset();
  out_w.reset();
  out_file.reset();

  ProcessResult result;
  auto deadline = std::chrono::steady_clock::now() + options.timeout;
  // Ending a child: SIGTERM to its group first (a test binary's guard then
  // names the test that was running), SIGKILL after the grace period.
  std::optional<std::chrono::steady_clock::time_point> kill_at;
  char buf[65536];
  while (err_r.fd >= 0 || out_r.fd >= 0) {
    pollfd fds[2];
    nfds_t n = 0;
    if (out_r.fd >= 0) fds[n++] = {out_r.fd, POLLIN, 0};
    if (err_r.fd >= 0) fds[n++] = {err_r.fd, POLLIN, 0};
    const auto now = std::chrono::steady_clock::now();
    if (!kill_at) {
      const bool stop = options.stop != nullptr && options.stop->load(std::memory_order_relaxed);
      if (now >= deadline || stop) {
        (now >= deadline ? result.timed_out : result.stopped) = true;
        ::kill(-pid, SIGTERM);
        kill_at = now + options.grace;
      }
    } else if (now >= *kill_at) {
      ::kill(-pid, SIGKILL);
      break;
    }
    const auto until = kill_at ? *kill_at : deadline;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - now);
    int pr = ::poll(fds, n, static_cast<int>(std::clamp<long long>(left.count(), 0, 200)));
    if (pr < 0 && errno != EINTR) break;
    for (nfds_t i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      Fd& src = fds[i].fd == out_r.fd ? out_r : err_r;
      std::string& dst = fds[i].fd == out_r.fd ? result.stdout_text : result.stderr_text;
      ssize_t got = ::read(src.fd, buf, sizeof buf);
      if (got > 0) {
        dst.append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        src.reset();
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  fill_exit_status(status, result);
  return result;
}

Result<void> restart_with_malloc_conf(const std::vector<std::string>& argv, const char* heapgate_conf,
                                      const char* marker) {
  auto exe = self_exe_path();
  if (!exe) return fail(exe.error());
  std::string conf;
  if (const char* user = std::getenv("MALLOC_CONF"); user != nullptr && *user != '\0') conf = std::string(user) + ",";
  conf += heapgate_conf;
  ::setenv("MALLOC_CONF", conf.c_str(), 1);
  ::setenv(marker, "1", 1);
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  std::fflush(nullptr);
  ::execv(exe->c_str(), args.data());
  return fail(make_error(ErrorCode::io_error, *exe,
                         std::string("could not restart with profiling enabled: ") + std::strerror(errno),
                         "set MALLOC_CONF yourself (README, Modes)"));
}

}  // namespace heapgate::sys
