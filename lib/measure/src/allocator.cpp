// SPDX-License-Identifier: MIT
// allocator_status() (heapgate/allocator.h): detects whether jemalloc serves malloc, reads its
// profiling options and hook ABI; Mode names, AllocatorStatus::check(), the jemalloc:: mallctls.
#include "heapgate/allocator.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <string>

#include "heapgate/sys.h"
#include "heapgate/unwinder_control.h"
#include "alloc_counting.h"
#include "entry_points.h"
#include "stack_capture.h"

namespace heapgate {
namespace {

using MallocStatsPrintFn = void (*)(void (*)(void*, const char*), void*, const char*);

constexpr const char* kJemallocFix =
    "link the program with jemalloc (heapgate::gtest_main does), run it through `heapgate run`, "
    "or start it with LD_PRELOAD=libjemalloc.so.2 (Debian package libjemalloc2)";

// jemalloc's hooks_t layout has been stable from 5.1.0 (when the hooks arrived) through 5.3.x.
bool hooks_abi_known(const std::string& version) {
  return version.rfind("5.1.", 0) == 0 || version.rfind("5.2.", 0) == 0 || version.rfind("5.3.", 0) == 0;
}

// The Mesos/folly probe: jemalloc is the active allocator only if a malloc moves
// its per-thread counter. A loaded-but-unused jemalloc (dlopen'ed late) fails this.
bool probe_jemalloc_serves_malloc() {
  auto counter = jemalloc::read<std::uint64_t*>("thread.allocatedp");
  if (!counter || *counter == nullptr) return false;
  volatile std::uint64_t* c = *counter;
  std::uint64_t before = *c;
  void* volatile p = std::malloc(1);
  bool moved = *c != before;
  std::free(p);
  return moved;
}

// jemalloc has no mallctl for prof_unbias (ENOENT in 5.3.0), so read the
// option the way jemalloc does: its conf sources in order, the last one wins.
bool prof_unbias_disabled(const AllocatorStatus& s) {
  std::string sources[4];
  sources[0] = s.config_malloc_conf;
  if (auto* sym = static_cast<const char**>(sys::find_symbol("malloc_conf")); sym != nullptr && *sym != nullptr) {
    sources[1] = *sym;
  }
  if (auto link = sys::read_link("/etc/malloc.conf")) sources[2] = *link;
  sources[3] = s.malloc_conf_env;
  bool disabled = false;
  for (const auto& conf : sources) {
    for (std::size_t at = conf.find("prof_unbias:"); at != std::string::npos; at = conf.find("prof_unbias:", at + 1)) {
      disabled = conf.compare(at + 12, 5, "false") == 0;
    }
  }
  return disabled;
}

AllocatorStatus detect() {
  AllocatorStatus s;
  const char* env = std::getenv("MALLOC_CONF");
  s.malloc_conf_env = env != nullptr ? env : "";
  s.jemalloc_detected = detail::mallctl_fn() != nullptr;
  if (!s.jemalloc_detected) {
    std::string why = "jemalloc is not loaded in this process (no mallctl symbol)";
    s.why_not_counters = s.why_not_exact = s.why_not_sampled = why;
    return s;
  }
  s.jemalloc_active = probe_jemalloc_serves_malloc();
  s.version = jemalloc::version().value_or("");
  s.config_prof = jemalloc::read<bool>("config.prof").value_or(false);
  s.config_stats = jemalloc::read<bool>("config.stats").value_or(false);
  if (s.config_prof) {
    s.opt_prof = jemalloc::read<bool>("opt.prof").value_or(false);
    s.opt_prof_active = jemalloc::read<bool>("opt.prof_active").value_or(false);
    s.opt_prof_accum = jemalloc::read<bool>("opt.prof_accum").value_or(false);
    s.opt_lg_prof_sample = jemalloc::read<std::size_t>("opt.lg_prof_sample").value_or(19);
  }
  if (auto conf = jemalloc::read<const char*>("config.malloc_conf"); conf && *conf != nullptr) {
    s.config_malloc_conf = *conf;
  }
  const char* hooks_env = std::getenv("HEAPGATE_HOOKS");
  s.hooks_disabled_by_env = hooks_env != nullptr && std::string_view(hooks_env) == "off";
  s.hooks_available = s.jemalloc_active && hooks_abi_known(s.version) && !s.hooks_disabled_by_env;
  s.profiling_started_externally = s.opt_prof && s.opt_prof_active;

  if (!s.jemalloc_active) {
    s.why_not_counters = "jemalloc is loaded but does not serve this process' malloc";
  } else if (!s.hooks_available && !s.config_stats) {
    s.why_not_counters = "jemalloc " + s.version +
                         " has no allocation-hook ABI heapgate knows (5.1 to 5.3) and no thread.allocated counters";
  }
  auto profiling_why = [&]() -> std::string {
    if (!s.jemalloc_active) return "jemalloc is loaded but does not serve this process' malloc";
    if (!s.config_prof) return "jemalloc " + s.version + " was built without --enable-prof";
    if (!s.opt_prof) return "jemalloc profiling was not enabled at process start (MALLOC_CONF has no prof:true)";
    if (s.profiling_started_externally) {
      return "heap profiling was started externally (MALLOC_CONF prof_active:true); heapgate will not interfere";
    }
    return {};
  };
  s.why_not_sampled = profiling_why();
  s.why_not_exact = s.why_not_sampled;
  if (s.why_not_exact.empty() && s.opt_lg_prof_sample != 0) {
    // prof.reset can change the rate, but each thread picks the new rate up only
    // at its next sample event (up to megabytes later): the rate must be 0 from the start.
    s.why_not_exact = "jemalloc samples one allocation per 2^" + std::to_string(s.opt_lg_prof_sample) +
                      " bytes (lg_prof_sample), not every allocation";
  }
  if (s.why_not_exact.empty() && !s.opt_prof_accum) {
    s.why_not_exact = "jemalloc profiling runs without prof_accum:true, so allocation counts are not recorded";
  }
  if (s.why_not_exact.empty() && !prof_unbias_disabled(s)) {
    // jemalloc >= 5.3 writes distorted counts unless prof_unbias:false (docs/platform-facts.md §7).
    s.why_not_exact = "jemalloc profiling runs without prof_unbias:false, so dumped counts are not exact";
  }
  // The hooks record exact's stacks themselves (docs/design.md §4): jemalloc's
  // profiler settings do not matter then.
  s.exact_through_hooks = s.hooks_available && s.why_not_counters.empty() &&
                          !detail::stacks_from_jemalloc_requested() && detail::libunwind_backtrace() != nullptr;
  if (s.exact_through_hooks) s.why_not_exact.clear();
  return s;
}

}  // namespace

std::string_view to_string(Mode mode) noexcept { return word_of(kModeWords, mode, "off"); }

Result<Mode> parse_mode(std::string_view text) { return parse_word(kModeWords, text, "mode", "mode", "counters"); }

Result<void> AllocatorStatus::check(Mode mode) const {
  const std::string* why = nullptr;
  switch (mode) {
    case Mode::off:
      return {};
    case Mode::counters:
      why = &why_not_counters;
      break;
    case Mode::exact:
      why = &why_not_exact;
      break;
    case Mode::sampled:
      why = &why_not_sampled;
      break;
  }
  if (why->empty()) return {};
  std::string where = "heapgate mode " + std::string(to_string(mode));
  if (!jemalloc_detected || !jemalloc_active) {
    return fail(make_error(ErrorCode::unavailable, where, *why, kJemallocFix));
  }
  if (profiling_started_externally && mode != Mode::counters) {
    return fail(make_error(ErrorCode::conflict, where, *why, "remove prof_active:true from MALLOC_CONF"));
  }
  std::string fix;
  if (mode == Mode::counters) {
    fix = "use jemalloc 5.1 to 5.3 (Debian 12's libjemalloc2 is 5.3.0)";
  } else if (!config_prof) {
    fix = "use a jemalloc built with --enable-prof (Debian's libjemalloc2 is)";
  } else {
    fix = std::string("start the process with MALLOC_CONF=") +
          (mode == Mode::exact ? kExactMallocConf : kSampledMallocConf) +
          " (heapgate::gtest_main and `heapgate run` do this for you)";
  }
  return fail(make_error(ErrorCode::unavailable, where, *why, fix));
}

Mode AllocatorStatus::best_mode() const {
  if (why_not_exact.empty()) return Mode::exact;
  if (why_not_counters.empty()) return Mode::counters;
  return Mode::off;
}

std::string AllocatorStatus::describe() const {
  std::string out;
  if (!jemalloc_detected) {
    out += "jemalloc: not loaded; heapgate records nothing (mode off).\n";
    out += std::string("  fix: ") + kJemallocFix + "\n";
    return out;
  }
  auto yn = [](bool b) { return b ? "yes" : "no"; };
  out += "jemalloc: " + version + (jemalloc_active ? " (serves malloc)" : " (loaded, but not serving malloc)") + "\n";
  out += std::string("  profiling compiled in: ") + yn(config_prof) + ", enabled: " + yn(opt_prof) +
         ", active at start: " + yn(opt_prof_active) + ", accum: " + yn(opt_prof_accum) +
         ", lg_prof_sample: " + std::to_string(opt_lg_prof_sample) + "\n";
  out += "  MALLOC_CONF: \"" + malloc_conf_env + "\"\n";
  for (Mode m : {Mode::counters, Mode::exact, Mode::sampled}) {
    auto ok = check(m);
    std::string state = ok ? std::string("available") : ok.error().what;
    if (ok && m == Mode::counters && hooks_available) {
      switch (detail::counting_source()) {
        case detail::CountingSource::entry_points:
          state += " (counted by heapgate's allocation entry points)";
          break;
        case detail::CountingSource::jemalloc_hooks:
          state += std::string(" (counted by jemalloc's hooks: ") + detail::why_entry_points_not_in_effect() + ")";
          break;
        case detail::CountingSource::none:
          state = detail::why_no_counting();
          break;
      }
    }
    if (ok && m == Mode::counters && !hooks_available) {
      state += hooks_disabled_by_env ? " (bytes of the calling thread only: HEAPGATE_HOOKS=off)"
                                     : " (bytes of the calling thread only: jemalloc " + version +
                                           " has no allocation-hook ABI heapgate knows)";
    }
    out += "  mode " + std::string(to_string(m)) + ": " + state + "\n";
  }
  return out;
}

const AllocatorStatus& allocator_status() {
  static const AllocatorStatus status = detect();
  return status;
}

namespace detail {

MallctlFn mallctl_fn() noexcept {
  static const MallctlFn fn = reinterpret_cast<MallctlFn>(sys::find_symbol("mallctl"));
  return fn;
}

Error mallctl_error(const char* name, int err, const char* action) {
  std::string what = std::string("mallctl ") + action + " failed: " + std::strerror(err);
  std::string fix;
  if (err == ENOENT) {
    fix = "this jemalloc lacks the ctl, or profiling is not enabled (MALLOC_CONF prof:true)";
  } else if (err == EFAULT) {
    fix = "check that the target path is writable";
  }
  return make_error(ErrorCode::internal, name, std::move(what), std::move(fix));
}

Error jemalloc_absent_error() {
  return make_error(ErrorCode::unavailable, "jemalloc", "jemalloc is not loaded in this process", kJemallocFix);
}

}  // namespace detail

namespace jemalloc {

Result<std::string> version() {
  auto v = read<const char*>("version");
  if (!v) return fail(v.error());
  return std::string(*v != nullptr ? *v : "");
}

Result<bool> set_prof_active(bool active) { return exchange<bool>("prof.active", active); }

Result<bool> prof_active() { return read<bool>("prof.active"); }

Result<void> prof_reset(std::optional<std::size_t> lg_sample) {
  auto fn = detail::mallctl_fn();
  if (fn == nullptr) return fail(detail::jemalloc_absent_error());
  std::size_t lg = lg_sample.value_or(0);
  int err =
      lg_sample ? fn("prof.reset", nullptr, nullptr, &lg, sizeof lg) : fn("prof.reset", nullptr, nullptr, nullptr, 0);
  if (err != 0) return fail(detail::mallctl_error("prof.reset", err, "write"));
  return {};
}

Result<std::size_t> prof_lg_sample() { return read<std::size_t>("prof.lg_sample"); }

Result<void> prof_dump(const std::string& path) {
  const char* p = path.c_str();
  auto r = write<const char*>("prof.dump", p);
  if (!r) {
    Error e = r.error();
    e.where = "prof.dump " + path;
    return fail(std::move(e));
  }
  return {};
}

Result<std::uint64_t> thread_allocated() { return read<std::uint64_t>("thread.allocated"); }
Result<std::uint64_t> thread_deallocated() { return read<std::uint64_t>("thread.deallocated"); }
Result<std::uint64_t> thread_peak() { return read<std::uint64_t>("thread.peak.read"); }

Result<void> thread_peak_reset() {
  auto fn = detail::mallctl_fn();
  if (fn == nullptr) return fail(detail::jemalloc_absent_error());
  int err = fn("thread.peak.reset", nullptr, nullptr, nullptr, 0);
  if (err != 0) return fail(detail::mallctl_error("thread.peak.reset", err, "write"));
  return {};
}

Result<AllocatorStats> stats() {
  std::uint64_t epoch = 1;
  if (auto e = exchange<std::uint64_t>("epoch", epoch); !e) return fail(e.error());
  AllocatorStats s;
  struct Field {
    const char* name;
    std::size_t* out;
  };
  for (Field f :
       {Field{"stats.allocated", &s.allocated}, Field{"stats.active", &s.active}, Field{"stats.resident", &s.resident},
        Field{"stats.metadata", &s.metadata}, Field{"stats.mapped", &s.mapped}, Field{"stats.retained", &s.retained}}) {
    auto v = read<std::size_t>(f.name);
    if (!v) return fail(v.error());
    *f.out = *v;
  }
  return s;
}

Result<std::string> stats_json() {
  auto print = reinterpret_cast<MallocStatsPrintFn>(sys::find_symbol("malloc_stats_print"));
  if (print == nullptr) return fail(detail::jemalloc_absent_error());
  std::string out;
  print([](void* ctx, const char* text) { static_cast<std::string*>(ctx)->append(text); }, &out, "J");
  return out;
}

}  // namespace jemalloc
}  // namespace heapgate
