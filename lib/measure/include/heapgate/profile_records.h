// SPDX-License-Identifier: MIT
// Reading a heap profile one stack record at a time, for readers that keep
// less than a Profile. Implemented with read_profile() in
// lib/measure/src/profile.cpp.
#pragma once

#include <functional>
#include <string>

#include "heapgate/error.h"
#include "heapgate/profile.h"

namespace heapgate {

/// Reads the heap profile at `path` exactly as read_profile() does (same
/// checks, same errors, the file let go of as it is read), but hands each `@`
/// record to `visit` as soon as it is parsed instead of keeping it: the
/// Profile returned has everything but `stacks`, which is empty. `record` is
/// one buffer reused for every record: copy what must outlive the call.
///
/// For readers that keep less per record than StackRecord does (heapgate diff
/// keeps interned frame ids): memory then stays at a window of the file plus
/// what `visit` keeps, and no record costs an allocation. On an error,
/// `visit` has seen the records before the bad line. An exception thrown by
/// `visit` becomes an `internal` error. Not thread-safe in `visit` only.
Result<Profile> read_profile_records(const std::string& path,
                                     const std::function<void(const StackRecord& record)>& visit);

}  // namespace heapgate
