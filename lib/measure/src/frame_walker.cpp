// SPDX-License-Identifier: MIT
//
// Why not libunwind alone: unw_backtrace took ~1,500 instructions for the
// 15-frame stacks of a test's allocations, most of `exact` mode's cost
// (docs/performance.md, issue 30). It does what this file does, stepping
// each frame by a cached rule from the DWARF call-frame information, but its
// cache is per thread, keyed and filled through generic register state. Here
// a frame's step is one lookup in a table of rules by return address, shared
// by all threads and filled once per address, and three loads; and the
// frames a thread's last walk shared with this one are not stepped again.
// Any frame the rules cannot step (frame_rules.h) hands the whole stack back
// to libunwind.
#include "frame_walker.h"

#include <sys/mman.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "frame_rules.h"

// The walk starts from the registers of walk_stack()'s caller, which only
// an entry written in assembly has untouched: the stack pointer at entry
// points at the caller's return address, and rbp is still the caller's.
extern "C" __attribute__((visibility("hidden"))) int heapgate_walk_stack_from(void** frames, int max,
                                                                              heapgate::detail::WalkMemory* memory,
                                                                              heapgate::detail::WalkHashes* out,
                                                                              std::uintptr_t sp,
                                                                              std::uintptr_t bp) noexcept;
#if defined(__x86_64__)
extern "C" __attribute__((visibility("hidden"))) int heapgate_walk_stack(void** frames, int max,
                                                                         heapgate::detail::WalkMemory* memory,
                                                                         heapgate::detail::WalkHashes* out) noexcept;
asm(R"(
  .text
  .globl heapgate_walk_stack
  .hidden heapgate_walk_stack
  .type heapgate_walk_stack, @function
heapgate_walk_stack:
  .cfi_startproc
  mov %rsp, %r8
  mov %rbp, %r9
  jmp heapgate_walk_stack_from
  .cfi_endproc
  .size heapgate_walk_stack, .-heapgate_walk_stack
)");
#endif

namespace heapgate::detail {
namespace {

// A rule per return address, in open addressing. A slot is claimed once
// (its address set from 0) and its rule published with `flags`, never
// changed after: a reader that finds its address and nonzero flags reads a
// finished rule. Code unloaded with dlclose leaves its rules behind; only
// code mapped later at the same addresses would read them.
constexpr std::uint32_t kKindMask = 7;
constexpr std::uint32_t kCfaFromBp = 8;
constexpr std::uint32_t kBpSaved = 16;
struct Slot {
  std::atomic<std::uintptr_t> address{0};
  std::atomic<std::uint32_t> flags{0};  // FrameRule::Kind | kCfaFromBp | kBpSaved; 0: not yet published
  std::int32_t cfa_offset = 0;
  std::int32_t bp_offset = 0;
};
// A rule as the walk applies it.
struct Step {
  std::uint32_t flags;
  std::int32_t cfa_offset;
  std::int32_t bp_offset;
};
constexpr unsigned kSlotBits = 16;  // distinct return addresses on allocation stacks: thousands
constexpr std::size_t kSlots = std::size_t{1} << kSlotBits;
constexpr unsigned kProbes = 8;
Slot* g_slots = nullptr;  // written once, by frame_walker_ready()

inline std::size_t home(std::uintptr_t address) noexcept {
  return static_cast<std::size_t>((address * 0x9E3779B97F4A7C15ull) >> (64 - kSlotBits));
}

// A rule past its home slot, or not in the table yet: then computed, and
// kept if a slot is free.
__attribute__((noinline)) Step step_away_from_home(std::uintptr_t address) noexcept {
  const std::size_t at = home(address);
  for (unsigned probe = 0; probe < kProbes; ++probe) {
    const Slot& slot = g_slots[(at + probe) & (kSlots - 1)];
    const std::uintptr_t held = slot.address.load(std::memory_order_relaxed);
    if (held == 0) break;
    if (held != address) continue;
    const std::uint32_t flags = slot.flags.load(std::memory_order_acquire);
    if (flags == 0) break;
    return Step{flags, slot.cfa_offset, slot.bp_offset};
  }
  const FrameRule rule = frame_rule_at(address);
  const Step step{
      static_cast<std::uint32_t>(rule.kind) | (rule.cfa_from_bp ? kCfaFromBp : 0u) | (rule.bp_saved ? kBpSaved : 0u),
      rule.cfa_offset, rule.bp_offset};
  for (unsigned probe = 0; probe < kProbes; ++probe) {
    Slot& slot = g_slots[(at + probe) & (kSlots - 1)];
    std::uintptr_t seen = 0;
    if (slot.address.compare_exchange_strong(seen, address, std::memory_order_acq_rel)) {
      slot.cfa_offset = step.cfa_offset;
      slot.bp_offset = step.bp_offset;
      slot.flags.store(step.flags, std::memory_order_release);
      break;
    }
    if (seen == address) break;  // another thread is publishing it
  }
  return step;
}

inline Step step_for(std::uintptr_t address) noexcept {
  const Slot& slot = g_slots[home(address)];
  if (slot.address.load(std::memory_order_relaxed) == address) {
    const std::uint32_t flags = slot.flags.load(std::memory_order_acquire);
    if (flags != 0) return Step{flags, slot.cfa_offset, slot.bp_offset};
  }
  return step_away_from_home(address);
}

bool libunwind_alone_requested() noexcept {
  const char* env = std::getenv("HEAPGATE_UNWINDER");
  return env != nullptr && std::string_view(env) == "libunwind";
}

}  // namespace

bool frame_walker_ready() noexcept {
  static const bool ready = [] {
#if defined(__x86_64__)
    if (libunwind_alone_requested() || !frame_rules_available()) return false;
    void* mem = ::mmap(nullptr, kSlots * sizeof(Slot), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) return false;
    g_slots = static_cast<Slot*>(mem);  // zero pages: every slot empty
    return true;
#else
    return false;
#endif
  }();
  return ready;
}

// A call the compiler makes as a jump: the walk starts in the caller's frame.
int walk_stack(void** frames, int max, WalkMemory* memory, WalkHashes* hashes) noexcept {
#if defined(__x86_64__)
  return heapgate_walk_stack(frames, max, memory, hashes);
#else
  (void)frames;
  (void)max;
  (void)memory;
  (void)hashes;
  return -1;
#endif
}

}  // namespace heapgate::detail

