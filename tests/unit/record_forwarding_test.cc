// Forwarding a node's records to the primary: exactly once, whole lines only, resends
// harmless, bad frames closing only their own connection.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "net/socket.h"
#include "tests/helpers/free_port.h"
#include "tests/helpers/scratch.h"
#include "tracking/record_forwarder.h"
#include "tracking/record_link.h"
#include "tracking/record_receiver.h"
#include "tracking/run_store.h"
#include "tracking/stream_ingester.h"

namespace ddprun::tracking {
namespace {

std::string temp_dir() {
  std::string dir = test::scratch_dir("ddprun_forward_");
  std::filesystem::create_directories(dir + "/run/streams");
  std::filesystem::create_directories(dir + "/part/streams");
  return dir;
}

void append(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::app | std::ios::binary) << text;
}

std::string log_line(int seq) {
  return R"({"k":"log","seq":)" + std::to_string(seq) + R"(,"t":1.0,"d":{"v":)" +
         std::to_string(seq) + "}}\n";
}

TEST(RecordForwarding, EveryCompleteLineArrivesOnceAndResendsAreHarmless) {
  std::string dir = temp_dir();
  RunStore store(dir + "/run", RunStore::Open::kCreate);
  RecordReceiver receiver(dir + "/run");
  std::string stream = stream_path(dir + "/part", 1, 3, 0);
  append(stream, log_line(1) + log_line(2) + R"({"k":"log","seq":3,)");
  append(dir + "/part/" + kAgentStream,
         R"({"k":"event","t":2.0,"kind":"worker_exited","node":1,"rank":3,"attempt":0,"d":{}})"
         "\n");

  RecordForwarder forwarder(dir + "/part", "hostb.42");
  forwarder.set_endpoint("127.0.0.1", receiver.port());
  forwarder.pass(false);
  EXPECT_EQ(store.metric_count(), 2) << "the unterminated line waits";
  EXPECT_TRUE(forwarder.all_sent());

  append(stream, R"("t":1.0,"d":{"v":3}})"
                 "\n"
                 R"({"k":"log","seq":4)");
  IngestStats last = forwarder.pass(true);
  EXPECT_EQ(store.metric_count(), 3);
  EXPECT_EQ(last.torn_records, 1) << "the writer is gone: its last line is torn";
  EXPECT_TRUE(forwarder.bye());
  receiver.wait_for_agents(std::chrono::seconds(5));

  // A forwarder that knows nothing (a restarted one, or a merge) sends it all again.
  RecordForwarder again(dir + "/part", "hostb.42");
  again.set_endpoint("127.0.0.1", receiver.port());
  again.pass(true);
  EXPECT_EQ(store.metric_count(), 3) << "nothing stored twice";
  auto points = store.metrics();
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[2].node, 1);
  EXPECT_EQ(points[2].rank, 3);
  EXPECT_EQ(points[2].seq, 3);
  bool event_found = false;
  for (const auto& e : store.events()) event_found |= e.kind == "worker_exited" && e.rank == 3;
  EXPECT_TRUE(event_found) << "the agent's own events are forwarded too";

  // Merging the local copy afterwards adds nothing either.
  StreamIngester merge(store, dir + "/part", "hostb.42/");
  merge.drain(true);
  EXPECT_EQ(store.metric_count(), 3);
}

TEST(RecordForwarding, WithAJobTokenOnlyAgentsThatProveItAreHeard) {
  std::string dir = temp_dir();
  RunStore store(dir + "/run", RunStore::Open::kCreate);
  RecordReceiver receiver(dir + "/run", "job secret");
  append(stream_path(dir + "/part", 1, 3, 0), log_line(1) + log_line(2));

  RecordForwarder stranger(dir + "/part", "intruder.1", "a guess");
  stranger.set_endpoint("127.0.0.1", receiver.port());
  stranger.pass(true);
  RecordForwarder tokenless(dir + "/part", "intruder.2");
  tokenless.set_endpoint("127.0.0.1", receiver.port());
  tokenless.pass(true);
  EXPECT_EQ(store.metric_count(), 0) << "nothing from who cannot prove the token";
  EXPECT_FALSE(stranger.all_sent());

  RecordForwarder member(dir + "/part", "hostb.42", "job secret");
  member.set_endpoint("127.0.0.1", receiver.port());
  member.pass(true);
  EXPECT_EQ(store.metric_count(), 2);
  EXPECT_TRUE(member.all_sent());
}

TEST(RecordForwarding, UnreachablePrimaryLeavesEverythingForMerge) {
  std::string dir = temp_dir();
  RunStore store(dir + "/run", RunStore::Open::kCreate);
  append(stream_path(dir + "/part", 0, 0, 0), log_line(1) + log_line(2));
  RecordForwarder forwarder(dir + "/part", "hosta.1");
  int port = 0;
  {
    RecordReceiver gone(dir + "/run");
    port = gone.port();
  }
  forwarder.set_endpoint("127.0.0.1", port);
  forwarder.pass(true);
  EXPECT_FALSE(forwarder.all_sent());
  EXPECT_FALSE(forwarder.bye());
  StreamIngester merge(store, dir + "/part", "hosta.1/");
  EXPECT_EQ(merge.drain(true).points, 2);
  EXPECT_EQ(merge.drain(true).points, 0);
}

// One record in a node's part and its forwarder, aimed at a primary that accepts
// connections (into its backlog) and answers nothing unless the test does.
class SilentPrimaryTest : public ::testing::Test {
 protected:
  SilentPrimaryTest() {
    append(stream_path(dir_ + "/part", 0, 0, 0), line_);
    forwarder_.set_endpoint("127.0.0.1", port_);
  }
  ~SilentPrimaryTest() override {
    if (mid_job_.joinable()) mid_job_.join();
    if (conn_ >= 0) ::close(conn_);
    if (listener_ >= 0) ::close(listener_);
  }

