#pragma once

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ddprun::agent {

/// Which of a worker's standard streams a setting applies to (torchrun's `Std`).
enum class Std { kNone = 0, kOut = 1, kErr = 2, kAll = 3 };

inline bool includes_stdout(Std s) { return s == Std::kOut || s == Std::kAll; }
inline bool includes_stderr(Std s) { return s == Std::kErr || s == Std::kAll; }

/// A `--redirects`/`--tee` value: one setting for every local rank, or per rank.
struct StdSpec {
  Std all = Std::kNone;
  std::map<int, Std> per_rank;  // when non-empty, ranks not listed get kNone

  Std for_rank(int local_rank) const {
    if (per_rank.empty()) return all;
    auto it = per_rank.find(local_rank);
    return it == per_rank.end() ? Std::kNone : it->second;
  }
  /// Whether no rank gets anything.
  bool none() const {
    if (per_rank.empty()) return all == Std::kNone;
    return std::all_of(per_rank.begin(), per_rank.end(),
                       [](const auto& r) { return r.second == Std::kNone; });
  }
};

/// How to run this node's workers: what to execute and how to treat their output.
/// Plain data, copied freely.
struct WorkerSpec {
  std::string role = "default";
  int local_world_size = 1;
  /// Program and arguments; "${local_rank}" in any argument is replaced per worker.
  std::vector<std::string> argv;
  /// The script or program as the user named it, for the failure summary's title.
  std::string entrypoint_name;
  int max_restarts = 0;
  StdSpec redirects;
  StdSpec tee;
  /// Local ranks whose output reaches the console; empty means all.
  std::set<int> local_ranks_filter;
  /// Console line prefix, with ${role_name} ${local_rank} ${rank} ${node_rank} ${host}.
  std::string log_line_prefix_template = "[${role_name}${local_rank}]:";
  /// Prefix every console line, not only tee'd ones (set when a template was given).
  bool prefix_all_output = false;
  /// --duplicate_stdout_filters / --duplicate_stderr_filters: lines that contain any of
  /// these are also written to filtered_stdout.log / filtered_stderr.log of the attempt.
  std::vector<std::string> duplicate_stdout_filters;
  std::vector<std::string> duplicate_stderr_filters;
  /// --virtual_local_rank: LOCAL_RANK=0, and each local rank's CUDA_VISIBLE_DEVICES is
  /// its entry of virtual_devices.
  bool virtual_local_rank = false;
  std::vector<std::string> virtual_devices;
};

}  // namespace ddprun::agent
