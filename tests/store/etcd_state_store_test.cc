// The rendezvous state in real etcd (EtcdStateStore): one request per step, and what
// each step hands back — a lost write announces the node and carries the state
// that won, a wait's event is the next read, a participant sleeps through changes
// that do not concern it.
#include <gtest/gtest.h>

#include <thread>

#include "rendezvous/join/etcd_state_store.h"
#include "tests/helpers/etcd_cluster.h"
#include "tests/helpers/run_task.h"

namespace ddprun::rendezvous {
namespace {

using namespace std::chrono_literals;

// Each request as the joiner makes it: a coroutine, here on a loop of its own.
StateSnapshot read(EtcdStateStore& store) {
  CancelSignal cancel;
  return testing::run_task(store.read(cancel));
}

bool write(EtcdStateStore& store, const StateSnapshot& from, const std::string& to,
           bool wakes_participants, const std::optional<Announcement>& on_loss) {
  CancelSignal cancel;
  using Wakes = StateStore::Wakes;
  return testing::run_task(store.write(
      from, to, wakes_participants ? Wakes::kParticipants : Wakes::kNobody, on_loss, cancel));
}

std::vector<std::pair<std::string, int>> announced(EtcdStateStore& store, int round) {
  CancelSignal cancel;
  return testing::run_task(store.announced(round, cancel));
}

void wait(EtcdStateStore& store, const StateSnapshot& from, bool participant,
          std::chrono::milliseconds timeout) {
  CancelSignal cancel;
  testing::run_task([&]() -> Task<bool> {
    co_await store.wait(from, participant, timeout, cancel);
    co_return true;
  }());
}

std::optional<StateHead> head(EtcdStateStore& store, int round,
                              std::vector<std::string> with = {}) {
  CancelSignal cancel;
  return testing::run_task(store.head(round, std::move(with), cancel));
}

int64_t announce(EtcdStateStore& store, const Announcement& a) {
  CancelSignal cancel;
  return testing::run_task(store.announce(a, cancel));
}

StateHeads::Folding folding(EtcdStateStore& store, int round) {
  CancelSignal cancel;
  return testing::run_task(store.folding(round, cancel));
}

bool take_over(EtcdStateStore& store, const Announcement& a, const std::string& from) {
  CancelSignal cancel;
  return testing::run_task(store.take_over_folding(a, 2, from, cancel));
}

class EtcdStateStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new test::EtcdCluster(1); }
  static void TearDownTestSuite() { delete cluster_; }
  std::unique_ptr<EtcdStateStore> node() {
    std::string prefix =
        std::string("/s/") + ::testing::UnitTest::GetInstance()->current_test_info()->name() + "/";
    return std::make_unique<EtcdStateStore>(
        std::make_unique<store::EtcdClient>(store::parse_etcd_endpoints(cluster_->endpoints()), 10s), prefix,
        [] { return int64_t{0}; });
  }
  static std::string with(const std::vector<std::string>& nodes, bool complete = false) {
    DynamicState s;
    for (const auto& n : nodes) s.participants[n] = 1;
    s.complete = complete;
    return s.encode();
  }
  static test::EtcdCluster* cluster_;
};
test::EtcdCluster* EtcdStateStoreTest::cluster_ = nullptr;

TEST_F(EtcdStateStoreTest, ALostWriteAnnouncesAndCarriesTheWinningState) {
  auto a = node();
  auto b = node();
  StateSnapshot empty_a = read(*a);
  StateSnapshot empty_b = read(*b);
  EXPECT_TRUE(empty_a.raw.empty());
  ASSERT_TRUE(write(*a, empty_a, with({"a"}), false, std::nullopt));
  EXPECT_FALSE(write(*b, empty_b, with({"b"}), false, Announcement{0, "b", 4}));
  StateSnapshot now = read(*b);
  EXPECT_EQ(now.state.participants.count("a"), 1u) << now.raw;
  EXPECT_EQ(now.version, 1);
  EXPECT_EQ(announced(*b, 0), (std::vector<std::pair<std::string, int>>{{"b", 4}}));
  // A writes again on what it wrote, b's announcement taken in.
  StateSnapshot mine = read(*a);
  EXPECT_EQ(mine.version, 1);
  EXPECT_TRUE(write(*a, mine, with({"a", "b"}), false, std::nullopt));
}