  // Starts a pass mid-job on a thread of its own and returns once the primary has read
  // its whole request (4-byte length, then the frame): the pass now awaits the reply.
  bool pass_awaits_the_reply() {
    mid_job_ = std::thread([this] { forwarder_.pass(false); });
    conn_ = ::accept(listener_, nullptr, nullptr);
    if (conn_ < 0) return false;
    unsigned char len[4];
    if (::recv(conn_, len, 4, MSG_WAITALL) != 4) return false;
    std::string frame(read_frame_length(len), '\0');
    return ::recv(conn_, frame.data(), frame.size(), MSG_WAITALL) ==
           static_cast<ssize_t>(frame.size());
  }

  std::string dir_ = temp_dir();
  std::string line_ = log_line(1);
  int port_ = 0;
  int listener_ = ddprun::test::listen_on_loopback(port_);
  RecordForwarder forwarder_{dir_ + "/part", "hosta.1"};
  std::thread mid_job_;
  int conn_ = -1;
};

// A primary cut off mid-job (its link down, frozen) takes the records and never answers:
// the exiting agent's last pass and goodbye give up after seconds, not the half minute
// a pass mid-job waits, and the records stay for a merge.
TEST_F(SilentPrimaryTest, TheLastPassIsHeldForSecondsOnly) {
  ASSERT_GE(listener_, 0);
  auto start = std::chrono::steady_clock::now();
  forwarder_.pass(true);  // connected (the backlog accepts), sent, no answer
  EXPECT_FALSE(forwarder_.bye());
  // A bound only the mid-job reply timeout (30 s) can pass; the last one is 5 s.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_FALSE(forwarder_.all_sent());
}

// An agent's attempt ends while a pass mid-job already awaits a primary that went
// silent: asking for the final pass cuts that wait to the final pass's seconds, where
// the pass would otherwise wait out its half minute before the final one could start.
TEST_F(SilentPrimaryTest, AFinalPassCutsShortAPassAlreadyWaiting) {
  ASSERT_GE(listener_, 0);
  ASSERT_TRUE(pass_awaits_the_reply());
  auto asked = std::chrono::steady_clock::now();
  forwarder_.hurry();
  mid_job_.join();
  // A bound only the mid-job reply timeout (30 s) can pass; a hurried one is 5 s.
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(20));
  EXPECT_FALSE(forwarder_.all_sent());
}

// Hurrying only shortens the wait: a primary that answers within it is heard, and the
// pass's records count as sent.
TEST_F(SilentPrimaryTest, AHurriedPassStillTakesThePrimarysAnswer) {
  ASSERT_GE(listener_, 0);
  ASSERT_TRUE(pass_awaits_the_reply());
  forwarder_.hurry();
  std::string reply = R"({"offset":)" + std::to_string(line_.size()) + "}";
  std::string frame = frame_length(reply.size()) + reply;
  ASSERT_EQ(::send(conn_, frame.data(), frame.size(), 0), static_cast<ssize_t>(frame.size()));
  mid_job_.join();
  EXPECT_TRUE(forwarder_.all_sent());
}

TEST(RecordForwarding, BadFramesCloseOnlyTheirConnection) {
  std::string dir = temp_dir();
  RunStore store(dir + "/run", RunStore::Open::kCreate);
  RecordReceiver receiver(dir + "/run");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (std::string payload :
       {std::string("no header line"), std::string("{\"agent\":\"../x\"}\n"),
        std::string("{\"agent\":\"a\",\"stream\":\"../../etc\",\"offset\":0}\n"),
        std::string("[1,2]\n"),
        std::string("{\"agent\":\"a\",\"stream\":\"n0.r0.a0.jsonl\","
                    "\"offset\":18446744073709551615}\n")}) {
    auto bad = net::Socket::connect("127.0.0.1", receiver.port(), deadline);
    std::string frame = frame_length(payload.size()) + payload;
    bad.send_all(frame.data(), frame.size(), deadline);
    char c;
    EXPECT_ANY_THROW(bad.recv_exact(&c, 1, deadline)) << payload;
  }
  auto huge = net::Socket::connect("127.0.0.1", receiver.port(), deadline);
  std::string frame = frame_length(kMaxFrame + 1);
  huge.send_all(frame.data(), frame.size(), deadline);
  char c;
  EXPECT_ANY_THROW(huge.recv_exact(&c, 1, deadline));

  append(stream_path(dir + "/part", 0, 0, 0), log_line(1));
  RecordForwarder good(dir + "/part", "hosta.1");
  good.set_endpoint("127.0.0.1", receiver.port());
  good.pass(true);
  EXPECT_EQ(store.metric_count(), 1);
}

TEST(RecordForwarding, ABacklogLargerThanAChunkArrivesWhole) {
  std::string dir = temp_dir();
  RunStore store(dir + "/run", RunStore::Open::kCreate);
  RecordReceiver receiver(dir + "/run");
  std::string lines;
  constexpr int kLines = 120'000;  // ~7 MiB: more than one 4 MiB chunk
  for (int i = 1; i <= kLines; ++i) lines += log_line(i);
  ASSERT_GT(lines.size(), kChunk);
  append(stream_path(dir + "/part", 0, 0, 0), lines);
  RecordForwarder forwarder(dir + "/part", "hosta.1");
  forwarder.set_endpoint("127.0.0.1", receiver.port());
  forwarder.pass(true);
  EXPECT_TRUE(forwarder.all_sent());
  EXPECT_EQ(store.metric_count(), kLines);
}

}  // namespace
}  // namespace ddprun::tracking
