// SPDX-License-Identifier: MIT
// The script every test page of the history embeds (trend_script.cpp).
#pragma once

namespace heapgate::detail {

/// Draws a test page's charts from the page's data and the runs in commits.js.
extern const char* const kTrendScript;

}  // namespace heapgate::detail
