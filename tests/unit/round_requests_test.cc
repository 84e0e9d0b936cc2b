#include "rendezvous/round/round_requests.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "store/memory_store.h"

namespace ddprun::rendezvous {
namespace {

using store::MemoryStore;

class RoundRequestsTest : public ::testing::Test {
 protected:
  void run() {
    io_.restart();
    io_.run();
  }
  MemoryStore store_;  // outlives the loop
  boost::asio::io_context io_;
};

TEST_F(RoundRequestsTest, RequestsAreAnsweredInTheOrderAsked) {
  RoundRequests requests(io_, [this] { return store::on_loop(store_); });
  std::vector<std::string> said;
  requests.write("k", "1", [&] { said.push_back("written"); }, [](const std::string&) {});
  requests.raise("max", 7, [](const std::string&) {});
  requests.raise("max", 3, [](const std::string&) {});
  requests.read(
      {"k", "max", "none"},
      [&](std::optional<RoundRequests::Values> v) {
        ASSERT_TRUE(v);
        said.push_back((*v)[0].value_or("-") + " " + (*v)[1].value_or("-") + " " +
                       (*v)[2].value_or("-"));
      },
      [](const std::string&) {});
  EXPECT_TRUE(said.empty()) << "answered on the loop";
  run();
  EXPECT_EQ(said, (std::vector<std::string>{"written", "1 7 -"}));
}

// The first writer wins: each asker learns what the key holds after its request.
TEST_F(RoundRequestsTest, ACompareAndSetGivesWhatTheKeyHoldsAfter) {
  RoundRequests requests(io_, [this] { return store::on_loop(store_); });
  std::vector<std::string> held;
  for (const char* mine : {"first", "second"}) {
    requests.compare_set("over", "", mine, [&](const std::string& v) { held.push_back(v); },
                         [&](const std::string& why) { held.push_back("error: " + why); });
  }
  run();
  EXPECT_EQ(held, (std::vector<std::string>{"first", "first"}));
}

// A value made at the request's turn holds what the work asked before it left.
TEST_F(RoundRequestsTest, ACompareAndSetsValueIsMadeAtItsTurn) {
  RoundRequests requests(io_, [this] { return store::on_loop(store_); });
  std::string begun = "nothing yet";
  requests.run(
      [&](CancelSignal&) -> Task<void> {
        begun = "round 1";
        co_return;
      },
      [](const std::string&) {});
  std::string held;
  requests.compare_set(
      "over", "", [&] { return "ended; " + begun; }, [&](const std::string& v) { held = v; },
      [&](const std::string& why) { held = "error: " + why; });
  run();
  EXPECT_EQ(held, "ended; round 1");
}

// Its asker waits for the answer: it comes, as an error, even where a read would
// give nothing (refused, past the bound).
TEST_F(RoundRequestsTest, ACompareAndSetAlwaysAnswers) {
  RoundRequests requests(io_, [this] { return store::on_loop(store_); });
  for (size_t i = 0; i < RoundRequests::kMostWaiting + 1; ++i) {
    requests.write("k", "v", [] {}, [](const std::string&) {});
  }
  std::string why;
  requests.compare_set("over", "", "mine", [&](const std::string&) { why = "answered"; },
                       [&](const std::string& w) { why = w; });
  run();
  EXPECT_EQ(why, "too many requests wait for the store");
}

// Work of the round's made elsewhere (the rendezvous state's) is taken in turn; its
// failure is its own, and after_requests() answers once everything asked before it has been.
TEST_F(RoundRequestsTest, WorkIsTakenInTurnAndSettleComesAfterIt) {
  RoundRequests requests(io_, [this] { return store::on_loop(store_); });
  std::vector<std::string> said;
  requests.write("k", "1", [&] { said.push_back("written"); }, [](const std::string&) {});
  requests.run(
      [&](CancelSignal&) -> Task<void> {
        said.push_back("work");
        throw Error("the state is gone");
        co_return;
      },
      [&](const std::string& why) { said.push_back("failed: " + why); });
  requests.after_requests([&] { said.push_back("settled"); });
  requests.read({"k"}, [&](std::optional<RoundRequests::Values> v) {
    said.push_back(v ? (*v)[0].value_or("-") : "nothing");
  }, [&](const std::string& why) { said.push_back("lost: " + why); });
  run();
  EXPECT_EQ(said, (std::vector<std::string>{"written", "work", "failed: the state is gone",
                                            "settled", "1"}));
}

// Past the bound, a write fails and a read reads nothing (the store is slow; the
// request in progress says whether it is gone).
TEST_F(RoundRequestsTest, RequestsPastTheBoundAreRefused) {
  RoundRequests requests(io_, [this] { return store::on_loop(store_); });
  int answered = 0;
  std::vector<std::string> refused;
  for (size_t i = 0; i < RoundRequests::kMostWaiting + 1; ++i) {
    requests.write("k", std::to_string(i), [&] { ++answered; },
                   [&](const std::string& why) { refused.push_back(why); });
  }
  requests.write("k", "late", [&] { ++answered; },
                 [&](const std::string& why) { refused.push_back(why); });
  bool read_nothing = false;
  requests.read({"k"}, [&](std::optional<RoundRequests::Values> v) { read_nothing = !v; },
                [&](const std::string& why) { refused.push_back("read: " + why); });
  run();
  EXPECT_EQ(answered, static_cast<int>(RoundRequests::kMostWaiting) + 1)
      << "one in progress and the bound waiting";
  EXPECT_EQ(refused, std::vector<std::string>{"too many requests wait for the store"});
  EXPECT_TRUE(read_nothing);
}

// A failed connection fails every request waiting for it at once, the same way.
TEST_F(RoundRequestsTest, AStoreErrorReachesTheAskerAndEveryRequestWaiting) {
  class Lost : public MemoryStore {
   public:
    void set(const std::string&, const std::string&) override {
      ++sets;
      throw StoreError("connection reset");
    }
    int sets = 0;
  } lost;
  RoundRequests requests(io_, [&lost] { return store::on_loop(lost); });
  std::vector<std::string> why;
  requests.write("k", "v", [] {}, [&](const std::string& w) { why.push_back(w); });
  requests.write("k", "w", [] {}, [&](const std::string& w) { why.push_back(w); });
  requests.read({"k"}, [](auto) {}, [&](const std::string& w) { why.push_back("read: " + w); });
  run();
  EXPECT_EQ(why, (std::vector<std::string>{"connection reset", "connection reset",
                                           "read: connection reset"}));
  EXPECT_EQ(lost.sets, 1) << "the waiting ones were not sent";
  requests.write("k", "later", [] {}, [&](const std::string& w) { why.push_back("later: " + w); });
  run();
  EXPECT_EQ(why.back(), "later: connection reset") << "the round's store is lost for good";
  EXPECT_EQ(lost.sets, 1);
}

// The connection is made by the first request: a store that cannot be reached fails
// the requests, and nothing throws at the asker.
TEST_F(RoundRequestsTest, AStoreThatCannotBeReachedFailsTheRequests) {
  int connects = 0;
  RoundRequests requests(io_, [&connects]() -> std::unique_ptr<store::LoopStore> {
    ++connects;
    throw StoreError("cannot connect to the store at 127.0.0.1:1: Connection refused");
  });
  EXPECT_EQ(connects, 0);
  std::vector<std::string> why;
  requests.write("k", "v", [] {}, [&](const std::string& w) { why.push_back(w); });
  requests.read({"k"}, [](auto) {}, [&](const std::string& w) { why.push_back(w); });
  run();
  EXPECT_EQ(why, (std::vector<std::string>(
                     2, "cannot connect to the store at 127.0.0.1:1: Connection refused")));
  EXPECT_EQ(connects, 1);
}

// connect() makes the connection before any request (while the store is up).
TEST_F(RoundRequestsTest, ConnectMakesTheConnectionBeforeAnyRequest) {
  int connects = 0;
  RoundRequests requests(io_, [&] {
    ++connects;
    return store::on_loop(store_);
  });
  requests.connect();
  run();
  EXPECT_EQ(connects, 1);
  bool written = false;
  requests.write("k", "v", [&] { written = true; }, [](const std::string&) {});
  run();
  EXPECT_TRUE(written);
  EXPECT_EQ(connects, 1) << "kept for the requests after";
}

// Once stopped, nothing asked is sent (no connection made) and nothing answers.
TEST_F(RoundRequestsTest, NothingIsSentOnceStopped) {
  int connects = 0;
  int callbacks = 0;
  RoundRequests requests(io_, [&] {
    ++connects;
    return store::on_loop(store_);
  });
  requests.stop();
  requests.write("k", "v", [&] { ++callbacks; }, [&](const std::string&) { ++callbacks; });
  requests.read({"k"}, [&](auto) { ++callbacks; }, [&](const std::string&) { ++callbacks; });
  run();
  EXPECT_EQ(connects, 0);
  EXPECT_EQ(callbacks, 0);
  EXPECT_FALSE(store_.check({"k"}));
}

TEST_F(RoundRequestsTest, NoCallbackComesOnceItIsGone) {
  int callbacks = 0;
  {
    RoundRequests requests(io_, [this] { return store::on_loop(store_); });
    requests.write("k", "v", [&] { ++callbacks; }, [&](const std::string&) { ++callbacks; });
    requests.read({"k"}, [&](auto) { ++callbacks; }, [&](const std::string&) { ++callbacks; });
  }
  run();
  EXPECT_EQ(callbacks, 0);
}

}  // namespace
}  // namespace ddprun::rendezvous