TEST_F(EtcdStateStoreTest, AWaitEndsWithTheNextWriteAndHandsItOver) {
  auto a = node();
  auto b = node();
  ASSERT_TRUE(write(*a, read(*a), with({"a"}), false, std::nullopt));
  StateSnapshot seen = read(*b);
  std::thread writer([&] {
    EXPECT_TRUE(write(*a, read(*a), with({"a", "c"}), false, std::nullopt));
  });
  wait(*b, seen, false, 30s);
  writer.join();
  StateSnapshot next = read(*b);
  EXPECT_EQ(next.version, seen.version + 1);
  EXPECT_EQ(next.state.participants.count("c"), 1u) << next.raw;
}

TEST_F(EtcdStateStoreTest, AParticipantSleepsThroughChangesThatDoNotConcernIt) {
  auto a = node();
  auto b = node();
  ASSERT_TRUE(write(*a, read(*a), with({"a", "b"}), false, std::nullopt));
  StateSnapshot seen = read(*b);
  std::thread writer([&] {
    EXPECT_TRUE(write(*a, read(*a), with({"a", "b", "c"}), false, std::nullopt));
    EXPECT_TRUE(write(*a, read(*a), with({"a", "b", "c"}, true), true, std::nullopt));
  });
  wait(*b, seen, true, 30s);
  writer.join();
  StateSnapshot next = read(*b);
  EXPECT_TRUE(next.state.complete) << "woken by the write that completed the round, not before";
  EXPECT_EQ(next.epoch, seen.epoch + 1);
  EXPECT_GT(next.epoch_revision, seen.epoch_revision) << "the round's keys are newer than this";
}

// A write that concerns participants wakes them on "wake", which holds the head alone
// (each of N waiting nodes gets a few bytes, not a state naming N nodes); "epoch" still
// holds the whole state, for agents of earlier versions that wait on it.
TEST_F(EtcdStateStoreTest, ParticipantsWakeOnTheHeadAloneEarlierAgentsOnTheWholeState) {
  auto a = node();
  std::string complete = with({"a", "b", "c"}, true);
  ASSERT_TRUE(write(*a, read(*a), complete, true, std::nullopt));
  store::EtcdClient etcd(store::parse_etcd_endpoints(cluster_->endpoints()), 10s);
  std::string prefix = "/s/ParticipantsWakeOnTheHeadAloneEarlierAgentsOnTheWholeState/";
  auto wake = etcd.range(prefix + "wake");
  auto epoch = etcd.range(prefix + "epoch");
  ASSERT_EQ(wake.kvs.size(), 1u);
  ASSERT_EQ(epoch.kvs.size(), 1u);
  EXPECT_EQ(wake.kvs[0].value, "1 1\n" + complete.substr(0, complete.find('\n')));
  EXPECT_EQ(epoch.kvs[0].value, "1 1\n" + complete);
}

// The first node to announce itself for a round is told so (1); a later one gets a
// larger number, and the head says once a write took it in. The head holds the
// state's first line: where a node joins, without the state.
TEST_F(EtcdStateStoreTest, TheFirstToAnnounceIsToldSoAndTheHeadSaysWhomAWriteTookIn) {
  auto a = node();
  auto b = node();
  std::optional<StateHead> none_yet = head(*b, 0);
  ASSERT_TRUE(none_yet);
  EXPECT_FALSE(none_yet->exists) << "nothing written: the first round forms";
  EXPECT_EQ(announce(*a, Announcement{0, "a", 2}), 1);
  int64_t b_at = announce(*b, Announcement{0, "b", 4});
  EXPECT_GT(b_at, 1);
  StateSnapshot seen = read(*a);
  EXPECT_EQ(announced(*a, 0), (std::vector<std::pair<std::string, int>>{{"a", 2}, {"b", 4}}));
  ASSERT_TRUE(write(*a, seen, with({"a", "b"}), false, std::nullopt));
  std::optional<StateHead> now = head(*b, 0);
  ASSERT_TRUE(now);
  EXPECT_TRUE(now->exists);
  EXPECT_EQ(now->round, 0);
  EXPECT_TRUE(now->forming());
  EXPECT_EQ(now->version, 1);
  EXPECT_GE(now->taken_in, b_at) << "b was taken in";
}

