#include "net/wait_scope.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>

#include "net/socket.h"
#include "os/signal_catcher.h"

namespace ddprun::net {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A connected socket whose peer never answers, and a pipe that stands for a stop signal
// waiting for the loop.
struct Silent {
  Silent() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0);
    socket = Socket::adopt(fds[0], "the silent peer");
    peer = fds[1];
    EXPECT_EQ(::pipe2(signal, O_CLOEXEC), 0);
  }
  ~Silent() {
    for (int fd : {peer, signal[0], signal[1]}) ::close(fd);
  }
  void signal_arrives() const { EXPECT_EQ(::write(signal[1], "x", 1), 1); }

  Socket socket;
  int peer = -1;
  int signal[2] = {-1, -1};
};

// What ended a read of the silent peer with Interrupted ("" when nothing did).
std::string interruption_of_a_read(Silent& s) {
  char c = 0;
  try {
    s.socket.recv_some(&c, 1, Clock::now() + 60s);
  } catch (const Interrupted& e) {
    return e.what();
  }
  return "";
}

TEST(WaitScope, WithoutOneAWaitEndsAtItsDeadline) {
  Silent s;
  s.signal_arrives();  // nobody listens to it
  char c = 0;
  EXPECT_THROW(s.socket.recv_some(&c, 1, Clock::now() + 50ms), TimeoutError);
}

TEST(WaitScope, APendingSignalEndsAWaitAndClosesItsHalfDoneConnection) {
  Silent s;
  WaitScope scope(s.signal[0]);
  s.signal_arrives();
  EXPECT_EQ(interruption_of_a_read(s), "interrupted by a stop signal");
  EXPECT_FALSE(s.socket.is_open());
}

TEST(WaitScope, ASignalThatComesDuringAWaitEndsIt) {
  Silent s;
  WaitScope scope(s.signal[0]);
  std::thread later([&] {
    std::this_thread::sleep_for(20ms);
    s.signal_arrives();
  });
  char c = 0;
  EXPECT_THROW(s.socket.recv_some(&c, 1, Clock::now() + 60s), Interrupted);
  later.join();
}

TEST(WaitScope, DataThatIsThereIsReadEvenWhileASignalWaits) {
  Silent s;
  WaitScope scope(s.signal[0]);
  ASSERT_EQ(::write(s.peer, "y", 1), 1);
  s.signal_arrives();
  char c = 0;
  EXPECT_EQ(s.socket.recv_some(&c, 1, Clock::now() + 60s), 1u);
  EXPECT_EQ(c, 'y');
}

TEST(WaitScope, OnceLimitedNoWaitLastsLongerThanTheLimit) {
  Silent s;
  WaitScope scope(s.signal[0]);
  scope.limit_each(30ms);
  EXPECT_EQ(interruption_of_a_read(s), "no answer while stopping");
}

TEST(WaitScope, ALimitLongerThanTheDeadlineLeavesTheTimeout) {
  Silent s;
  WaitScope scope(s.signal[0]);
  scope.limit_each(60s);
  char c = 0;
  EXPECT_THROW(s.socket.recv_some(&c, 1, Clock::now() + 30ms), TimeoutError);
}

TEST(WaitScope, APauseBetweenAttemptsGivesWayToo) {
  Silent s;
  WaitScope scope(s.signal[0]);
  s.signal_arrives();
  EXPECT_THROW(pause(60s), Interrupted);
}

TEST(WaitScope, OnlyTheThreadThatMadeItIsAffected) {
  Silent s;
  s.signal_arrives();
  std::thread other([&] {
    WaitScope scope(s.signal[0]);
    EXPECT_THROW(pause(60s), Interrupted);
  });
  other.join();
  char c = 0;
  EXPECT_THROW(s.socket.recv_some(&c, 1, Clock::now() + 30ms), TimeoutError);
}

// What the agent's scope listens to: a caught stop signal keeps its catcher's pipe
// readable until the loop takes it, and a second catcher of other signals coexists.
TEST(WaitScope, ACaughtSignalIsPendingUntilTheLoopTakesIt) {
  boost::asio::io_context io;
  int stops = 0;
  int forwarded = 0;
  os::SignalCatcher stop(io, {SIGUSR1}, [&](int, pid_t) { ++stops; });
  os::SignalCatcher forward(io, {SIGUSR2}, [&](int, pid_t) { ++forwarded; });
  WaitScope scope(stop.pending_fd());
  EXPECT_NO_THROW(pause(10ms));
  ::raise(SIGUSR2);
  EXPECT_NO_THROW(pause(10ms)) << "another catcher's signal is not a stop";
  ::raise(SIGUSR1);
  EXPECT_THROW(pause(60s), Interrupted);
  EXPECT_THROW(pause(60s), Interrupted) << "still pending";
  while (stops + forwarded < 2) io.run_one();
  EXPECT_EQ(stops, 1);
  EXPECT_EQ(forwarded, 1);
  EXPECT_NO_THROW(pause(10ms)) << "taken by the loop";
}

}  // namespace
}  // namespace ddprun::net
