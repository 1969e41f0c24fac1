// SPDX-License-Identifier: MIT
// ELF inspection of a binary before the runner starts it (binary_inspect.h): jemalloc_linkage(),
// inspect_program() for `heapgate record`, find_system_jemalloc(), has_heapgate_plugin().
#include "binary_inspect.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "heapgate/sys.h"

namespace heapgate::runner {
namespace {

struct ElfFile {
  int fd = -1;
  Elf* elf = nullptr;
  ~ElfFile() {
    if (elf != nullptr) elf_end(elf);
    if (fd >= 0) ::close(fd);
  }
};

// Scans one symbol table (SHT_DYNSYM or SHT_SYMTAB) for a defined `mallctl`.
bool defines_mallctl(Elf* elf, Elf_Scn* section, const GElf_Shdr& header) {
  Elf_Data* data = elf_getdata(section, nullptr);
  if (data == nullptr || header.sh_entsize == 0) return false;
  const std::size_t count = header.sh_size / header.sh_entsize;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Sym symbol;
    if (gelf_getsym(data, static_cast<int>(i), &symbol) == nullptr) continue;
    if (symbol.st_shndx == SHN_UNDEF) continue;
    const char* name = elf_strptr(elf, header.sh_link, symbol.st_name);
    if (name != nullptr && (std::strcmp(name, "mallctl") == 0 || std::strcmp(name, "je_mallctl") == 0)) return true;
  }
  return false;
}

}  // namespace

Result<JemallocLinkage> jemalloc_linkage(const std::string& path) {
  elf_version(EV_CURRENT);
  ElfFile file;
  auto opened = sys::open_regular_file(path);
  if (!opened) {
    Error e = opened.error();
    e.fix = "check the path of the test binary (build it first)";
    return fail(std::move(e));
  }
  file.fd = *opened;
  file.elf = elf_begin(file.fd, ELF_C_READ, nullptr);
  if (file.elf == nullptr || elf_kind(file.elf) != ELF_K_ELF) {
    return fail(make_error(ErrorCode::parse_error, path, "not an ELF executable",
                           "pass the GoogleTest binary itself, not a script or wrapper"));
  }
  bool defines = false;
  for (Elf_Scn* section = elf_nextscn(file.elf, nullptr); section != nullptr;
       section = elf_nextscn(file.elf, section)) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr) continue;
    if (header.sh_type == SHT_DYNAMIC) {
      Elf_Data* data = elf_getdata(section, nullptr);
      if (data == nullptr || header.sh_entsize == 0) continue;
      const std::size_t count = header.sh_size / header.sh_entsize;
      for (std::size_t i = 0; i < count; ++i) {
        GElf_Dyn entry;
        if (gelf_getdyn(data, static_cast<int>(i), &entry) == nullptr || entry.d_tag != DT_NEEDED) continue;
        const char* needed = elf_strptr(file.elf, header.sh_link, entry.d_un.d_val);
        if (needed != nullptr && std::string_view(needed).rfind("libjemalloc", 0) == 0) {
          return JemallocLinkage::dynamic;
        }
      }
    } else if ((header.sh_type == SHT_DYNSYM || header.sh_type == SHT_SYMTAB) && !defines) {
      defines = defines_mallctl(file.elf, section, header);
    }
  }
  return defines ? JemallocLinkage::linked : JemallocLinkage::absent;
}

