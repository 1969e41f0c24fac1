// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "heapgate/sys.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

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
  ~Fd() { reset(); }
  void reset(int replacement = -1) {
    if (fd >= 0) ::close(fd);
    fd = replacement;
  }
};

}  // namespace

void* find_symbol(const char* name) noexcept { return ::dlsym(RTLD_DEFAULT, name); }

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

// Opens `path` read-only into `fd` and stats it.
static Result<void> open_for_reading(const std::string& path, Fd& fd, struct stat& st) {
  fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.fd < 0) {
    int err = errno;
    return fail(make_error(ErrorCode::io_error, path, "cannot open for reading: " + errno_text(err)));
  }
  if (::fstat(fd.fd, &st) != 0) {
    int err = errno;
    return fail(make_error(ErrorCode::io_error, path, "cannot stat: " + errno_text(err)));
  }
  return {};
}

Result<std::string> read_file(const std::string& path) {
  Fd fd;
  struct stat st {};
  if (auto opened = open_for_reading(path, fd, st); !opened) return fail(std::move(opened.error()));
  // One read into a buffer of the file's size: profiles run to tens of MB, and
  // a stream-and-copy doubles both the time and the peak memory.
  std::string out;
  out.resize(st.st_size > 0 ? static_cast<std::size_t>(st.st_size) : 0);
  std::size_t used = 0;
  for (;;) {
    if (used == out.size()) out.resize(out.size() + 65536);  // grew since fstat, or a /proc file of size 0
    ssize_t n = ::read(fd.fd, &out[used], out.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      return fail(make_error(ErrorCode::io_error, path, "read failed: " + errno_text(err)));
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  out.resize(used);
  return out;
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

Result<MappedFile> map_file(const std::string& path) {
  Fd fd;
  struct stat st {};
  if (auto opened = open_for_reading(path, fd, st); !opened) return fail(std::move(opened.error()));
  MappedFile file;
  if (!S_ISREG(st.st_mode)) {
    // A pipe or a /proc file: no size up front, so read it instead.
    auto text = read_file(path);
    if (!text) return fail(std::move(text.error()));
    file.copy_ = std::move(*text);
    return file;
  }
  if (st.st_size == 0) return file;
  void* data = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd.fd, 0);
  if (data == MAP_FAILED) {
    int err = errno;
    return fail(make_error(ErrorCode::io_error, path, "cannot map: " + errno_text(err)));
  }
  file.data_ = data;
  file.size_ = static_cast<std::size_t>(st.st_size);
  return file;
}

Result<void> write_file_atomic(const std::string& path, const std::string& content) {
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
  auto discard = [&](int err, const char* what) {
    fd.reset();
    ::unlink(tmp_path.c_str());
    return fail(make_error(ErrorCode::io_error, path, std::string(what) + ": " + errno_text(err)));
  };
  const char* p = content.data();
  std::size_t left = content.size();
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
  if (::fsync(fd.fd) != 0) return discard(errno, "fsync failed");
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

Result<ProcessResult> run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (argv.empty()) return fail(make_error(ErrorCode::invalid_argument, "run_process", "empty argument vector"));
  auto program = find_program(argv[0]);
  if (!program) {
    return fail(make_error(ErrorCode::unavailable, argv[0], "program not found on PATH",
                           "install it or add its directory to PATH"));
  }

  // Environment: the current one, minus unset_env, with extra_env replacing same-named entries.
  std::vector<std::string> env_storage;
  auto key_of = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv(*e);
    std::string key = key_of(kv);
    bool drop = false;
    for (const auto& u : options.unset_env) drop = drop || u == key;
    for (const auto& x : options.extra_env) drop = drop || key_of(x) == key;
    if (!drop) env_storage.push_back(std::move(kv));
  }
  for (const auto& x : options.extra_env) env_storage.push_back(x);
  std::vector<char*> envp;
  for (auto& s : env_storage) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& s : args) cargv.push_back(s.data());
  cargv.push_back(nullptr);

  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  if (::pipe2(err_pipe, O_CLOEXEC) != 0 || (!options.stdout_path && ::pipe2(out_pipe, O_CLOEXEC) != 0)) {
    int err = errno;
    return fail(make_error(ErrorCode::io_error, argv[0], "pipe failed: " + errno_text(err)));
  }
  Fd err_r(err_pipe[0]), err_w(err_pipe[1]), out_r(out_pipe[0]), out_w(out_pipe[1]);
  Fd out_file;
  if (options.stdout_path) {
    out_file.fd = ::open(options.stdout_path->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out_file.fd < 0) {
      int err = errno;
      return fail(make_error(ErrorCode::io_error, *options.stdout_path, "cannot open for writing: " + errno_text(err)));
    }
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, options.stdout_path ? out_file.fd : out_w.fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_w.fd, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // The child gets its own process group so a timeout can kill what it started too.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, program->c_str(), &actions, &attr, cargv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return fail(make_error(ErrorCode::unavailable, *program, "cannot start: " + errno_text(rc)));
  }
  err_w.reset();
  out_w.reset();
  out_file.reset();

  ProcessResult result;
  auto deadline = std::chrono::steady_clock::now() + options.timeout;
  char buf[65536];
  while (err_r.fd >= 0 || out_r.fd >= 0) {
    pollfd fds[2];
    nfds_t n = 0;
    if (out_r.fd >= 0) fds[n++] = {out_r.fd, POLLIN, 0};
    if (err_r.fd >= 0) fds[n++] = {err_r.fd, POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    int pr = ::poll(fds, n, static_cast<int>(std::min<long long>(left.count(), 1000)));
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
  if (WIFEXITED(status) && !result.timed_out) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.term_signal = WTERMSIG(status);
  }
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
  return fail(make_error(ErrorCode::io_error, *exe, std::string("could not restart with profiling enabled: ") +
                         std::strerror(errno), "set MALLOC_CONF yourself (README, Modes)"));
}

}  // namespace heapgate::sys
