#include "agent/hang/flight_recorder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace ddprun::agent {
namespace {

namespace fs = std::filesystem;

std::string data_file(const std::string& name) {
  std::ifstream in(std::string(DDPRUN_SOURCE_DIR) + "/tests/data/" + name, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

NcclGroupState at(const std::string& group, int64_t entered, const std::string& op,
                  const std::string& state = "started", const std::string& sizes = "[[1024]]") {
  return {group, entered, op, state, sizes, state == "completed" ? entered : entered - 1};
}

FlightRecord record(std::vector<NcclGroupState> groups) { return {"2.3", std::move(groups)}; }

TEST(FlightRecorder, ADumpTellsEachGroupsLastCollectiveWithoutPointToPoint) {
  auto r = read_flight_record(data_file("flight_record_protocol2.pickle"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->version, "2.3");
  ASSERT_EQ(r->groups.size(), 2u);
  const NcclGroupState& g = r->groups[0];
  EXPECT_EQ(g.group, "0");
  EXPECT_EQ(g.entered, 42);  // the send after it is point-to-point
  EXPECT_EQ(g.op, "nccl:all_reduce");
  EXPECT_EQ(g.state, "started");
  EXPECT_EQ(g.sizes, "[[1024]]");
  EXPECT_EQ(g.completed, 41);
  EXPECT_EQ(describe_collective(g), "#42 nccl:all_reduce (started)");
  EXPECT_EQ(r->groups[1].group, "1");
  EXPECT_EQ(describe_collective(r->groups[1]), "#7 nccl:all_gather (completed)");
}

// What TorchScript's pickler writes: every list and dict tagged with its type.
TEST(FlightRecorder, ATypeTaggedDumpReadsAlike) {
  auto r = read_flight_record(data_file("flight_record_tagged.pickle"));
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->groups.size(), 2u);
  EXPECT_EQ(describe_collective(r->groups[0]), "#42 nccl:all_reduce (started)");
  EXPECT_EQ(r->groups[0].sizes, "[[1024]]");
}

TEST(FlightRecorder, TheJsonDumpReadsAlikeAndPartialDumpsNotAtAll) {
  auto r = read_flight_record(
      R"({"version": "2.4", "entries": [{"pg_id": 0, "process_group": ["0", "default_pg"],
          "collective_seq_id": 3, "profiling_name": "nccl:broadcast", "state": "scheduled",
          "input_sizes": [[2, 2]], "is_p2p": false}]})");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(describe_collective(r->groups.at(0)), "#3 nccl:broadcast (scheduled)");
  std::string whole = data_file("flight_record_protocol5.pickle");
  EXPECT_FALSE(read_flight_record(whole.substr(0, whole.size() / 2)).has_value());
  EXPECT_FALSE(read_flight_record(R"({"version": "2.4", "entries": [)").has_value());
  EXPECT_FALSE(read_flight_record(R"({"no": "entries"})").has_value());
  EXPECT_FALSE(read_flight_record("").has_value());
  std::string deep = R"({"version": "2.4", "entries": [{"input_sizes": )";
  deep += std::string(100'000, '[') + std::string(100'000, ']') + "}]}";
  EXPECT_FALSE(read_flight_record(deep).has_value()) << "too deep to walk";
}

TEST(FlightRecorder, SharedAsJsonItReadsBackTheSame) {
  FlightRecord r = record({at("0", 42, "nccl:all_reduce"), at("1", 7, "nccl:all_gather")});
  FlightRecord back = flight_record_from_json(nlohmann::json::parse(to_json(r).dump()));
  ASSERT_EQ(back.groups.size(), 2u);
  EXPECT_EQ(back.version, "2.3");
  EXPECT_EQ(describe_collective(back.groups[1]), "#7 nccl:all_gather (started)");
  EXPECT_EQ(back.groups[1].completed, 6);
  EXPECT_TRUE(flight_record_from_json(nlohmann::json("garbage")).groups.empty());
}

TEST(FlightRecorder, TheRankThatNeverEnteredTheCollectiveIsTheCulprit) {
  std::map<int, FlightRecord> records;
  for (int rank : {0, 1, 3}) records[rank] = record({at("0", 42, "nccl:all_reduce")});
  records[2] = record({at("0", 41, "nccl:all_reduce", "completed")});
  CollectiveVerdict v = judge_collectives(records);
  EXPECT_EQ(v.culprits, std::vector<int>{2});
  EXPECT_EQ(v.group, "0");
  EXPECT_NE(v.why.find("behind the others in NCCL collectives"), std::string::npos) << v.why;
  EXPECT_EQ(v.places["#42 nccl:all_reduce (started)"], (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(v.places["#41 nccl:all_reduce (completed)"], std::vector<int>{2});
  EXPECT_EQ(
      v.note,
      "NCCL: at #41 nccl:all_reduce (completed), the others at #42 nccl:all_reduce (started)");
}

TEST(FlightRecorder, ARankInAnotherCollectiveAtTheSamePlaceIsTheCulprit) {
  std::map<int, FlightRecord> records;
  for (int rank : {0, 1, 2}) records[rank] = record({at("0", 9, "nccl:all_reduce")});
  records[3] = record({at("0", 9, "nccl:all_reduce", "started", "[[512]]")});
  CollectiveVerdict v = judge_collectives(records);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_NE(v.why.find("in another NCCL collective"), std::string::npos) << v.why;
}

TEST(FlightRecorder, RanksAllInTheSameCollectiveNameNobodyButSayWhereTheyAre) {
  std::map<int, FlightRecord> records;
  for (int rank : {0, 1}) records[rank] = record({at("0", 5, "nccl:all_reduce")});
  CollectiveVerdict v = judge_collectives(records);
  EXPECT_TRUE(v.culprits.empty());
  EXPECT_EQ(v.places["#5 nccl:all_reduce (started)"], (std::vector<int>{0, 1}));
}

// A subgroup's members are compared among themselves: ranks outside it are not behind.
TEST(FlightRecorder, ASubgroupIsJudgedAmongItsMembers) {
  std::map<int, FlightRecord> records;
  for (int rank : {0, 1, 2, 3}) {
    std::vector<NcclGroupState> groups{at("0", 10, "nccl:all_reduce")};
    if (rank >= 2) groups.push_back(at("1", rank == 3 ? 4 : 5, "nccl:all_gather"));
    records[rank] = record(groups);
  }
  CollectiveVerdict v = judge_collectives(records);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_EQ(v.group, "1");
}

TEST(FlightRecorder, TurnedOnWhereTheUserDidNotAndTheirFilesAreRespected) {
  std::map<std::string, std::string> env;
  auto none = [](const char*) { return std::string(); };
  FlightRecorderFiles files =
      add_flight_recorder_env("/logs/0/nccl_trace_rank_", "/run/files/attempt_0_", 5, env, none);
  EXPECT_EQ(env["TORCH_NCCL_TRACE_BUFFER_SIZE"], "2000");
  EXPECT_EQ(env["TORCH_NCCL_DUMP_ON_TIMEOUT"], "1");
  EXPECT_EQ(env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"], "/run/files/attempt_0_");
  EXPECT_EQ(env["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"], "/logs/0/nccl_trace_rank_");
  EXPECT_EQ(files.dump, "/run/files/attempt_0_5");
  EXPECT_EQ(files.pipe, "/logs/0/nccl_trace_rank_5.pipe");

  std::map<std::string, std::string> user_env;
  auto users = [](const char* name) {
    std::string n = name;
    if (n == "TORCH_FR_BUFFER_SIZE") return std::string("100");
    if (n == "TORCH_FR_DUMP_TEMP_FILE") return std::string("/scratch/fr_");
    if (n == "TORCH_NCCL_DEBUG_INFO_PIPE_FILE") return std::string("/scratch/pipe_");
    return std::string();
  };
  files = add_flight_recorder_env("/logs/0/p_", "/run/d_", 5, user_env, users);
  EXPECT_EQ(user_env.count("TORCH_NCCL_TRACE_BUFFER_SIZE"), 0u);
  EXPECT_EQ(user_env.count("TORCH_NCCL_DEBUG_INFO_TEMP_FILE"), 0u);
  EXPECT_EQ(user_env.count("TORCH_NCCL_DEBUG_INFO_PIPE_FILE"), 0u);
  EXPECT_EQ(files.dump, "/scratch/fr_5");
  EXPECT_EQ(files.pipe, "/scratch/pipe_5.pipe");
}

TEST(FlightRecorder, ARequestIsOneByteToAPipeSomebodyReads) {
  fs::path dir = fs::temp_directory_path() / ("ddprun_fr_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string pipe = (dir / "nccl_trace_rank_0.pipe").string();
  EXPECT_FALSE(request_flight_record(pipe));  // no such file
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0666), 0);
  EXPECT_FALSE(request_flight_record(pipe));  // nobody reads it: no torch worker there
  int reader = ::open(pipe.c_str(), O_RDONLY | O_NONBLOCK);  // as PyTorch opens it
  ASSERT_GE(reader, 0);
  EXPECT_TRUE(request_flight_record(pipe));
  char buf[8];
  EXPECT_EQ(::read(reader, buf, sizeof(buf)), 1);
  ::close(reader);
  std::ofstream(dir / "plain") << "x";
  EXPECT_FALSE(request_flight_record((dir / "plain").string()));  // not a FIFO
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ddprun::agent