Result<ProgramFacts> inspect_program(const std::string& path) {
  elf_version(EV_CURRENT);
  ElfFile file;
  auto opened = sys::open_regular_file(path);
  if (!opened) return fail(opened.error());
  file.fd = *opened;
  ProgramFacts facts;
  struct stat st {};
  if (::fstat(file.fd, &st) == 0) facts.set_id = (st.st_mode & (S_ISUID | S_ISGID)) != 0;
  file.elf = elf_begin(file.fd, ELF_C_READ, nullptr);
  if (file.elf == nullptr || elf_kind(file.elf) != ELF_K_ELF) {
    return fail(make_error(ErrorCode::parse_error, path, "cannot measure this program because it is not an ELF file",
                           "pass the program itself, not a script or wrapper (for a script: heapgate record -- "
                           "/bin/sh SCRIPT records the shell too)"));
  }
  std::size_t headers = 0;
  if (elf_getphdrnum(file.elf, &headers) == 0) {
    for (std::size_t i = 0; i < headers; ++i) {
      GElf_Phdr header;
      if (gelf_getphdr(file.elf, static_cast<int>(i), &header) != nullptr && header.p_type == PT_INTERP) {
        facts.dynamic = true;
      }
    }
  }
  for (Elf_Scn* section = elf_nextscn(file.elf, nullptr); section != nullptr;
       section = elf_nextscn(file.elf, section)) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr || header.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(section, nullptr);
    if (data == nullptr) continue;
    const std::size_t count = header.sh_size / header.sh_entsize;
    if (header.sh_type == SHT_DYNAMIC) {
      for (std::size_t i = 0; i < count && facts.own_allocator.empty(); ++i) {
        GElf_Dyn entry;
        if (gelf_getdyn(data, static_cast<int>(i), &entry) == nullptr || entry.d_tag != DT_NEEDED) continue;
        const char* needed = elf_strptr(file.elf, header.sh_link, entry.d_un.d_val);
        const std::string_view name = needed != nullptr ? needed : "";
        for (std::string_view replacing : {"libasan", "libtcmalloc", "libmimalloc", "libhwasan", "libmsan"}) {
          if (name.rfind(replacing, 0) == 0) facts.own_allocator = std::string(name);
        }
      }
    } else if (header.sh_type == SHT_DYNSYM || header.sh_type == SHT_SYMTAB) {
      for (std::size_t i = 0; i < count && facts.own_allocator.empty(); ++i) {
        GElf_Sym symbol;
        if (gelf_getsym(data, static_cast<int>(i), &symbol) == nullptr || symbol.st_shndx == SHN_UNDEF) continue;
        const char* name = elf_strptr(file.elf, header.sh_link, symbol.st_name);
        if (name == nullptr) continue;
        // A sanitizer linked statically (clang's default) defines its runtime's entry.
        if (std::strcmp(name, "__asan_init") == 0) facts.own_allocator = "AddressSanitizer";
        if (std::strcmp(name, "__msan_init") == 0) facts.own_allocator = "MemorySanitizer";
        if (std::strcmp(name, "tc_malloc") == 0) facts.own_allocator = "tcmalloc";
        // An exported malloc of the program's own is what every library would call.
        if (header.sh_type == SHT_DYNSYM && std::strcmp(name, "malloc") == 0 &&
            GELF_ST_TYPE(symbol.st_info) == STT_FUNC) {
          facts.own_allocator = "malloc defined in the program";
        }
      }
    }
  }
  return facts;
}

std::optional<std::string> find_system_jemalloc() {
  if (const char* chosen = std::getenv("HEAPGATE_JEMALLOC"); chosen != nullptr && *chosen != '\0') {
    return sys::exists(chosen) ? std::optional<std::string>(chosen) : std::nullopt;
  }
  std::string libc_dir;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        std::string_view name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        auto slash = name.rfind('/');
        if (slash != std::string_view::npos && name.substr(slash + 1).rfind("libc.so", 0) == 0) {
          *static_cast<std::string*>(out) = std::string(name.substr(0, slash));
          return 1;
        }
        return 0;
      },
      &libc_dir);
  for (const std::string& dir :
       {libc_dir, std::string("/usr/lib/x86_64-linux-gnu"), std::string("/usr/lib/aarch64-linux-gnu"),
        std::string("/usr/lib64"), std::string("/usr/lib"), std::string("/usr/local/lib")}) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/libjemalloc.so.2";
    if (sys::exists(candidate)) return candidate;
  }
  return std::nullopt;
}

TestFramework test_framework_of(const std::string& path) {
  auto mapped = sys::map_file(path, sys::kExecutableSizeLimit);
  if (!mapped) return TestFramework::googletest;
  const std::string_view bytes = mapped->text();
  if (bytes.find("gtest_list_tests") != std::string_view::npos) return TestFramework::googletest;
  if (bytes.find("list-test-names-only") != std::string_view::npos) return TestFramework::catch2;
  if (bytes.find("list-test-cases") != std::string_view::npos) return TestFramework::doctest;
  return TestFramework::googletest;
}

bool has_heapgate_plugin(const std::string& path) {
  auto mapped = sys::map_file(path, sys::kExecutableSizeLimit);
  if (!mapped) return false;
  constexpr std::string_view kMarker = "heapgate_internal_child";
  std::string_view bytes = mapped->text();
  return bytes.find(kMarker) != std::string_view::npos;
}

}  // namespace heapgate::runner
