#pragma once

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace ddprun::test {

// This process's threads, as /proc/self/task lists them: all of them, or those a name
// was given (the name a thread gives itself, up to 15 characters).
inline int thread_count(const std::string& named = "") {
  int n = 0;
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
    if (named.empty()) {
      ++n;
      continue;
    }
    std::string comm;
    std::getline(std::ifstream(t.path() / "comm"), comm);
    n += comm == named;
  }
  return n;
}

// Waits (10 s at most) until the process has `n` such threads; returns how many it has.
inline int await_thread_count(int n, const std::string& named = "") {
  for (int i = 0; i < 10000 && thread_count(named) != n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return thread_count(named);
}

}  // namespace ddprun::test
