// SPDX-License-Identifier: MIT
// The operating-system seam: everything Linux- or libc-specific that the rest
// of heapgate needs, in one place (benchmark sysinfo.cc, fmt os.cc).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "heapgate/error.h"

namespace heapgate::sys {

/// The address of `name` in the process' global scope (dlsym(RTLD_DEFAULT)), or nullptr.
void* find_symbol(const char* name) noexcept;

/// The errno a write of `path` must fail with, or 0: the fault seam of
/// heapgate's own tests (docs/bad-inputs.md, "Faults"). With
/// HEAPGATE_INJECT_WRITE_ERROR=EIO:<text> (or ENOSPC, EDQUOT, EROFS) in the
/// environment, every write of a file whose path contains <text> fails;
/// write_file_atomic() and the report journal ask before writing. Only a
/// build with HEAPGATE_FAULT_INJECTION (on with heapgate's tests) reads the
/// variable; any other build returns 0.
int injected_write_error(std::string_view path) noexcept;

/// "signal 11 (SIGSEGV)": a signal's number and name, for messages.
std::string describe_signal(int signo);

/// One thread's call stack, for a report of a test that hung.
struct ThreadStack {
  int tid = 0;
  std::string name;  ///< /proc/self/task/TID/comm
  /// Return addresses, innermost first; the first is where the thread was
  /// interrupted (an exact address), the others return addresses.
  std::vector<std::uintptr_t> frames;
  /// False when the thread did not answer within the wait (blocked signals).
  bool captured = false;
};

/// The stacks of every thread of this process, the calling thread's first:
/// each other thread is sent a real-time signal whose handler unwinds it
/// (glibc's backtrace()), one thread at a time, waiting up to `wait` for
/// each. Not thread-safe; for a watchdog that is about to end the process.
std::vector<ThreadStack> capture_thread_stacks(std::chrono::milliseconds wait);

/// `name` as one file name component: its first 100 bytes, every byte but
/// [A-Za-z0-9.-] replaced by '_' (test names hold '/', scope names anything);
/// `fallback` when `name` is empty.
std::string file_name_part(const std::string& name, const std::string& fallback);

/// The directory for temporary files: $TMPDIR if set and non-empty, else /tmp.
std::string temp_root();

/// Creates a fresh private (0700) directory `<temp_root>/<prefix>XXXXXX`.
Result<std::string> make_private_dir(const std::string& prefix);

/// Removes the directory `dir`, with everything in it, when this process
/// exits normally (atexit). Only in the process that called this: a forked
/// child that exits (a GoogleTest death test) shares the path but not the
/// directory's lifetime. A crash or kill -9 leaves it behind, as any file.
void remove_at_exit(const std::string& dir);

/// The most heapgate reads of one kind of file. Every file heapgate reads
/// may come from somewhere else (a CI artifact, a profile's maps section),
/// so a larger one is refused with an error naming it, its size and the
/// limit, rather than read until memory runs out.
struct SizeLimit {
  std::uint64_t bytes;
  const char* kind;  ///< what such a file is, for the message ("heap profile")
};
/// Heap profiles: the largest real ones (50k stacks) are tens of MB.
inline constexpr SizeLimit kProfileSizeLimit{std::uint64_t{1} << 30, "heap profile"};
/// JSON reports and journals, baselines, symbols sidecars, suppressions and
/// benchmark results: a 10,000-test report is a few MB.
inline constexpr SizeLimit kDocumentSizeLimit{std::uint64_t{256} << 20, "heapgate document"};
/// Executables scanned whole (only mapped, never copied): debug builds of
/// large programs run to several GB.
inline constexpr SizeLimit kExecutableSizeLimit{std::uint64_t{16} << 30, "executable"};

/// Opens `path` read-only if it is a regular file. stat() comes first and
/// the open is non-blocking, so a FIFO or a device is refused without ever
/// blocking in open(); fstat() after the open catches a file swapped in
/// between. Returns the descriptor; the caller closes it. Errors:
/// `io_error` naming the path: missing or unreadable, or not a regular file
/// (saying what it is).
Result<int> open_regular_file(const std::string& path);

/// Reads a whole regular file of at most `limit` bytes. Errors: `io_error`
/// naming the path (open_regular_file()'s, a read error, or a file over the
/// limit with its size and the limit).
Result<std::string> read_file(const std::string& path, SizeLimit limit = kDocumentSizeLimit);

/// How a mapped file is going to be read.
enum class MapAccess {
  /// All of it at once: pre-faulted (MAP_POPULATE).
  whole,
  /// Once, front to back, with MappedFile::release_before behind the reader:
  /// pages come in on first touch, read ahead (MADV_SEQUENTIAL), so only a
  /// window of the file is resident at a time.
  sequential,
};

/// A read-only view of a whole file, mapped into memory (empty files too).
/// Move-only; unmaps on destruction.
class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();
  std::string_view text() const noexcept {
    return data_ != nullptr ? std::string_view(static_cast<const char*>(data_), size_) : std::string_view(copy_);
  }
  /// Done with the text before byte `offset` (for a reader that goes through
  /// it once, front to back): its whole pages leave the process' resident
  /// memory (madvise MADV_DONTNEED; they stay in the page cache and are read
  /// again if touched). Views into that part stay valid. No effect on a file
  /// that was read rather than mapped.
  void release_before(std::size_t offset) const noexcept;

