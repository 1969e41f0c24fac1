// SPDX-License-Identifier: MIT
#include "wordcount.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace wordcount {

// The consumer-ci-templates test plants an allocation regression by setting
// this to true: the vector then grows by reallocation instead of once.
constexpr bool kSkipReserve = false;

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  if (!kSkipReserve) words.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), ' ')) + 1);
  std::string::size_type begin = 0;
  while (begin <= text.size()) {
    std::string::size_type end = text.find(' ', begin);
    if (end == std::string::npos) end = text.size();
    if (end > begin) words.emplace_back(text, begin, end - begin);
    begin = end + 1;
  }
  return words;
}

std::map<std::string, int> count_words(const std::string& text) {
  std::map<std::string, int> counts;
  for (const std::string& word : split_words(text)) ++counts[word];
  return counts;
}

std::map<std::string, int> count_words_parallel(const std::vector<std::string>& lines, int threads) {
  std::atomic<std::size_t> next{0};
  std::vector<std::map<std::string, int>> partial(static_cast<std::size_t>(threads));
  std::vector<std::thread> workers;
  workers.reserve(partial.size());
  for (auto& mine : partial) {
    workers.emplace_back([&lines, &next, &mine] {
      for (std::size_t i = next++; i < lines.size(); i = next++) {
        for (const std::string& word : split_words(lines[i])) ++mine[word];
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  std::map<std::string, int> counts;
  for (const auto& mine : partial) {
    for (const auto& [word, n] : mine) counts[word] += n;
  }
  return counts;
}

}  // namespace wordcount
