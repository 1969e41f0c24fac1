// SPDX-License-Identifier: MIT
// read_build_id() (heapgate/build_id.h): finds the NT_GNU_BUILD_ID note with libelf, in the
// program headers first (they survive stripped section headers), then in the note sections.
#include "heapgate/build_id.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "heapgate/sys.h"

namespace heapgate::detail {
namespace {

// Closes the descriptor and ends the Elf handle on scope exit.
struct ElfFile {
  int fd = -1;
  Elf* elf = nullptr;
  ElfFile() = default;
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;
  ~ElfFile() {
    if (elf != nullptr) elf_end(elf);
    if (fd >= 0) ::close(fd);
  }
};

// Scans one note area for a GNU build-id note.
std::optional<std::string> find_in_notes(Elf_Data* data) {
  if (data == nullptr || data->d_buf == nullptr) return std::nullopt;
  std::size_t offset = 0;
  GElf_Nhdr nhdr;
  std::size_t name_off = 0;
  std::size_t desc_off = 0;
  while (offset < data->d_size) {
    std::size_t next = gelf_getnote(data, offset, &nhdr, &name_off, &desc_off);
    if (next == 0 || next <= offset) break;
    const auto* base = static_cast<const unsigned char*>(data->d_buf);
    if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == 4 && nhdr.n_descsz > 0 &&
        std::memcmp(base + name_off, "GNU", 4) == 0) {
      return to_hex(base + desc_off, nhdr.n_descsz);
    }
    offset = next;
  }
  return std::nullopt;
}

// Program headers first: they survive `strip --strip-section-headers`.
std::optional<std::string> find_in_segments(Elf* elf) {
  std::size_t count = 0;
  if (elf_getphdrnum(elf, &count) != 0) return std::nullopt;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(elf, static_cast<int>(i), &phdr) == nullptr || phdr.p_type != PT_NOTE) continue;
    // Notes in an 8-aligned segment (e.g. .note.gnu.property) pad to 8 bytes; read them as such.
    Elf_Type type = phdr.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR;
    Elf_Data* data = elf_getdata_rawchunk(elf, static_cast<off_t>(phdr.p_offset), phdr.p_filesz, type);
    if (auto id = find_in_notes(data)) return id;
  }
  return std::nullopt;
}

std::optional<std::string> find_in_sections(Elf* elf) {
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_NOTE) continue;
    if (auto id = find_in_notes(elf_getdata(scn, nullptr))) return id;
  }
  return std::nullopt;
}

}  // namespace

Result<std::string> read_build_id(const std::string& elf_path) {
  if (elf_version(EV_CURRENT) == EV_NONE) {
    return fail(make_error(ErrorCode::internal, elf_path, std::string("libelf: ") + elf_errmsg(-1)));
  }
  ElfFile file;
  // A profile's maps section names the paths read here: a FIFO or a device
  // among them must not block or be read.
  auto opened = sys::open_regular_file(elf_path);
  if (!opened) return fail(std::move(opened.error()));
  file.fd = *opened;
  file.elf = elf_begin(file.fd, ELF_C_READ_MMAP, nullptr);
  if (file.elf == nullptr || elf_kind(file.elf) != ELF_K_ELF) {
    return fail(make_error(ErrorCode::parse_error, elf_path, "expected an ELF file, got something else"));
  }
  if (auto id = find_in_segments(file.elf)) return *id;
  if (auto id = find_in_sections(file.elf)) return *id;
  return fail(make_error(ErrorCode::unavailable, elf_path, "the ELF file has no GNU build-id note",
                         "link with -Wl,--build-id"));
}

std::string to_hex(const unsigned char* bytes, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (std::size_t i = 0; i < size; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 0xf];
  }
  return out;
}

}  // namespace heapgate::detail
