// SPDX-License-Identifier: MIT
// frame_rule_at(): the FrameRule for one return address, found through libgcc's _Unwind_Find_FDE
// and read by a small .eh_frame CIE/FDE and CFA-program interpreter that never allocates.
#include "frame_rules.h"

#include <dlfcn.h>

#include <atomic>
#include <cstddef>
#include <cstring>

namespace heapgate::detail {
namespace {

#if defined(__x86_64__)
constexpr bool kArchSupported = true;
#else
constexpr bool kArchSupported = false;
#endif

// DWARF register numbers on x86-64 (System V psABI, figure 3.36).
constexpr std::uint64_t kRbp = 6;
constexpr std::uint64_t kRsp = 7;
constexpr std::uint64_t kReturnAddress = 16;

// libgcc's search for the FDE of an address (unwind-dw2-fde.h): what C++
// exceptions unwind with, so every module the program runs has its table
// registered there. `bases` receives, among others, the function's start.
struct EhBases {
  void* tbase;
  void* dbase;
  void* func;
};
using FindFdeFn = const void* (*)(void* pc, EhBases* bases);

FindFdeFn find_fde() noexcept {
  static const FindFdeFn fn = [] {
    if (!kArchSupported) return FindFdeFn{nullptr};
    return reinterpret_cast<FindFdeFn>(::dlsym(RTLD_DEFAULT, "_Unwind_Find_FDE"));
  }();
  return fn;
}

// A bounded reader of the CFI bytes: any read past `end` marks it bad.
class Reader {
 public:
  Reader(const unsigned char* at, const unsigned char* end) noexcept : at_(at), end_(end) {}
  bool ok() const noexcept { return ok_; }
  bool done() const noexcept { return !ok_ || at_ >= end_; }
  const unsigned char* at() const noexcept { return at_; }
  void jump(const unsigned char* to) noexcept {
    if (to < at_ || to > end_) ok_ = false;
    at_ = to;
  }
  std::uint8_t u8() noexcept { return need(1) ? *at_++ : 0; }
  std::uint64_t fixed(std::size_t bytes) noexcept {
    std::uint64_t v = 0;
    if (!need(bytes)) return 0;
    std::memcpy(&v, at_, bytes);  // x86-64 is little-endian, as its .eh_frame
    at_ += bytes;
    return v;
  }
  std::uint64_t uleb() noexcept {
    std::uint64_t v = 0;
    for (unsigned shift = 0; need(1); shift += 7) {
      const std::uint8_t b = *at_++;
      if (shift < 64) v |= std::uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return v;
    }
    return 0;
  }
  std::int64_t sleb() noexcept {
    std::uint64_t v = 0;
    unsigned shift = 0;
    std::uint8_t b = 0;
    do {
      if (!need(1)) return 0;
      b = *at_++;
      if (shift < 64) v |= std::uint64_t{b & 0x7fu} << shift;
      shift += 7;
    } while ((b & 0x80) != 0);
    if (shift < 64 && (b & 0x40) != 0) v |= ~std::uint64_t{0} << shift;
    return static_cast<std::int64_t>(v);
  }
  // Skips a pointer in DW_EH_PE encoding `enc`; false for an encoding it does not know.
  bool skip_encoded(std::uint8_t enc) noexcept {
    switch (enc & 0x0f) {
      case 0x00:
        return skip(8);  // absptr
      case 0x02:
      case 0x0a:
        return skip(2);
      case 0x03:
      case 0x0b:
        return skip(4);
      case 0x04:
      case 0x0c:
        return skip(8);
      case 0x01:
        (void)uleb();
        return ok_;
      case 0x09:
        (void)sleb();
        return ok_;
      default:
        return false;
    }
  }
  bool skip(std::size_t bytes) noexcept {
    if (!need(bytes)) return false;
    at_ += bytes;
    return true;
  }

