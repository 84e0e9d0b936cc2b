#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "tracking/run_store.h"

namespace ddprun::tracking {

/// CRC-32C (Castagnoli), as TFRecord framing uses it.
uint32_t crc32c(std::string_view bytes);

/// One TensorBoard event file: TFRecord framing (little-endian length, masked CRC-32C
/// of the length, the data, masked CRC-32C of the data) around `Event` protocol
/// buffers (wall_time = 1, step = 2, file_version = 3, summary = 5; Summary.value = 1;
/// Value.tag = 1, Value.simple_value = 2), the first being the file version. Encoded
/// here from those published field numbers. Throws TrackingError when it cannot write.
class TfEventsFile {
 public:
  TfEventsFile(const std::string& path, double wall_time);
  /// One scalar point under `tag`.
  void scalar(double wall_time, int64_t step, const std::string& tag, float value);
  /// Flushes and checks that every byte was written.
  void close();

 private:
  void record(const std::string& data);

  std::string path_;
  std::ofstream out_;
};

/// Writes a run as TensorBoard event files under `dir`: `rank<r>/attempt<a>/` per rank
/// and attempt (each metric a scalar under its key; the step as logged, else the
/// record's sequence number) and `system/node<n>/` (each system metric, step = sample
/// number). TensorBoard shows each directory as a run. Returns the files written.
std::vector<std::string> export_tfevents(RunStore& store, const std::string& dir);

}  // namespace ddprun::tracking
