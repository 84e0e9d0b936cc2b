#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/hang/flight_recorder.h"

namespace ddprun::agent {

/// What one node saw of one of its ranks when the job hung: its progress, its state
/// in the OS and its stacks. Nodes exchange these (as JSON) so that every node
/// names the same culprit.
struct RankReport {
  int rank = 0;
  int local_rank = 0;
  int node = 0;
  std::string host;
  int pid = 0;
  std::optional<int64_t> step;  // the last step it logged
  double idle_s = 0;            // since its last progress
  std::string section;          // the section it was in, if any
  char state = '?';             // from /proc: R, S, D (uninterruptible), ...
  std::string wait_channel;     // where the kernel has it waiting (D state)
  double cpu_percent = -1;      // over the last look; negative: unknown
  std::string python_stack;     // faulthandler's dump, as captured
  std::string native_stack;     // eu-stack's or gdb's output
  std::string stack_note;       // why a stack is missing
  FlightRecord nccl;            // its NCCL flight recorder's dump (no groups: none)
  std::string nccl_dump;        // where that dump is
  // Derived from the stacks by describe_stacks():
  std::string where;           // "load_batch (train.py:42: time.sleep(3600))"
  std::string function;        // the innermost function of the main thread
  bool in_collective = false;  // waiting in torch.distributed, NCCL or gloo
};

nlohmann::json to_json(const RankReport& r);
/// Missing or mistyped fields keep their defaults.
RankReport rank_report_from_json(const nlohmann::json& j);

/// Sets where, function and in_collective from the stacks (reading the source lines
/// of Python frames, on the node that captured them).
void describe_stacks(RankReport& r);

/// Bytes of stacks each node shares with the judging node in a job of `nodes`: 256 KiB,
/// less where the judging node would read over 64 MiB of stacks in all, at least 4 KiB.
size_t shared_stack_bytes(int nodes);

/// What a node shares of its reports (`part`, JSON as captured): every rank's stacks
/// cut to `node_bytes` for all of them, each cut naming `full_at`, where all of it is.
std::string part_to_share(const std::string& part, size_t node_bytes, const std::string& full_at);
/// The same on reports as JSON (an array of to_json()s), in place.
void cut_stacks(nlohmann::json& ranks, size_t bytes, const std::string& full_at);

/// Who hung, judged from every rank's report.
struct HangDiagnosis {
  std::vector<int> culprits;  // global ranks; empty when no rank stands out
  std::string why;            // how they were told apart
  std::string headline;       // "rank 3 (local_rank 1) on node 1 (b) in load_batch (...)"
  std::string summary;        // lines for the console, each ending in '\n'
};

/// The culprits, in this order of evidence: ranks in uninterruptible sleep while
/// others are not; ranks behind the others in a process group's NCCL collectives, or
/// in a different collective at the same place (flight recorder); ranks outside a collective while
/// the others wait in one; ranks idle (under 5% of a core) while all the others are busy (over
/// 50%); the smaller group of ranks stopped in the same function; the ranks with the lowest step;
/// the ranks longest without progress.
HangDiagnosis diagnose(const std::vector<RankReport>& ranks);

/// The whole report: the trigger, the diagnosis and every rank's stacks.
std::string format_hang_report(const std::string& trigger, const std::vector<RankReport>& ranks,
                               const HangDiagnosis& diagnosis);

}  // namespace ddprun::agent
