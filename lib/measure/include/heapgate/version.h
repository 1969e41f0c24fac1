// SPDX-License-Identifier: MIT
// heapgate's version number: HEAPGATE_VERSION_MAJOR/MINOR/PATCH (CMake reads them from here) and
// HEAPGATE_VERSION_STRING.
#pragma once

/// The one place the version lives; CMake parses these three lines.
#define HEAPGATE_VERSION_MAJOR 0
#define HEAPGATE_VERSION_MINOR 1
#define HEAPGATE_VERSION_PATCH 0

#define HEAPGATE_VERSION_STRING_(a, b, c) #a "." #b "." #c
#define HEAPGATE_VERSION_STRING_X_(a, b, c) HEAPGATE_VERSION_STRING_(a, b, c)
/// "major.minor.patch", e.g. "0.1.0".
#define HEAPGATE_VERSION_STRING \
  HEAPGATE_VERSION_STRING_X_(HEAPGATE_VERSION_MAJOR, HEAPGATE_VERSION_MINOR, HEAPGATE_VERSION_PATCH)
