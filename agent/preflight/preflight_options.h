#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddprun::agent {

/// ddprun's exit status when this node failed its preflight and did not join: a
/// scheduler's epilog may take the node out of service on it.
constexpr int kPreflightExitCode = 122;

/// The built-in checks a node makes before it joins a round (--preflight). All but
/// kLink are on by default; kLink probes the links between the round's nodes once it
/// forms (elastic jobs, when the members change), on request.
enum class Check { kDisk, kShm, kOpenFiles, kMemory, kGpu, kClock, kLink };

/// What a node checks before it joins a round, and against what. Plain data, built by
/// the launcher from the command line.
struct PreflightOptions {
  std::vector<Check> checks{Check::kDisk,   Check::kShm, Check::kOpenFiles,
                            Check::kMemory, Check::kGpu, Check::kClock};
  /// Where the job writes (the log and tracking directories; made or not yet).
  std::vector<std::string> write_dirs;
  /// This node's workers, for what they need of /dev/shm.
  int local_workers = 1;
  /// The GPUs the workers may use, by the driver's index (CUDA_VISIBLE_DEVICES as a
  /// list of numbers); nullopt: every GPU the driver sees.
  std::optional<std::vector<int>> visible_gpus;
  /// --health_check: the site's own check, run by /bin/sh before the node's first
  /// round; "" for none. Its exit status is the verdict, its last lines the reason.
  std::string health_command;
  std::chrono::milliseconds health_timeout{std::chrono::seconds(60)};

  // What is enough: free space where the job writes, /dev/shm per worker (a DataLoader
  // worker passes its batches through it, NCCL its intra-node buffers; Docker's
  // default of 64 MiB fails them) up to a cap, the soft open-file limit, available
  // memory.
  static constexpr uint64_t kMinFreeDisk = uint64_t{1} << 30;
  static constexpr uint64_t kShmPerWorker = uint64_t{128} << 20;
  static constexpr uint64_t kShmCap = uint64_t{1} << 30;
  static constexpr uint64_t kMinOpenFiles = 1024;
  static constexpr uint64_t kMinAvailableMemory = uint64_t{1} << 30;
  // The wall clock's offset to the rendezvous host's: the run's timeline of every node's
  // records and logs is ordered by wall time. Beyond the warning it is said; beyond the
  // limit the node's time service is broken, and the node stays out.
  static constexpr std::chrono::milliseconds kClockWarning{500};
  static constexpr std::chrono::milliseconds kClockLimit{5000};
  // The link probe's bound per node, and how long a round's nodes wait for each
  // other's figures.
  static constexpr std::chrono::milliseconds kLinkBudget{600};
  static constexpr std::chrono::milliseconds kLinkGather{30'000};
};

/// The name of a check, as --preflight takes it.
constexpr const char* check_name(Check c) {
  switch (c) {
    case Check::kDisk: return "disk";
    case Check::kShm: return "shm";
    case Check::kOpenFiles: return "nofile";
    case Check::kMemory: return "memory";
    case Check::kGpu: return "gpu";
    case Check::kClock: return "clock";
    case Check::kLink: return "link";
  }
  return "?";
}

}  // namespace ddprun::agent
