// SPDX-License-Identifier: MIT
// Which frames of a stack decide its call site, whatever the framework: the
// engine copies only those of each stack when it gathers a test's call sites.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "heapgate/frame_name.h"

namespace heapgate::harness {

/// "Fixture<int>::Fixture()": a default constructor (template arguments in
/// either part are ignored). A fixture built for a test is the framework's
/// doing, not the test's own call site.
bool is_default_constructor(const std::string& name);

/// How many of `frames` (innermost first) call_sites_of() and a face's
/// Face::is_framework_stack() read: through the first frame of the program's
/// own that is not a default constructor (both have decided there), or all
/// of them.
std::size_t frames_deciding_call_site(const std::vector<FrameName>& frames);

}  // namespace heapgate::harness
