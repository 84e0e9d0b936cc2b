// The workers' store of a job with a token admits only the job's nodes: PyTorch's
// clients from a member address or loopback are served; one from anywhere else is
// closed before a key is read or written.
#include <gtest/gtest.h>

#include "rendezvous/tcp_store_client.h"
#include "rendezvous/tcp_store_server.h"
#include "tests/store/raw_connection.h"

namespace ddprun::test {
namespace {

using rendezvous::TcpStoreClient;
using rendezvous::TcpStoreServer;

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

}  // namespace
}  // namespace ddprun::test
