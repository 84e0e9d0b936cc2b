#pragma once
// What the tracking tests share: scratch run directories, a tracker's options, appending
// to a stream.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/helpers/scratch.h"
#include "tracking/run_tracker.h"

namespace ddprun::tracking::tracking_test {

inline std::string temp_run_dir() {
  std::string dir = test::scratch_dir("ddprun_run_");
  std::filesystem::create_directories(dir + "/streams");
  return dir;
}

// A tracker's options for run `id` under `base`, with no system sample due while a
// test runs.
inline RunTracker::Options run_in(const std::string& base, const std::string& id) {
  RunTracker::Options o;
  o.tracking_dir = base;
  o.run_id = id;
  o.system_interval = std::chrono::hours(1);
  return o;
}

inline void append(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::app | std::ios::binary) << text;
}

}  // namespace ddprun::tracking::tracking_test