 private:
  friend Result<MappedFile> map_file(const std::string& path, SizeLimit limit, MapAccess access);
  void* data_ = nullptr;
  std::size_t size_ = 0;
  std::string copy_;  // the contents of a file that could not be mapped
};

/// Maps the regular file at `path` (at most `limit` bytes) read-only. Either
/// way, mapping is several times cheaper than read() into a fresh buffer,
/// whose every page faults on first touch. Falls back to read_file for a file
/// that cannot be mapped. Errors: as read_file.
Result<MappedFile> map_file(const std::string& path, SizeLimit limit = kProfileSizeLimit,
                            MapAccess access = MapAccess::whole);

/// Writes `content` to `path` atomically: a temp file in the same directory
/// (`<path>.tmp.XXXXXX`, mkstemp), fsync, then rename, so readers see the old
/// file or the new one, never a mix. First removes the stale temp files of
/// earlier, interrupted writes of the same `path` (remove_stale_temp_files())
/// and says so in one line on stderr. Errors: `io_error` naming `path`,
/// also when `path` exists and is not a regular file (a device, a FIFO, a
/// directory), which rename() would replace.
///
/// `Durability::machine_crash` (baselines, reports) fsyncs before the rename,
/// so the new file survives a power loss; `Durability::process_crash` (heap
/// profiles and their symbols sidecars, written per test) does not, nor does
/// it look for stale temporary files (a scan of the whole directory per
/// file): still atomic for every reader, and together they were most of the
/// time of an exact run that recorded 467 tests' call sites.
enum class Durability { machine_crash, process_crash };
Result<void> write_file_atomic(const std::string& path, const std::string& content,
                               Durability durability = Durability::machine_crash);

/// How long a temp file of write_file_atomic() must have gone unwritten
/// before a later write of the same target removes it. A live writer writes
/// its temp file in milliseconds and renames it right after fsync; one left
/// untouched for a minute belongs to a writer that died (kill -9, a crash, a
/// power cut). Should a stopped writer wake up later still, its rename fails
/// with an error and the target keeps its old contents: nothing is corrupted.
/// The writer's pid is not used: in a directory shared between containers or
/// machines (NFS) a pid tells nothing.
inline constexpr std::chrono::seconds kStaleTempAge{60};

