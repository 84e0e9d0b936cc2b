// How a c10d node judges the other members' heartbeats: a member is dead after the
// limit of silence this node watched, never over time it could not watch the store.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "rendezvous/backends/c10d_backend.h"
#include "tests/helpers/free_port.h"

namespace ddprun::rendezvous {
namespace {

using std::chrono::milliseconds;
// What the members' heartbeat keys hold: "other" never beat (nor did this node yet).
const std::vector<std::optional<std::string>> silent{std::nullopt, std::nullopt};

RendezvousParams options() {
  RendezvousParams p;
  p.backend = Backend::kC10d;
  p.c10d_host = "127.0.0.1";
  p.c10d_port = test::free_port();
  p.c10d_is_host = true;
  p.heartbeat_interval = milliseconds(50);
  p.heartbeat_misses = 3;  // dead after 150 ms of silence
  return p;
}

// The other member never beats; this node checks every interval, as its agent does.
TEST(C10dLiveness, AMemberSilentWhileThisNodeWatchedIsDead) {
  C10dBackend backend(options());
  std::vector<std::string> members{"me", "other"};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::vector<std::string> dead;
  while (dead.empty() && std::chrono::steady_clock::now() < deadline) {
    dead = backend.dead_members(members, silent, "me");
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_EQ(dead, std::vector<std::string>{"other"});
}

// Each member's heartbeat is a key of its own under the run's prefix.
TEST(C10dLiveness, EachMemberBeatsInAKeyOfItsOwn) {
  C10dBackend backend(options());
  EXPECT_EQ(backend.liveness_keys("p/", {"a", "b"}), (std::vector<std::string>{"p/hb/a", "p/hb/b"}));
}

// A member whose counter moves between checks is alive, however long it runs.
TEST(C10dLiveness, AMemberThatKeepsBeatingIsAlive) {
  C10dBackend backend(options());
  std::vector<std::string> members{"me", "other"};
  for (int beat = 1; beat <= 8; ++beat) {
    std::vector<std::optional<std::string>> beats{"1", std::to_string(beat)};
    EXPECT_TRUE(backend.dead_members(members, beats, "me").empty()) << beat;
    std::this_thread::sleep_for(milliseconds(50));
  }
}

// A check that comes long after the last (this agent was frozen, or the store did not
// answer) judges nobody: the others could not beat meanwhile either.
TEST(C10dLiveness, SilenceThisNodeCouldNotWatchIsNotDeath) {
  C10dBackend backend(options());
  std::vector<std::string> members{"me", "other"};
  EXPECT_TRUE(backend.dead_members(members, silent, "me").empty());
  std::this_thread::sleep_for(milliseconds(400));  // longer than the limit, unwatched
  EXPECT_TRUE(backend.dead_members(members, silent, "me").empty());
}

}  // namespace
}  // namespace ddprun::rendezvous
