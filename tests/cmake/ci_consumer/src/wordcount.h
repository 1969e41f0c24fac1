// SPDX-License-Identifier: MIT
// The library the CI-templates consumer gates: words of a text, and how often each occurs.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace wordcount {

/// The space-separated words of `text`, in order; empty words are dropped.
std::vector<std::string> split_words(const std::string& text);

/// How often each word of `text` occurs.
std::map<std::string, int> count_words(const std::string& text);

/// The same, counted by `threads` workers that take lines of `text` from a
/// shared queue, each into a map of its own, merged at the end: which worker
/// counts which line, and so how many map nodes are made, depends on timing.
std::map<std::string, int> count_words_parallel(const std::vector<std::string>& lines, int threads);

}  // namespace wordcount
