// SPDX-License-Identifier: MIT
// runtime_fingerprint() (heapgate/fingerprint.h): jemalloc and glibc versions, architecture, page
// size and temp-dir lengths; build facts, FingerprintCheck names, difference phrases.
#include "heapgate/fingerprint.h"

#include <gnu/libc-version.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "heapgate/allocator.h"
#include "heapgate/sys.h"

namespace heapgate {

Fingerprint runtime_fingerprint() {
  Fingerprint f;
  const AllocatorStatus& status = allocator_status();
  if (!status.version.empty()) {
    // "5.3.0-0-g54eaed1d…": the release is what changes size classes and paths.
    f["jemalloc"] = status.version.substr(0, status.version.find('-'));
  }
  f["libc"] = std::string("glibc ") + gnu_get_libc_version();
  utsname names{};
  if (::uname(&names) == 0) f["arch"] = names.machine;
  const long page = ::sysconf(_SC_PAGESIZE);
  if (page > 0) f["page_size"] = std::to_string(page);
  // Tests that build paths under the temporary directory allocate more bytes
  // (and, as strings grow, more blocks) for a longer one: only its length
  // matters, and `heapgate run` keeps it the same for every shard and run.
  f["temp_dir_length"] = std::to_string(sys::temp_root().size());
  if (const char* test_tmpdir = std::getenv("TEST_TMPDIR"); test_tmpdir != nullptr && *test_tmpdir != '\0') {
    f["test_tmpdir_length"] = std::to_string(std::string_view(test_tmpdir).size());
  }
  return f;
}

std::string_view to_string(FingerprintCheck check) noexcept { return word_of(kFingerprintCheckWords, check, "warn"); }

Result<FingerprintCheck> parse_fingerprint_check(std::string_view text) {
  return parse_word(kFingerprintCheckWords, text, "fingerprint", "fingerprint check", "warn");
}

std::vector<std::string> fingerprint_differences(const Fingerprint& recorded, const Fingerprint& now) {
  std::vector<std::string> out;
  if (recorded.empty() || now.empty()) return out;
  for (const auto& [key, value] : recorded) {
    auto it = now.find(key);
    if (it == now.end() || it->second == value) continue;
    out.push_back(key + " " + value + " → " + it->second);
  }
  return out;
}

std::string describe_fingerprint_change(const std::vector<std::string>& differences) {
  if (differences.empty()) return {};
  std::string out = "the baseline was recorded in another environment: ";
  for (std::size_t i = 0; i < differences.size(); ++i) out += (i == 0 ? "" : "; ") + differences[i];
  return out;
}

namespace detail {

void add_build_fingerprint(Fingerprint& fingerprint, const BuildFacts& facts) {
  fingerprint["compiler"] = facts.compiler;
  fingerprint["libstdc++"] = facts.cxx_library;
  fingerprint["build"] = std::string(facts.optimized ? "optimized" : "unoptimized") +
                         (facts.assertions ? ", assertions on" : ", assertions off");
}

}  // namespace detail
}  // namespace heapgate