namespace heapgate::detail {
namespace {

// The remembered walk from frame `from` outward is what a walk from the
// same registers would give now: the walk is a function of those registers,
// the rules (fixed per address) and the stack words it read, and those words
// are all the same. A saved rbp counts only where a later step reads it
// (bp_matters): code built without frame pointers keeps anything in rbp
// (heapgate's own entry points hold the block's address there), and
// checking those words made every walk from an allocation step through its
// innermost frames again.
bool still_on_stack(const WalkMemory& memory, int from) noexcept {
  const WalkMemory::Frame* f = memory.frames;
  for (int i = from; i > 0; --i) {
    if (*reinterpret_cast<const std::uintptr_t*>(f[i - 1].sp - 8) != f[i - 1].ip) return false;
    if (f[i].bp_slot != 0 && f[i - 1].bp_matters &&
        *reinterpret_cast<const std::uintptr_t*>(f[i].bp_slot) != f[i - 1].bp) {
      return false;
    }
  }
  return true;
}

// This walk's own frames fresh[0, n) (innermost first) go on the end of the
// remembered frames [0, kept) that it reused (outermost first), with their
// hashes (stack_hash), which `out` receives for the first frames.
void remember(WalkMemory& memory, const WalkMemory::Frame* fresh, int n, int kept, WalkHashes* out) noexcept {
  if (kept + n > WalkMemory::kFrames) {
    memory.count = 0;
    return;
  }
  WalkMemory::Frame* f = memory.frames;
  std::uint64_t hash = kept > 0 ? f[kept - 1].hash : kStackHashSeed;
  // Outward in: a walk from a frame reads the rbp it starts with if its own
  // step takes the CFA from rbp, or its step leaves rbp as it is and the walk
  // from its caller reads it. A frame whose rbp does not matter matches
  // whatever rbp holds (code without frame pointers keeps values there).
  bool outer_reads_bp = kept > 0 && f[kept - 1].bp_matters;
  for (int i = n - 1, at = kept; i >= 0; --i, ++at) {
    f[at] = fresh[i];
    f[at].bp_matters = f[at].cfa_from_bp || (f[at].bp_slot == 0 && outer_reads_bp);
    outer_reads_bp = f[at].bp_matters;
    hash = stack_hash_step(hash, f[at].ip);
    f[at].hash = hash;
    if (out != nullptr && i < kWalkHashes) out->of[i] = hash;
  }
  memory.count = kept + n;
  if (out == nullptr) return;
  // Frames past this walk's own come from the reused ones.
  for (int i = n, at = kept - 1; i < kWalkHashes && at >= 0; ++i, --at) out->of[i] = f[at].hash;
  out->whole = true;
}

}  // namespace
}  // namespace heapgate::detail

