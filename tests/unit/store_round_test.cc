// StoreRound (the round protocol over the agents' shared store) on an in-memory store.
#include <gtest/gtest.h>

#include "common/error.h"
#include "rendezvous/memory_store.h"
#include "rendezvous/store_round.h"
#include "tests/fakes/manual_clock.h"

namespace ddprun::testing {
namespace {

using rendezvous::MemoryStore;
using rendezvous::StoreRound;

/// A store whose every call fails, as one gone away does.
class LostStore : public MemoryStore {
 public:
  void set(const std::string&, const std::string&) override { fail(); }
  std::vector<std::optional<std::string>> get_now(const std::vector<std::string>&) override {
    fail();
  }

 private:
  [[noreturn]] static void fail() { throw StoreError("connection reset"); }
};

class StoreRoundTest : public ::testing::Test {
 protected:
  std::unique_ptr<StoreRound> node(int group_rank, rendezvous::Store& store) {
    StoreRound::Options o;
    o.info.group_rank = group_rank;
    o.info.group_world_size = 2;
    o.prefix = "ddprun/test/round/0/";
    o.store = &store;
    o.store_where = "memory";
    o.connect = [] { return std::make_unique<MemoryStore>(); };
    return std::make_unique<StoreRound>(io_, clock_, std::move(o));
  }

  boost::asio::io_context io_;
  ManualClock clock_;
  MemoryStore store_;
};

TEST_F(StoreRoundTest, ShareMaxGivesEveryNodeTheLargestNumberShared) {
  auto a = node(0, store_);
  auto b = node(1, store_);
  EXPECT_EQ(a->share_max("longest", 200), 200) << "nobody else has shared yet";
  EXPECT_EQ(b->share_max("longest", 900), 900);
  EXPECT_EQ(a->share_max("longest", 300), 900);
  EXPECT_EQ(store_.get("ddprun/test/round/0/max/longest/0", std::chrono::milliseconds(0)), "300");
  // A smaller number than one already shared is not written again.
  EXPECT_EQ(b->share_max("longest", 100), 900);
  EXPECT_EQ(store_.get("ddprun/test/round/0/max/longest/1", std::chrono::milliseconds(0)), "900");
  // Names are apart.
  EXPECT_EQ(b->share_max("other", 5), 5);
}

TEST_F(StoreRoundTest, UnfinishedNamesTheNodesNotMarkedDone) {
  auto a = node(0, store_);
  EXPECT_EQ(a->unfinished(), (std::vector<int>{0, 1}));
  a->finish_node([] {}, [](const std::string&) {});
  EXPECT_EQ(a->unfinished(), std::vector<int>{1});
  LostStore lost;
  EXPECT_TRUE(node(0, lost)->unfinished().empty()) << "nothing is known";
}

TEST_F(StoreRoundTest, ShareMaxSkipsWhatIsNotANumberAndSurvivesALostStore) {
  auto a = node(0, store_);
  store_.set("ddprun/test/round/0/max/longest/1", "garbage");
  EXPECT_EQ(a->share_max("longest", 42), 42);
  LostStore lost;
  EXPECT_EQ(node(0, lost)->share_max("longest", 50), 50);
}

}  // namespace
}  // namespace ddprun::testing
