// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// jemalloc's profiling (prof.active, prof.reset, the samples) is process-wide,
// so exactly one user may drive it at a time: an exact/sampled ProfileScope or
// a profiling run started over HTTP (http.h). Both claim it here.
#pragma once

namespace heapgate::detail {

/// Claims process-wide profiling; false if another scope or run holds it.
bool try_own_profiling() noexcept;
/// Gives the claim back. Only the holder calls this.
void release_profiling() noexcept;

}  // namespace heapgate::detail