// The frame of the caller of heapgate_walk_stack: its return address is at
// `sp`, its stack pointer is sp + 8, its rbp is `bp`. Each step: the CFA from
// the frame's rule, the return address below it, rbp from where the frame
// saved it, and the CFA as the next frame's stack pointer.
extern "C" int heapgate_walk_stack_from(void** frames, int max, heapgate::detail::WalkMemory* memory,
                                        heapgate::detail::WalkHashes* out, std::uintptr_t sp,
                                        std::uintptr_t bp) noexcept {
  if (out != nullptr) out->whole = false;
  using heapgate::detail::FrameRule;
  using heapgate::detail::WalkMemory;
  if (memory != nullptr && memory->busy) memory = nullptr;  // a signal handler's walk inside a walk
  if (memory != nullptr) {
    memory->busy = true;
    asm volatile("" ::: "memory");  // busy is set before any use, for a handler on this thread
  }
  WalkMemory::Frame fresh[WalkMemory::kFrames];
  std::uintptr_t ip = *reinterpret_cast<const std::uintptr_t*>(sp);
  sp += 8;
  int n = 0;
  // The remembered frame to compare with next: frames below `sp` are passed.
  int cursor = memory != nullptr ? memory->count - 1 : -1;
  int result = -1;     // a frame the rules cannot step out of
  bool whole = false;  // the walk reached the outermost frame
  while (true) {
    if (n == max) {  // truncated, as libunwind truncates
      result = n;
      break;
    }
    frames[n] = reinterpret_cast<void*>(ip);
    if (memory != nullptr && cursor >= 0) {
      const WalkMemory::Frame* old = memory->frames;
      while (cursor >= 0 && old[cursor].sp < sp) --cursor;
      if (cursor >= 0 && old[cursor].sp == sp && old[cursor].ip == ip &&
          (!old[cursor].bp_matters || old[cursor].bp == bp) && n <= WalkMemory::kFrames &&
          heapgate::detail::still_on_stack(*memory, cursor)) {
        int total = n;
        for (int i = cursor; i >= 0 && total < max; --i) frames[total++] = reinterpret_cast<void*>(old[i].ip);
        // What rbp holds now, where it did not matter: the next walk compares
        // the word its callee saved with it.
        memory->frames[cursor].bp = bp;
        // A stack cut at `max` has no hash of its own here.
        heapgate::detail::remember(*memory, fresh, n, cursor + 1, total - n == cursor + 1 ? out : nullptr);
        memory->busy = false;
        return total;
      }
    }
    if (n < WalkMemory::kFrames) fresh[n] = WalkMemory::Frame{ip, sp, bp, 0, 0, false, false};
    ++n;
    const heapgate::detail::Step step = heapgate::detail::step_for(ip);
    const std::uint32_t kind = step.flags & heapgate::detail::kKindMask;
    if (kind != FrameRule::step) {
      whole = kind == FrameRule::outermost;
      // Code without unwind information (a fiber library's assembly
      // entry): the frames inside it are the stack that can be known.
      // libunwind would only guess past it, and on a fiber's stack its
      // guess read unmapped memory and crashed the process.
      if (whole || kind == FrameRule::no_unwind_info) result = n;
      break;
    }
    const bool cfa_from_bp = (step.flags & heapgate::detail::kCfaFromBp) != 0;
    if (n <= WalkMemory::kFrames) fresh[n - 1].cfa_from_bp = cfa_from_bp;
    const std::uintptr_t base = cfa_from_bp ? bp : sp;
    const std::uintptr_t cfa = base + static_cast<std::uintptr_t>(std::intptr_t{step.cfa_offset});
    // A caller's frame lies above its callee's, past the return address.
    if (cfa < sp + 8) break;
    ip = *reinterpret_cast<const std::uintptr_t*>(cfa - 8);
    if ((step.flags & heapgate::detail::kBpSaved) != 0) {
      const std::uintptr_t slot = cfa + static_cast<std::uintptr_t>(std::intptr_t{step.bp_offset});
      if (n <= WalkMemory::kFrames) fresh[n - 1].bp_slot = slot;
      bp = *reinterpret_cast<const std::uintptr_t*>(slot);
    }
    sp = cfa;
  }
  if (memory != nullptr) {
    // Only a walk that reached the outermost frame is whole enough to reuse.
    if (whole && n <= WalkMemory::kFrames) {
      heapgate::detail::remember(*memory, fresh, n, 0, out);
    } else {
      memory->count = 0;
    }
    memory->busy = false;
  }
  return result;
}
