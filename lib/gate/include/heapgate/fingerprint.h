// SPDX-License-Identifier: MIT
// What a baseline's counts depend on besides the code: Fingerprint, runtime_fingerprint(),
// HEAPGATE_ADD_BUILD_FINGERPRINT, FingerprintCheck, and fingerprint_differences().
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "heapgate/error.h"
#include "heapgate/vocabulary.h"

namespace heapgate {

/// What a baseline's numbers depend on besides the code: exact allocation
/// counts change with the allocator, the C and C++ runtime, the compiler and
/// the build's flags, the architecture and the page size. Keys (all strings):
/// "jemalloc", "libc", "libstdc++", "compiler", "build" (optimized or not,
/// assertions on or off), "arch", "page_size". Recorded in a baseline and in
/// each report's run; a key absent on either side is not compared.
using Fingerprint = std::map<std::string, std::string>;

/// The facts this process can read at run time: jemalloc's version (when it
/// is the allocator), glibc's, the architecture and the page size.
Fingerprint runtime_fingerprint();

/// The facts of the translation unit that expands it — the test binary's
/// compiler, C++ library and build — added to `fingerprint`.
#define HEAPGATE_ADD_BUILD_FINGERPRINT(fingerprint) \
  ::heapgate::detail::add_build_fingerprint((fingerprint), HEAPGATE_BUILD_FACTS_)

/// How a run treats a baseline recorded in another environment
/// (--heapgate_fingerprint, `heapgate run --fingerprint`):
/// - `warn` (default): said once, and in every regression's explanation;
/// - `strict`: a mismatch alone fails the run (exit 1);
/// - `ignore`: not compared.
enum class FingerprintCheck { warn, strict, ignore };
/// Every FingerprintCheck with its name, in the order error messages list them.
inline constexpr Vocabulary<FingerprintCheck, 3> kFingerprintCheckWords = {{
    {FingerprintCheck::warn, "warn"},
    {FingerprintCheck::strict, "strict"},
    {FingerprintCheck::ignore, "ignore"},
}};

std::string_view to_string(FingerprintCheck check) noexcept;
/// Errors: `parse_error` naming the value and the valid ones.
Result<FingerprintCheck> parse_fingerprint_check(std::string_view text);

/// One phrase per key whose value differs ("compiler gcc 12.2.0 → gcc 13.1.0"),
/// in key order; empty when either side is empty (an older baseline).
std::vector<std::string> fingerprint_differences(const Fingerprint& recorded, const Fingerprint& now);

/// "the baseline was recorded in another environment: compiler gcc 12.2.0 →
/// gcc 13.1.0; libc glibc 2.36 → glibc 2.38", or "" without differences.
std::string describe_fingerprint_change(const std::vector<std::string>& differences);

namespace detail {
struct BuildFacts {
  const char* compiler;
  const char* cxx_library;
  bool optimized;
  bool assertions;
};
void add_build_fingerprint(Fingerprint& fingerprint, const BuildFacts& facts);
}  // namespace detail

}  // namespace heapgate

#define HEAPGATE_FP_STR_(x) #x
#define HEAPGATE_FP_STR(x) HEAPGATE_FP_STR_(x)
#if defined(__clang__)
#define HEAPGATE_FP_COMPILER_ "clang " __clang_version__
#elif defined(__GNUC__)
#define HEAPGATE_FP_COMPILER_ "gcc " __VERSION__
#else
#define HEAPGATE_FP_COMPILER_ "unknown compiler"
#endif
#if defined(__GLIBCXX__)
#define HEAPGATE_FP_CXXLIB_ "libstdc++ " HEAPGATE_FP_STR(__GLIBCXX__)
#elif defined(_LIBCPP_VERSION)
#define HEAPGATE_FP_CXXLIB_ "libc++ " HEAPGATE_FP_STR(_LIBCPP_VERSION)
#else
#define HEAPGATE_FP_CXXLIB_ "unknown"
#endif
#if defined(__OPTIMIZE__)
#define HEAPGATE_FP_OPTIMIZED_ true
#else
#define HEAPGATE_FP_OPTIMIZED_ false
#endif
#if defined(NDEBUG)
#define HEAPGATE_FP_ASSERTIONS_ false
#else
#define HEAPGATE_FP_ASSERTIONS_ true
#endif
#define HEAPGATE_BUILD_FACTS_                                                                   \
  ::heapgate::detail::BuildFacts {                                                              \
    HEAPGATE_FP_COMPILER_, HEAPGATE_FP_CXXLIB_, HEAPGATE_FP_OPTIMIZED_, HEAPGATE_FP_ASSERTIONS_ \
  }
