// Byte-level conformance of ddprun's TCPStore server with PyTorch's protocol, in
// the 1.13 and the 2.x numbering (TCPSTORE_PROTOCOL.md).
#include <vector>

#include <gtest/gtest.h>

#include "store/tcpstore/tcp_store_server.h"
#include "tests/store/raw_connection.h"

namespace ddprun::test {
namespace {

using store::TcpStoreServer;
namespace ts = store::tcpstore;

class Conformance : public ::testing::TestWithParam<Numbering> {
 protected:
  TcpStoreServer server{"127.0.0.1", 0};
  Numbering n = GetParam();

  RawConnection connect() {
    return n == Numbering::kV2 ? RawConnection::v2(server.port()) : RawConnection(server.port());
  }
  Wire req(Op op) { return Wire(n, op); }
};

TEST_P(Conformance, SetThenGet) {
  auto c = connect();
  c.send(req(Op::kSet).str("k").str(std::string("v\0x", 3)).bytes);
  c.send(req(Op::kGet).str("k").bytes);
  EXPECT_EQ(c.read_bytes(), std::string("v\0x", 3));
}

TEST_P(Conformance, GetOfAMissingKeyIsEmpty) {
  auto c = connect();
  c.send(req(Op::kGet).str("nothing").bytes);
  EXPECT_EQ(c.read(8), std::string(8, '\0'));
}

TEST_P(Conformance, AddIsDecimalText) {
  auto c = connect();
  c.send(req(Op::kAdd).str("n").put<int64_t>(3).bytes);
  EXPECT_EQ(c.read_scalar<int64_t>(), 3);
  c.send(req(Op::kAdd).str("n").put<int64_t>(-5).bytes);
  EXPECT_EQ(c.read_scalar<int64_t>(), -2);
  c.send(req(Op::kGet).str("n").bytes);
  EXPECT_EQ(c.read_bytes(), "-2");
}

TEST_P(Conformance, AddToANonNumberClosesOnlyThatConnection) {
  auto c = connect();
  auto other = connect();
  c.send(req(Op::kSet).str("text").str("abc").bytes);
  c.send(req(Op::kAdd).str("text").put<int64_t>(1).bytes);
  EXPECT_TRUE(c.closed_by_server());
  other.send(req(Op::kGet).str("text").bytes);
  EXPECT_EQ(other.read_bytes(), "abc");
}

TEST_P(Conformance, CompareSetCases) {
  auto c = connect();
  auto cas = [&](const std::string& key, const std::string& expected, const std::string& desired) {
    c.send(req(Op::kCompareSet).str(key).str(expected).str(desired).bytes);
    return c.read_bytes();
  };
  // Missing key, empty expected: stored, reply desired.
  EXPECT_EQ(cas("a", "", "one"), "one");
  // Missing key, non-empty expected: nothing stored, reply expected.
  EXPECT_EQ(cas("b", "x", "two"), "x");
  c.send(req(Op::kCheck).keys({"b"}).bytes);
  EXPECT_EQ(c.read_scalar<uint8_t>(), ts::kCheckNotReady);
  // Equal: replaced, reply new value.
  EXPECT_EQ(cas("a", "one", "three"), "three");
  // Different: unchanged, reply current value.
  EXPECT_EQ(cas("a", "one", "four"), "three");
}

TEST_P(Conformance, CheckAndNumKeysAndDelete) {
  auto c = connect();
  c.send(req(Op::kCheck).keys({}).bytes);
  EXPECT_EQ(c.read_scalar<uint8_t>(), ts::kCheckReady);
  c.send(req(Op::kSet).str("x").str("1").bytes);
  c.send(req(Op::kSet).str("y").str("2").bytes);
  c.send(req(Op::kCheck).keys({"x", "y"}).bytes);
  EXPECT_EQ(c.read_scalar<uint8_t>(), ts::kCheckReady);
  c.send(req(Op::kCheck).keys({"x", "z"}).bytes);
  EXPECT_EQ(c.read_scalar<uint8_t>(), ts::kCheckNotReady);
  c.send(req(Op::kGetNumKeys).bytes);
  EXPECT_EQ(c.read_scalar<int64_t>(), 2);
  c.send(req(Op::kDeleteKey).str("x").bytes);
  EXPECT_EQ(c.read_scalar<int64_t>(), 1);
  c.send(req(Op::kDeleteKey).str("x").bytes);
  EXPECT_EQ(c.read_scalar<int64_t>(), 0);
  c.send(req(Op::kGetNumKeys).bytes);
  EXPECT_EQ(c.read_scalar<int64_t>(), 1);
}

TEST_P(Conformance, WaitRepliesAtOnceWhenKeysExist) {
  auto c = connect();
  c.send(req(Op::kSet).str("here").str("1").bytes);
  c.send(req(Op::kWait).keys({"here"}).bytes);
  EXPECT_EQ(c.read_scalar<uint8_t>(), ts::kStopWaiting);
}

TEST_P(Conformance, WaitWakesWhenTheLastKeyArrives) {
  auto waiter = connect();
  auto setter = connect();
  waiter.send(req(Op::kWait).keys({"a", "b"}).bytes);
  setter.send(req(Op::kSet).str("a").str("1").bytes);
  setter.send(req(Op::kGetNumKeys).bytes);  // a round trip: "a" is stored now
  ASSERT_EQ(setter.read_scalar<int64_t>(), 1);
  EXPECT_TRUE(waiter.silent_for(50)) << "woke with a key still missing";
  setter.send(req(Op::kAdd).str("b").put<int64_t>(1).bytes);
  EXPECT_EQ(setter.read_scalar<int64_t>(), 1);
  EXPECT_EQ(waiter.read_scalar<uint8_t>(), ts::kStopWaiting);
}

TEST_P(Conformance, DeleteDoesNotWakeWaiters) {
  auto waiter = connect();
  auto other = connect();
  waiter.send(req(Op::kWait).keys({"k"}).bytes);
  other.send(req(Op::kDeleteKey).str("k").bytes);
  EXPECT_EQ(other.read_scalar<int64_t>(), 0);
  EXPECT_TRUE(waiter.silent_for(50));
}

TEST_P(Conformance, NewRequestImplicitlyCancelsAPendingWait) {
  auto waiter = connect();
  auto setter = connect();
  waiter.send(req(Op::kWait).keys({"late"}).bytes);
  // The client gave up on the wait (1.13 never cancels) and asks something else.
  waiter.send(req(Op::kAdd).str("counter").put<int64_t>(3).bytes);
  EXPECT_EQ(waiter.read_scalar<int64_t>(), 3);
  setter.send(req(Op::kSet).str("late").str("x").bytes);
  setter.send(req(Op::kGetNumKeys).bytes);
  ASSERT_TRUE(setter.read_scalar<int64_t>());
  // No stray STOP_WAITING may precede the next reply.
  waiter.send(req(Op::kAdd).str("counter").put<int64_t>(0).bytes);
  EXPECT_EQ(waiter.read_scalar<int64_t>(), 3);
}

TEST_P(Conformance, RequestFedOneByteAtATime) {
  auto c = connect();
  std::string bytes =
      req(Op::kSet).str("slow").str("value").bytes + req(Op::kGet).str("slow").bytes;
  for (char b : bytes) c.send(std::string(1, b));
  EXPECT_EQ(c.read_bytes(), "value");
}

TEST_P(Conformance, OversizedKeyOrValueClosesOnlyThatConnection) {
  auto good = connect();
  auto big_key = connect();
  big_key.send(req(Op::kGet).str(std::string(ts::kMaxKeySize + 1, 'k')).bytes);
  EXPECT_TRUE(big_key.closed_by_server());
  auto big_value = connect();
  big_value.send(req(Op::kSet).str("k").put<uint64_t>(ts::kMaxValueSize + 1).bytes);
  EXPECT_TRUE(big_value.closed_by_server()) << "rejected from the length alone";
  auto many_keys = connect();
  many_keys.send(req(Op::kCheck).put<uint64_t>(ts::kMaxKeysPerRequest + 1).bytes);
  EXPECT_TRUE(many_keys.closed_by_server());
  good.send(req(Op::kAdd).str("alive").put<int64_t>(1).bytes);
  EXPECT_EQ(good.read_scalar<int64_t>(), 1);
}

TEST_P(Conformance, LimitsThemselvesAreAccepted) {
  auto c = connect();
  std::string key(ts::kMaxKeySize, 'k');
  std::string value(ts::kMaxValueSize, 'v');
  c.send(req(Op::kSet).str(key).str(value).bytes);
  c.send(req(Op::kGet).str(key).bytes);
  EXPECT_EQ(c.read_bytes(), value);
}

TEST_P(Conformance, UnknownOpcodeCloses) {
  auto c = connect();
  c.send(std::string(1, static_cast<char>(0x7f)));
  EXPECT_TRUE(c.closed_by_server());
}

INSTANTIATE_TEST_SUITE_P(Numberings, Conformance,
                         ::testing::Values(Numbering::kV113, Numbering::kV2), [](const auto& info) {
                           return info.param == Numbering::kV2 ? "v2" : "v113";
                         });

// ---- 2.x-only operations ----

class ConformanceV2 : public ::testing::Test {
 protected:
  TcpStoreServer server{"", 0};
  Wire req(Op op) { return Wire(Numbering::kV2, op); }
};

TEST_F(ConformanceV2, PingEchoesTheNonce) {
  auto c = RawConnection::v2(server.port());
  c.send(req(Op::kPing).put<uint32_t>(0xDEADBEEF).bytes);
  EXPECT_EQ(c.read_scalar<uint32_t>(), 0xDEADBEEFu);
}

TEST_F(ConformanceV2, BadMagicInALaterValidateCloses) {
  // (A first byte 0 without the magic is a 1.13 SET, so only a 2.x connection can
  // send a wrong magic.)
  auto c = RawConnection::v2(server.port());
  c.send(req(Op::kValidate).put<uint32_t>(0x12345678).bytes);
  EXPECT_TRUE(c.closed_by_server());
}

TEST_F(ConformanceV2, AppendMultiSetMultiGet) {
  auto c = RawConnection::v2(server.port());
  c.send(req(Op::kAppend).str("log").str("ab").bytes);
  c.send(req(Op::kAppend).str("log").str("cd").bytes);
  c.send(req(Op::kMultiSet).put<uint64_t>(2).str("x").str("1").str("y").str("2").bytes);
  c.send(req(Op::kMultiGet).keys({"log", "y", "x"}).bytes);
  EXPECT_EQ(c.read_bytes(), "abcd");
  EXPECT_EQ(c.read_bytes(), "2");
  EXPECT_EQ(c.read_bytes(), "1");
}

TEST_F(ConformanceV2, CancelWaitRepliesWaitCanceled) {
  auto c = RawConnection::v2(server.port());
  c.send(req(Op::kWait).keys({"never"}).bytes);
  c.send(req(Op::kCancelWait).bytes);
  EXPECT_EQ(c.read_scalar<uint8_t>(), ts::kWaitCanceled);
  c.send(req(Op::kSet).str("never").str("now").bytes);
  c.send(req(Op::kPing).put<uint32_t>(7).bytes);
  EXPECT_EQ(c.read_scalar<uint32_t>(), 7u) << "no STOP_WAITING after a cancel";
}

TEST_F(ConformanceV2, CancelWaitAfterALateStopWaitingKeepsTheOrder) {
  auto waiter = RawConnection::v2(server.port());
  auto setter = RawConnection::v2(server.port());
  waiter.send(req(Op::kWait).keys({"k"}).bytes);
  setter.send(req(Op::kSet).str("k").str("v").bytes);
  setter.send(req(Op::kPing).put<uint32_t>(1).bytes);
  ASSERT_EQ(setter.read_scalar<uint32_t>(), 1u);
  // The STOP_WAITING is already owed when the client's CANCEL_WAIT arrives.
  waiter.send(req(Op::kCancelWait).bytes);
  EXPECT_EQ(waiter.read_scalar<uint8_t>(), ts::kStopWaiting);
  EXPECT_EQ(waiter.read_scalar<uint8_t>(), ts::kWaitCanceled);
}

// Withdrawn waits stay in their key's list, stale, until a sweep (StoreState::WaitList):
// whatever order the waiters of one key cancel, close, or wait again in, a write wakes
// exactly those still waiting, once each.
TEST_F(ConformanceV2, AKeysWaitersWithdrawnInAnyOrderWakeOnlyTheRest) {
  std::vector<RawConnection> c;
  for (int i = 0; i < 9; ++i) {
    c.push_back(RawConnection::v2(server.port()));
    c.back().send(req(Op::kWait).keys({"k"}).bytes);
  }
  for (int i : {0, 2, 4, 6}) {
    c[i].send(req(Op::kCancelWait).bytes);
    ASSERT_EQ(c[i].read_scalar<uint8_t>(), ts::kWaitCanceled);
  }
  for (int round = 0; round < 20; ++round) {  // enough cancels for several sweeps
    c[1].send(req(Op::kCancelWait).bytes);
    ASSERT_EQ(c[1].read_scalar<uint8_t>(), ts::kWaitCanceled);
    c[1].send(req(Op::kWait).keys({"k"}).bytes);
  }
  c[3].send(req(Op::kCancelWait).bytes);
  ASSERT_EQ(c[3].read_scalar<uint8_t>(), ts::kWaitCanceled);
  c[3].send(req(Op::kWait).keys({"k", "other"}).bytes);
  c.pop_back();  // 8 closes while it waits
  auto setter = RawConnection::v2(server.port());
  setter.send(req(Op::kSet).str("k").str("v").bytes);
  setter.send(req(Op::kPing).put<uint32_t>(1).bytes);
  ASSERT_EQ(setter.read_scalar<uint32_t>(), 1u);
  for (int i : {1, 5, 7}) EXPECT_EQ(c[i].read_scalar<uint8_t>(), ts::kStopWaiting) << i;
  EXPECT_TRUE(c[3].silent_for(50)) << "woke with \"other\" still missing";
  setter.send(req(Op::kSet).str("other").str("v").bytes);
  EXPECT_EQ(c[3].read_scalar<uint8_t>(), ts::kStopWaiting);
  for (int i = 0; i < 8; ++i) {
    c[i].send(req(Op::kPing).put<uint32_t>(100 + i).bytes);
    EXPECT_EQ(c[i].read_scalar<uint32_t>(), 100u + i) << i << ": a second STOP_WAITING";
  }
}

// torch 2.14's TCPStore::barrier (opcode 18), as its own server answers it: the key
// counts arrivals as ADD does, and each member gets STOP_WAITING once the count
// reaches the members named, at once when it already has.
TEST_F(ConformanceV2, BarrierReleasesEveryMemberOnceAllCame) {
  auto first = RawConnection::v2(server.port());
  auto second = RawConnection::v2(server.port());
  auto late = RawConnection::v2(server.port());
  first.send(req(Op::kBarrier).str("b").put<int64_t>(2).bytes);
  EXPECT_FALSE(first.read_scalar<uint8_t>(200)) << "released before the second came";
  second.send(req(Op::kBarrier).str("b").put<int64_t>(2).bytes);
  EXPECT_EQ(second.read_scalar<uint8_t>(), ts::kStopWaiting);
  EXPECT_EQ(first.read_scalar<uint8_t>(), ts::kStopWaiting);
  late.send(req(Op::kBarrier).str("b").put<int64_t>(2).bytes);
  EXPECT_EQ(late.read_scalar<uint8_t>(), ts::kStopWaiting);
  late.send(req(Op::kGet).str("b").bytes);
  EXPECT_EQ(late.read_bytes(), "3");
  late.send(req(Op::kGetNumKeys).bytes);
  EXPECT_EQ(late.read_scalar<int64_t>(), 1) << "the barrier's count is its only key";
}

TEST_F(ConformanceV2, BarrierWaitIsCancelledAsAWait) {
  auto c = RawConnection::v2(server.port());
  auto other = RawConnection::v2(server.port());
  c.send(req(Op::kBarrier).str("b").put<int64_t>(2).bytes);
  c.send(req(Op::kCancelWait).bytes);
  EXPECT_EQ(c.read_scalar<uint8_t>(), ts::kWaitCanceled);
  other.send(req(Op::kBarrier).str("b").put<int64_t>(2).bytes);
  EXPECT_EQ(other.read_scalar<uint8_t>(), ts::kStopWaiting);
  c.send(req(Op::kPing).put<uint32_t>(9).bytes);
  EXPECT_EQ(c.read_scalar<uint32_t>(), 9u) << "no STOP_WAITING after a cancel";
  auto text = RawConnection::v2(server.port());
  text.send(req(Op::kSet).str("t").str("abc").bytes);
  text.send(req(Op::kBarrier).str("t").put<int64_t>(2).bytes);
  EXPECT_TRUE(text.closed_by_server()) << "a barrier on a non-number, as ADD";
}

TEST_F(ConformanceV2, AnOpcodePastTheLastClosesTheConnection) {
  auto c = RawConnection::v2(server.port());
  c.send(std::string(1, char(19)) + std::string(16, '\0'));
  EXPECT_TRUE(c.closed_by_server()) << "an unknown opcode must not wait for more bytes";
}

TEST_F(ConformanceV2, Queues) {
  auto c = RawConnection::v2(server.port());
  c.send(req(Op::kQueuePush).str("q").str("first").bytes);
  c.send(req(Op::kQueuePush).str("q").str("second").bytes);
  c.send(req(Op::kQueueLen).str("q").bytes);
  EXPECT_EQ(c.read_scalar<int64_t>(), 2);
  c.send(req(Op::kQueuePop).str("q").bytes);
  EXPECT_EQ(c.read_scalar<int64_t>(), 2);
  EXPECT_EQ(c.read_bytes(), "first");
  c.send(req(Op::kQueuePop).str("q").bytes);
  EXPECT_EQ(c.read_scalar<int64_t>(), 1);
  EXPECT_EQ(c.read_bytes(), "second");
  c.send(req(Op::kQueuePop).str("q").bytes);
  EXPECT_EQ(c.read_scalar<int64_t>(), 0);
}

TEST_F(ConformanceV2, ListGivesEveryKey) {
  auto c = RawConnection::v2(server.port());
  c.send(req(Op::kSet).str("b").str("1").bytes);
  c.send(req(Op::kSet).str("a").str("1").bytes);
  c.send(req(Op::kList).bytes);
  ASSERT_EQ(c.read_scalar<int64_t>(), 2);
  std::vector<std::string> keys{*c.read_bytes(), *c.read_bytes()};
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "b"}));
}