 private:
  bool need(std::size_t bytes) noexcept {
    if (ok_ && static_cast<std::size_t>(end_ - at_) >= bytes) return true;
    ok_ = false;
    return false;
  }
  const unsigned char* at_;
  const unsigned char* end_;
  bool ok_ = true;
};

// One row of the CFA table, as much of it as a FrameRule describes.
struct Row {
  enum Rule : std::uint8_t { same, at_offset, undefined, other };
  std::uint64_t cfa_register = kRsp;
  std::int64_t cfa_offset = 0;
  bool cfa_expression = false;
  Rule bp = same;
  std::int64_t bp_offset = 0;
  Rule ra = undefined;
  std::int64_t ra_offset = 0;
};

struct Cie {
  std::uint64_t code_align = 1;
  std::int64_t data_align = 1;
  std::uint64_t ra_register = kReturnAddress;
  std::uint8_t fde_encoding = 0;
  bool has_augmentation_data = false;
  bool signal_frame = false;
  const unsigned char* instructions = nullptr;
  const unsigned char* end = nullptr;
};

// The entry's bytes after its length field, or nullptr (a terminator, or a
// 64-bit length, which .eh_frame does not use).
const unsigned char* entry_end(const unsigned char* entry, const unsigned char** body) noexcept {
  std::uint32_t length = 0;
  std::memcpy(&length, entry, sizeof length);
  if (length == 0 || length == 0xffffffffu) return nullptr;
  *body = entry + 4;
  return entry + 4 + length;
}

bool parse_cie(const unsigned char* entry, Cie* cie) noexcept {
  const unsigned char* body = nullptr;
  const unsigned char* end = entry_end(entry, &body);
  if (end == nullptr) return false;
  Reader r(body, end);
  if (r.fixed(4) != 0) return false;  // a CIE's id is 0 in .eh_frame
  const std::uint8_t version = r.u8();
  const char* augmentation = reinterpret_cast<const char*>(r.at());
  const std::size_t aug_length = ::strnlen(augmentation, static_cast<std::size_t>(end - r.at()));
  if (!r.skip(aug_length + 1)) return false;
  if (augmentation[0] != '\0' && augmentation[0] != 'z') return false;  // "eh" and other old forms
  cie->code_align = r.uleb();
  cie->data_align = r.sleb();
  cie->ra_register = version == 1 ? r.u8() : r.uleb();
  if (augmentation[0] == 'z') {
    cie->has_augmentation_data = true;
    const std::uint64_t data_length = r.uleb();
    const unsigned char* data_end = r.at() + data_length;
    for (const char* c = augmentation + 1; *c != '\0' && r.ok(); ++c) {
      if (*c == 'R') {
        cie->fde_encoding = r.u8();
      } else if (*c == 'P') {
        if (!r.skip_encoded(r.u8())) break;
      } else if (*c == 'L') {
        (void)r.u8();
      } else if (*c == 'S') {
        cie->signal_frame = true;
      } else {
        break;  // unknown: the data's length still tells where it ends
      }
    }
    r.jump(data_end);
  }
  if (!r.ok()) return false;
  cie->instructions = r.at();
  cie->end = end;
  return true;
}

// Runs a CFA program from `row` up to the row that covers `target`
// (`*location` is the address the program starts at). False on a form the
// interpreter does not know, or bad bytes.
bool run_program(Reader r, const Cie& cie, const Row& initial, std::uintptr_t target, std::uintptr_t* location,
                 Row* row) noexcept {
  constexpr int kStates = 8;
  Row remembered[kStates];
  int depth = 0;
  auto set_register = [&](std::uint64_t reg, Row::Rule rule, std::int64_t offset) {
    if (reg == kRbp) {
      row->bp = rule;
      row->bp_offset = offset;
    } else if (reg == cie.ra_register) {
      row->ra = rule;
      row->ra_offset = offset;
    }
  };
  auto restore_register = [&](std::uint64_t reg) {
    if (reg == kRbp) {
      row->bp = initial.bp;
      row->bp_offset = initial.bp_offset;
    } else if (reg == cie.ra_register) {
      row->ra = initial.ra;
      row->ra_offset = initial.ra_offset;
    }
  };
  auto advance = [&](std::uint64_t delta) {
    const std::uintptr_t next = *location + delta * cie.code_align;
    if (next > target) return false;  // the current row covers target
    *location = next;
    return true;
  };
  while (!r.done()) {
    const std::uint8_t op = r.u8();
    const std::uint8_t low = op & 0x3f;
    switch (op >> 6) {
      case 1:
        if (!advance(low)) return r.ok();
        continue;
      case 2:
        set_register(low, Row::at_offset, static_cast<std::int64_t>(r.uleb()) * cie.data_align);
        continue;
      case 3:
        restore_register(low);
        continue;
      default:
        break;
    }
    switch (op) {
      case 0x00:  // nop
        break;
      case 0x02:  // advance_loc1
        if (!advance(r.u8())) return r.ok();
        break;
      case 0x03:  // advance_loc2
        if (!advance(r.fixed(2))) return r.ok();
        break;
      case 0x04:  // advance_loc4
        if (!advance(r.fixed(4))) return r.ok();
        break;
      case 0x05: {  // offset_extended
        const std::uint64_t reg = r.uleb();
        set_register(reg, Row::at_offset, static_cast<std::int64_t>(r.uleb()) * cie.data_align);
        break;
      }
      case 0x06:  // restore_extended
        restore_register(r.uleb());
        break;
      case 0x07:  // undefined
        set_register(r.uleb(), Row::undefined, 0);
        break;
      case 0x08:  // same_value
        set_register(r.uleb(), Row::same, 0);
        break;
      case 0x09: {  // register
        const std::uint64_t reg = r.uleb();
        (void)r.uleb();
        set_register(reg, Row::other, 0);
        break;
      }
      case 0x0a:  // remember_state
        if (depth == kStates) return false;
        remembered[depth++] = *row;
        break;
      case 0x0b:  // restore_state: the whole row, CFA included, as libgcc and libunwind read it
        if (depth == 0) return false;
        *row = remembered[--depth];
        break;
      case 0x0c:  // def_cfa
        row->cfa_register = r.uleb();
        row->cfa_offset = static_cast<std::int64_t>(r.uleb());
        row->cfa_expression = false;
        break;
      case 0x0d:  // def_cfa_register
        row->cfa_register = r.uleb();
        row->cfa_expression = false;
        break;
      case 0x0e:  // def_cfa_offset
        row->cfa_offset = static_cast<std::int64_t>(r.uleb());
        break;
      case 0x0f:  // def_cfa_expression
        row->cfa_expression = true;
        (void)r.skip(r.uleb());
        break;
      case 0x10:    // expression
      case 0x16: {  // val_expression
        const std::uint64_t reg = r.uleb();
        set_register(reg, Row::other, 0);
        (void)r.skip(r.uleb());
        break;
      }
      case 0x11: {  // offset_extended_sf
        const std::uint64_t reg = r.uleb();
        set_register(reg, Row::at_offset, r.sleb() * cie.data_align);
        break;
      }
      case 0x12:  // def_cfa_sf
        row->cfa_register = r.uleb();
        row->cfa_offset = r.sleb() * cie.data_align;
        row->cfa_expression = false;
        break;
      case 0x13:  // def_cfa_offset_sf
        row->cfa_offset = r.sleb() * cie.data_align;
        break;
      case 0x14:    // val_offset
      case 0x15: {  // val_offset_sf
        const std::uint64_t reg = r.uleb();
        if (op == 0x14) {
          (void)r.uleb();
        } else {
          (void)r.sleb();
        }
        set_register(reg, Row::other, 0);
        break;
      }
      case 0x2e:  // GNU_args_size: for landing pads; the CFA rule already holds
        (void)r.uleb();
        break;
      case 0x2f: {  // GNU_negative_offset_extended
        const std::uint64_t reg = r.uleb();
        set_register(reg, Row::at_offset, -static_cast<std::int64_t>(r.uleb()) * cie.data_align);
        break;
      }
      default:  // set_loc and vendor forms
        return false;
    }
  }
  return r.ok();
}

FrameRule to_rule(const Row& row) noexcept {
  FrameRule rule;
  rule.kind = FrameRule::unsupported;
  if (row.ra == Row::undefined) {
    rule.kind = FrameRule::outermost;
    return rule;
  }
  if (row.cfa_expression || (row.cfa_register != kRsp && row.cfa_register != kRbp)) return rule;
  if (row.ra != Row::at_offset || row.ra_offset != -8) return rule;
  if (row.bp != Row::same && row.bp != Row::at_offset) return rule;
  constexpr std::int64_t kLimit = std::int64_t{1} << 30;
  if (row.cfa_offset <= -kLimit || row.cfa_offset >= kLimit || row.bp_offset <= -kLimit || row.bp_offset >= kLimit) {
    return rule;
  }
  rule.kind = FrameRule::step;
  rule.cfa_from_bp = row.cfa_register == kRbp;
  rule.cfa_offset = static_cast<std::int32_t>(row.cfa_offset);
  rule.bp_saved = row.bp == Row::at_offset;
  rule.bp_offset = static_cast<std::int32_t>(row.bp_offset);
  return rule;
}

}  // namespace

bool frame_rules_available() noexcept { return find_fde() != nullptr; }

FrameRule frame_rule_at(std::uintptr_t return_address) noexcept {
  FrameRule unsupported;
  unsupported.kind = FrameRule::unsupported;
  const FindFdeFn find = find_fde();
  if (find == nullptr || return_address == 0) return unsupported;
  // The call instruction's row: the return address may already be the next
  // function's first byte (a call to a noreturn function ends its caller).
  const std::uintptr_t target = return_address - 1;
  EhBases bases{};
  const auto* fde = static_cast<const unsigned char*>(find(reinterpret_cast<void*>(target), &bases));
  if (fde == nullptr) {
    FrameRule none_known;
    none_known.kind = FrameRule::no_unwind_info;
    return none_known;
  }
  const unsigned char* body = nullptr;
  const unsigned char* end = entry_end(fde, &body);
  if (end == nullptr) return unsupported;
  std::int32_t cie_delta = 0;
  std::memcpy(&cie_delta, body, sizeof cie_delta);
  Cie cie;
  if (cie_delta == 0 || !parse_cie(body - cie_delta, &cie) || cie.signal_frame) return unsupported;
  Reader r(body + 4, end);
  if (!r.skip_encoded(cie.fde_encoding) || !r.skip_encoded(cie.fde_encoding & 0x0f)) return unsupported;
  if (cie.has_augmentation_data) {
    const std::uint64_t data_length = r.uleb();
    r.jump(r.at() + data_length);
  }
  if (!r.ok()) return unsupported;
  // The CIE's initial instructions give the row every FDE starts from, and
  // the one DW_CFA_restore returns to.
  Row initial;
  std::uintptr_t location = 0;
  if (!run_program(Reader(cie.instructions, cie.end), cie, initial, ~std::uintptr_t{0}, &location, &initial)) {
    return unsupported;
  }
  Row row = initial;
  location = reinterpret_cast<std::uintptr_t>(bases.func);
  if (!run_program(r, cie, initial, target, &location, &row)) return unsupported;
  return to_rule(row);
}

}  // namespace heapgate::detail