/// Removes the temp files that interrupted write_file_atomic() calls of
/// `path` left behind, and returns their paths. Only files named exactly
/// `<file name of path>.tmp.` plus six letters or digits (mkstemp's pattern),
/// regular files (not links), owned by this user, and last modified more than
/// kStaleTempAge ago; nothing else is ever touched. Errors are ignored: this
/// is housekeeping, and the write itself says what is wrong.
std::vector<std::string> remove_stale_temp_files(const std::string& path);

/// True if `path` names an existing file or directory.
bool exists(const std::string& path) noexcept;

/// The target of the symbolic link `path`, or nullopt if it is not a link.
std::optional<std::string> read_link(const std::string& path);

/// The real path of the running executable (readlink /proc/self/exe).
Result<std::string> self_exe_path();

/// The full path of `program` found through $PATH, or nullopt.
std::optional<std::string> find_program(const std::string& program);

/// Replaces this process with a fresh run of itself (same `argv`) whose
/// MALLOC_CONF ends with `heapgate_conf` (after the user's own settings, so
/// heapgate's win), marking the environment with `marker=1`. jemalloc reads
/// MALLOC_CONF only when it starts, hence a restart. Returns only on
/// failure, with an `io_error`; the caller carries on without profiling.
Result<void> restart_with_malloc_conf(const std::vector<std::string>& argv, const char* heapgate_conf,
                                      const char* marker);

/// The outcome of a finished child process.
struct ProcessResult {
  int exit_code = -1;   ///< exit status, or -1 when killed by a signal / timed out
  int term_signal = 0;  ///< the signal that ended it, or 0
  bool timed_out = false;
  bool stopped = false;     ///< ended because ProcessOptions::stop turned true
  std::string stdout_text;  ///< captured stdout, unless redirected to a file
  std::string stderr_text;  ///< captured stderr (always captured)
};

/// Options of run_process.
struct ProcessOptions {
  /// If set, stdout goes to this file (created/truncated) instead of memory.
  std::optional<std::string> stdout_path;
  /// Extra environment entries "KEY=VALUE" (added to, or replacing in, the current environment).
  std::vector<std::string> extra_env;
  /// Environment variable names to remove from the child's environment.
  std::vector<std::string> unset_env;
  /// Stop the child after this long: SIGTERM to its process group, then
  /// SIGKILL after `grace`.
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  /// When set and it turns true (a signal handler of the caller's), the child
  /// is stopped the same way (ProcessResult::stopped).
  const std::atomic<bool>* stop = nullptr;
  /// Between SIGTERM and SIGKILL.
  std::chrono::milliseconds grace{std::chrono::seconds(5)};
};

/// Runs `argv` (argv[0] is looked up in $PATH) without a shell, waits for it,
/// and captures its output. Fails only if the program could not be started.
Result<ProcessResult> run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

/// A child start_process() started and wait_for_process() has not yet reaped.
struct StartedProcess {
  int pid = -1;
  std::string stderr_path;
};

/// Starts `argv` as run_process() does and returns at once: no thread of
/// this process waits for it, so it runs beside what this process measures
/// without adding a thread's allocations or context switches to it. Its
/// stdout goes to ProcessOptions::stdout_path (or /dev/null), its stderr to
/// `stderr_path`; `timeout` and `stop` are wait_for_process()'s business.
Result<StartedProcess> start_process(const std::vector<std::string>& argv, const ProcessOptions& options,
                                     const std::string& stderr_path);
/// Waits for a started child at most `timeout`, then stops it as
/// run_process() does (SIGTERM to its group, SIGKILL after `grace`). The
/// result's stderr_text is what it wrote to its stderr file.
ProcessResult wait_for_process(const StartedProcess& process, std::chrono::milliseconds timeout,
                               std::chrono::milliseconds grace = std::chrono::seconds(5));
/// SIGKILL to a started child's process group, for a run that ends without
/// waiting for it (async-signal-safe).
void kill_process_group(const StartedProcess& process) noexcept;

}  // namespace heapgate::sys
