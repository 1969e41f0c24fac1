// SPDX-License-Identifier: MIT
// heapgate::pprof built without protobuf (HEAPGATE_PPROF=OFF): every export
// says so and how to get it, so callers need no #if of their own.
#include "heapgate/pprof.h"

namespace heapgate {
namespace {

Error unavailable() {
  return make_error(ErrorCode::unavailable, "pprof export",
                    "this heapgate was built without pprof support (HEAPGATE_PPROF=OFF)",
                    "apt-get install libprotobuf-dev protobuf-compiler zlib1g-dev, then reconfigure with "
                    "-DHEAPGATE_PPROF=ON");
}

}  // namespace

bool pprof_supported() noexcept { return false; }

Result<std::string> to_pprof(const Profile&, Symbolizer&, const PprofOptions&) { return fail(unavailable()); }

Result<std::string> to_pprof(const ProfileDiff&, const std::string&) { return fail(unavailable()); }

}  // namespace heapgate
