#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ddprun::agent {

/// PyTorch's NCCL flight recorder (torch 2.3 and later): each worker keeps its last
/// collectives in a ring (TORCH_NCCL_TRACE_BUFFER_SIZE entries); one byte written to
/// its pipe (TORCH_NCCL_DEBUG_INFO_PIPE_FILE + global rank + ".pipe", a FIFO the
/// worker creates) makes it write them, pickled, to TORCH_NCCL_DEBUG_INFO_TEMP_FILE +
/// global rank, as it also does on NCCL's own timeout (TORCH_NCCL_DUMP_ON_TIMEOUT).

/// The largest dump read (PyTorch's, of 2000 entries with their stacks, is a few MiB).
constexpr int64_t kMaxFlightRecordBytes = int64_t{64} << 20;

/// Where one worker's flight recorder takes requests and writes its dump.
struct FlightRecorderFiles {
  std::string pipe;
  std::string dump;
};

/// Looks a variable up in the environment the worker inherits ("" when unset).
using InheritedVar = std::function<std::string(const char*)>;

/// Turns the flight recorder on for the worker of global rank `rank`, with its pipe
/// at `pipe_stem` + rank + ".pipe" and its dumps at `dump_stem` + rank, wherever the
/// user did not set its variables (theirs are kept, and read to find the worker's
/// files). Adds to `extra`.
FlightRecorderFiles add_flight_recorder_env(const std::string& pipe_stem,
                                            const std::string& dump_stem, int rank,
                                            std::map<std::string, std::string>& extra,
                                            const InheritedVar& inherited);

/// Asks the worker behind `pipe` for a dump: writes a byte if `pipe` is a FIFO that a
/// process reads (a live torch worker with a NCCL process group). Never blocks.
bool request_flight_record(const std::string& pipe);

/// One process group's place in a rank's collectives, from its dump.
struct NcclGroupState {
  std::string group;       // the process group's name ("0": the default group)
  int64_t entered = -1;    // the highest collective sequence number it called
  std::string op;          // that collective ("nccl:all_reduce")
  std::string state;       // and its state: scheduled, started or completed
  std::string sizes;       // its input sizes, "[[1024], [8]]"
  int64_t completed = -1;  // the highest one completed
};

/// A rank's flight record, reduced to what names a culprit: per process group, the
/// collectives it entered and completed (point-to-point operations left out).
struct FlightRecord {
  std::string version;  // of the dump format
  std::vector<NcclGroupState> groups;
};

/// Reads a dump (a pickle, or the JSON that newer PyTorch can write). Empty when the
/// bytes are not a whole dump (still being written, or not one at all).
std::optional<FlightRecord> read_flight_record(std::string_view bytes);

nlohmann::json to_json(const FlightRecord& r);
/// Missing or mistyped fields keep their defaults.
FlightRecord flight_record_from_json(const nlohmann::json& j);

/// What the ranks' flight records tell of a hang, judged by process group (each
/// group's members compared among themselves, the default group "0" first).
struct CollectiveVerdict {
  std::vector<int> culprits;  // ranks behind the others, or in another collective
  std::string why;            // how they were told apart
  std::string group;          // the process group that told them apart ("" if none)
  /// With culprits: "NCCL: at #41 nccl:all_reduce (completed), the others at #42
  /// nccl:all_reduce (started)".
  std::string note;
  /// Where each rank of that group (else of the default group) is, by place:
  /// "#42 nccl:all_reduce (started)" -> ranks.
  std::map<std::string, std::vector<int>> places;
};

/// Judges the flight records of every rank of the job, by global rank.
CollectiveVerdict judge_collectives(const std::map<int, FlightRecord>& records);

/// What a failed worker's dump says, when it left one (PyTorch writes it on NCCL's own
/// timeout): "NCCL flight recorder (<path>): process group 0 at #42 nccl:all_reduce
/// (started)". Empty without a readable dump.
std::string flight_record_note(const std::string& dump_path);

/// "#42 nccl:all_reduce (started)".
std::string describe_collective(const NcclGroupState& g);

}  // namespace ddprun::agent