// A node woken as its round formed reads its seat with the head, in one transaction:
// the keys asked with the head come back in their order, a missing one as nothing; and
// the head says when the round completed.
TEST_F(EtcdStateStoreTest, TheHeadReadsTheKeysAskedWithIt) {
  auto a = node();
  StateSnapshot empty = read(*a);
  ASSERT_TRUE(write(*a, empty, with({"a"}, true), true, std::nullopt));
  std::string seat = std::string("/s/") +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                     "/round/0/seat/a";
  store::EtcdClient client(store::parse_etcd_endpoints(cluster_->endpoints()), 10s);
  client.put(seat, "its seat");
  std::optional<StateHead> now = head(*a, 0, {seat, seat + "-not-there"});
  ASSERT_TRUE(now);
  EXPECT_TRUE(now->complete);
  EXPECT_EQ(now->with, (std::vector<std::optional<std::string>>{"its seat", std::nullopt}));
  // When the round completed: every key of the round is newer, so a member's waits
  // watch from there without reading first.
  int64_t completed = read(*a).epoch_revision;
  EXPECT_GT(completed, 0);
  EXPECT_EQ(now->epoch_revision, completed);
  EXPECT_LT(now->epoch_revision, now->revision) << "the seat came after";
}

// A joiner's first look at a state with a head is the head, read in another
// transaction (the agent's start): the next head() returns it without a request, the
// one after reads again.
TEST_F(EtcdStateStoreTest, TheFirstHeadIsTheOneReadInTheStartsTransaction) {
  auto a = node();
  auto b = node();
  store::EtcdClient start(store::parse_etcd_endpoints(cluster_->endpoints()), 10s);
  b->prime(start.txn(std::nullopt, b->first_reads()));
  StateSnapshot empty = read(*a);
  ASSERT_TRUE(write(*a, empty, with({"a"}), false, std::nullopt));
  std::optional<StateHead> primed = head(*b, -1);
  ASSERT_TRUE(primed);
  EXPECT_FALSE(primed->exists) << "as the start read it, before a's write: not read again";
  std::optional<StateHead> now = head(*b, -1);
  ASSERT_TRUE(now);
  EXPECT_TRUE(now->exists) << "the next head() reads";
  EXPECT_EQ(now->version, 1);
}

// The folder's part is taken over from the folder as read, by one node: a later claim
// from what it read before fails.
TEST_F(EtcdStateStoreTest, TheFoldersPartIsTakenOverOnceFromTheFolderAsRead) {
  auto a = node();
  auto b = node();
  auto c = node();
  ASSERT_EQ(announce(*a, Announcement{0, "a", 2}), 1);
  announce(*b, Announcement{0, "b", 2});
  announce(*c, Announcement{0, "c", 2});
  StateHeads::Folding first = folding(*b, 0);  // a folds, as the first to announce
  StateHeads::Folding seen_by_c = folding(*c, 0);
  EXPECT_TRUE(take_over(*b, Announcement{0, "b", 2}, first.token));
  EXPECT_FALSE(take_over(*c, Announcement{0, "c", 2}, seen_by_c.token)) << "b was first";
  StateHeads::Folding now = folding(*c, 0);
  EXPECT_NE(now.token, first.token);
  EXPECT_TRUE(take_over(*c, Announcement{0, "c", 2}, now.token));
}

// A wait on the head ends with the next write.
TEST_F(EtcdStateStoreTest, AWaitOnTheHeadEndsWithTheNextWrite) {
  auto a = node();
  auto b = node();
  ASSERT_TRUE(write(*a, read(*a), with({"a"}), false, std::nullopt));
  std::optional<StateHead> seen = head(*b, -1);
  ASSERT_TRUE(seen);
  std::thread writer([&] {
    EXPECT_TRUE(write(*a, read(*a), with({"a", "c"}, true), true, std::nullopt));
  });
  {
    CancelSignal cancel;
    testing::run_task([&]() -> Task<bool> {
      co_await b->wait_head(*seen, 30s, cancel);
      co_return true;
    }());
  }
  writer.join();
  std::optional<StateHead> next = head(*b, -1);
  ASSERT_TRUE(next);
  EXPECT_TRUE(next->complete);
  EXPECT_EQ(next->version, seen->version + 1);
}

}  // namespace
}  // namespace ddprun::rendezvous