TEST_F(ConformanceV2, ListensDualStack) {
  // The server was opened with host "": IPv6 loopback must reach it too.
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(server.port());
  a.sin6_addr = in6addr_loopback;
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  int err = errno;
  ::close(fd);
  if (rc != 0 && (err == EADDRNOTAVAIL || err == ENETUNREACH || err == EAFNOSUPPORT)) {
    // No IPv6 on this machine: the server must then have fallen back to IPv4.
    auto v4 = RawConnection::v2(server.port());
    v4.send(req(Op::kPing).put<uint32_t>(0).bytes);
    EXPECT_FALSE(v4.closed_by_server(100));
    return;
  }
  EXPECT_EQ(rc, 0) << std::strerror(err);
}

// ---- 1.13-only: WATCH_KEY on the callback connection ----

TEST(Conformance113, WatchKeyRegistersAndReportsChanges) {
  TcpStoreServer server{"127.0.0.1", 0};
  RawConnection watcher(server.port());
  RawConnection writer(server.port());
  watcher.send(Wire(Numbering::kV113, Op::kWatchKey).str("w").bytes);
  EXPECT_EQ(watcher.read_scalar<uint8_t>(), 3);
  writer.send(Wire(Numbering::kV113, Op::kSet).str("w").str("1").bytes);
  EXPECT_EQ(watcher.read_scalar<uint8_t>(), 1);  // created
  EXPECT_EQ(watcher.read_bytes(), "w");
  EXPECT_EQ(watcher.read_bytes(), "");
  EXPECT_EQ(watcher.read_bytes(), "1");
  writer.send(Wire(Numbering::kV113, Op::kSet).str("w").str("2").bytes);
  EXPECT_EQ(watcher.read_scalar<uint8_t>(), 0);  // updated
  EXPECT_EQ(watcher.read_bytes(), "w");
  EXPECT_EQ(watcher.read_bytes(), "1");
  EXPECT_EQ(watcher.read_bytes(), "2");
}

TEST(Conformance113, SilentConnectionsStayOpen) {
  TcpStoreServer server{"127.0.0.1", 0};
  RawConnection silent(server.port());  // like 1.13's callback connection
  EXPECT_TRUE(silent.silent_for(200));
  EXPECT_EQ(server.connection_count(), 1u);
}

}  // namespace
}  // namespace ddprun::test
