// The workers' store of a job with a token admits only the job's nodes: PyTorch's
// clients from a member address or loopback are served; one from anywhere else is
// closed before a key is read or written. A static job's store, which agents and
// workers share, learns its members from the agents that prove the token.
#include <chrono>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "net/job_token.h"
#include "store/tcpstore/tcp_store_client.h"
#include "store/tcpstore/tcp_store_server.h"
#include "tests/store/raw_connection.h"

namespace ddprun::test {
namespace {

using store::TcpStoreClient;
using store::TcpStoreServer;

TEST(MemberAdmission, OnlyMembersAndLoopbackAreServed) {
  TcpStoreServer server{"", 0};  // every interface, as a multi-node job's
  server.admit_only({"127.0.0.2", "localhost"});
  TcpStoreClient owner("127.0.0.1", server.port());
  owner.set("nccl_id", "rank 0's");
  {
    // Not a member: closed at once, before the SET is read.
    RawConnection stranger = RawConnection::v2(server.port(), "127.0.0.3");
    stranger.send(Wire(Numbering::kV2, Op::kSet).str("nccl_id").str("forged").bytes);
    EXPECT_TRUE(stranger.closed_by_server());
  }
  EXPECT_EQ(owner.get_now(std::string("nccl_id")), "rank 0's") << "the stranger wrote nothing";
  // A member, by address: served.
  RawConnection member = RawConnection::v2(server.port(), "127.0.0.2");
  member.send(Wire(Numbering::kV2, Op::kGet).str("nccl_id").bytes);
  EXPECT_EQ(member.read_bytes(), "rank 0's");
}

TEST(MemberAdmission, WithoutAMemberListEveryoneIsServed) {
  TcpStoreServer server{"", 0};
  TcpStoreClient owner("127.0.0.1", server.port());
  owner.set("k", "v");
  RawConnection anyone = RawConnection::v2(server.port(), "127.0.0.3");
  anyone.send(Wire(Numbering::kV2, Op::kGet).str("k").bytes);
  EXPECT_EQ(anyone.read_bytes(), "v");
}

// An agent's side of the handshake over a raw connection (from any loopback address):
// hello, the challenge, the answer for `token`. True when the store said "ok".
bool prove(RawConnection& c, const std::string& token) {
  c.send(net::job_token::kHello);
  std::string prefix = net::job_token::kChallengePrefix;
  auto line = c.read(prefix.size() + 65);
  if (!line || line->rfind(prefix, 0) != 0) return false;
  std::string challenge = line->substr(prefix.size(), 64);
  c.send(net::job_token::proof(token, challenge) + "\n");
  return c.read(3) == std::optional<std::string>("ok\n");
}

// A static job's store: its agents prove the token, its workers (PyTorch's clients)
// cannot and are served from the address of a node that proved it, or this host.
TEST(SharedAdmission, WorkersAreServedFromTheAddressesOfNodesThatProvedTheToken) {
  TcpStoreServer server{"", 0, "s3cret", TcpStoreServer::Guests::kMembers};
  TcpStoreClient node0("127.0.0.1", server.port());  // node 0's own client, over loopback
  node0.set("nccl_id", "rank 0's");
  auto worker_reads = [&](const char* from) {
    RawConnection worker = RawConnection::v2(server.port(), from);
    worker.send(Wire(Numbering::kV2, Op::kGet).str("nccl_id").bytes);
    return worker.read_bytes();
  };
  EXPECT_EQ(worker_reads("127.0.0.2"), std::nullopt) << "no node proved the token from there";
  RawConnection node1(server.port(), "127.0.0.2");
  ASSERT_TRUE(prove(node1, "s3cret"));
  EXPECT_EQ(worker_reads("127.0.0.2"), "rank 0's") << "a worker of a node that proved it";
  RawConnection impostor(server.port(), "127.0.0.3");
  EXPECT_FALSE(prove(impostor, "a guess"));
  EXPECT_EQ(worker_reads("127.0.0.3"), std::nullopt) << "nor after a wrong token";
  {
    RawConnection forger = RawConnection::v2(server.port(), "127.0.0.4");
    forger.send(Wire(Numbering::kV2, Op::kSet).str("nccl_id").str("forged").bytes);
    EXPECT_TRUE(forger.closed_by_server());
  }
  EXPECT_EQ(node0.get_now(std::string("nccl_id")), "rank 0's") << "nobody else wrote";
  // ddprun's own client proves the token on every connection, from a member's address
  // too (its agent's second connection).
  TcpStoreClient::Options o;
  o.token = "s3cret";
  TcpStoreClient again("127.0.0.1", server.port(), o);
  EXPECT_EQ(again.get_now(std::string("nccl_id")), "rank 0's");
}

// PyTorch 1.13's clients open a second connection (for watched keys) that sends nothing
// and closes when the worker ends: from a member that is no refusal worth a warning.
TEST(SharedAdmission, AMembersIdleConnectionClosingIsNotReportedAsRefused) {
  std::ostringstream log;
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  {
    TcpStoreServer server{"", 0, "s3cret", TcpStoreServer::Guests::kMembers};
    TcpStoreClient node0("127.0.0.1", server.port());
    node0.set("k", "v");
    { RawConnection idle(server.port(), "127.0.0.1"); }
    { RawConnection stranger(server.port(), "127.0.0.3"); }
    auto logged = [&] {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (log.str().find("127.0.0.3") == std::string::npos &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      return log.str();
    };
    EXPECT_NE(logged().find("refused a connection from 127.0.0.3"), std::string::npos) << log.str();
    EXPECT_EQ(node0.get_now(std::string("k")), "v");  // the server is past both closes
    EXPECT_EQ(log.str().find("127.0.0.1"), std::string::npos) << log.str();
  }
  spdlog::set_default_logger(previous);
}

TEST(SharedAdmission, WithoutATokenEveryoneIsServed) {
  TcpStoreServer server{"", 0, "", TcpStoreServer::Guests::kMembers};
  TcpStoreClient owner("127.0.0.1", server.port());
  owner.set("k", "v");
  RawConnection anyone = RawConnection::v2(server.port(), "127.0.0.3");
  anyone.send(Wire(Numbering::kV2, Op::kGet).str("k").bytes);
  EXPECT_EQ(anyone.read_bytes(), "v");
}

// A node's workers' store is held from its join until its round is known: a worker of
// the new round, started by a faster member, waits in the queue while the store cuts
// the stale workers off and clears their keys, and is served after; none of its keys
// is lost to that reset.
TEST(HeldAdmission, ConnectionsMadeWhileHeldAreServedOnlyAfterTheReset) {
  TcpStoreServer server{"127.0.0.1", 0};
  TcpStoreClient stale("127.0.0.1", server.port());  // an earlier round's worker
  stale.set("init/", "old");
  server.hold_new_connections();
  RawConnection fresh = RawConnection::v2(server.port());  // the kernel's queue takes it
  fresh.send(Wire(Numbering::kV2, Op::kSet).str("init/").str("new").bytes);
  fresh.send(Wire(Numbering::kV2, Op::kGet).str("init/").bytes);
  EXPECT_TRUE(fresh.silent_for(200)) << "a held connection is not served";
  EXPECT_EQ(server.close_connections(), 1u) << "only the stale worker's is open";
  server.clear_except("ddprun/");
  server.serve_held();
  EXPECT_EQ(fresh.read_bytes(), "new") << "served after the reset, its SET kept";
  EXPECT_EQ(server.connection_count(), 1u);
  EXPECT_THROW(stale.get_now(std::string("init/")), Error) << "the stale worker is cut off";
}

// Clearing a new attempt's keys first closes its stopped workers' connections unread
// (what they sent last may not have been read yet); a live client stays.
TEST(HeldAdmission, ClearingClosesTheGoneClientsAndLeavesTheLiveOnesServed) {
  TcpStoreServer server{"127.0.0.1", 0};
  TcpStoreClient live("127.0.0.1", server.port());
  live.set("ddprun/agent", "1");
  {
    RawConnection stopped = RawConnection::v2(server.port());
    stopped.send(Wire(Numbering::kV2, Op::kSet).str("/leak").str("attempt 0").bytes);
  }
  server.clear_except("ddprun/");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // for a SET that was read
  EXPECT_FALSE(live.check({"/leak"}));
  EXPECT_TRUE(live.check({"ddprun/agent"})) << "the live client is served";
  EXPECT_EQ(server.connection_count(), 1u);
}

// A worker stopped as the node joined may have connected and written just before it
// died, with the store too busy to accept it then: its connection, held, is closed
// unread, and what it wrote is not in the new round.
TEST(HeldAdmission, AHeldConnectionWhoseClientIsGoneIsClosedUnread) {
  TcpStoreServer server{"127.0.0.1", 0};
  server.hold_new_connections();
  {
    RawConnection stopped = RawConnection::v2(server.port());
    stopped.send(Wire(Numbering::kV2, Op::kSet).str("/leak").str("attempt 0").bytes);
  }  // closed: the worker died
  server.clear_except("ddprun/");
  server.serve_held();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // for a SET that was read
  TcpStoreClient fresh("127.0.0.1", server.port());
  EXPECT_FALSE(fresh.check({"/leak"}));
  EXPECT_EQ(server.connection_count(), 1u) << "the fresh client's only";
}

}  // namespace
}  // namespace ddprun::test
