// The loop's waits for a descriptor (common/loop_waits.h, common/descriptor_ready.h) say
// "ready" only when the kernel says so.
#include "common/loop_waits.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <memory>
#include <optional>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/descriptor_ready.h"
#include "tests/helpers/run_task.h"

namespace ddprun {
namespace {

using Clock = std::chrono::steady_clock;

struct SocketPair {
  std::array<int, 2> fd{-1, -1};
  SocketPair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fd.data()), 0); }
  ~SocketPair() {
    ::close(fd[0]);
    ::close(fd[1]);
  }
  SocketPair(const SocketPair&) = delete;
  SocketPair& operator=(const SocketPair&) = delete;
};

// Asio may hand a new wait the readiness its loop fetched for an earlier one: a wait
// cancelled while its descriptor became readable frees its reactor state, the next
// wait (another descriptor) gets that state back, and the event still queued for it
// completes the new wait. The store's client then took a WAIT as answered and waited
// for an answer no one owed it ("did not answer within 10 s", after a re-rendezvous).
TEST(LoopWaits, AWaitIsNotWokenByAnEarlierWaitsReadiness) {
  boost::asio::io_context io(1);
  SocketPair first, second;
  CancelSignal first_cancel, second_cancel;
  std::optional<bool> second_ready;
  boost::asio::co_spawn(
      io,
      [&]() -> Task<void> {
        bool cancelled = false;
        try {
          co_await wait_readable(first.fd[0], Clock::now() + std::chrono::seconds(30),
                                 first_cancel);
        } catch (const Error&) {
          cancelled = true;
        }
        EXPECT_TRUE(cancelled);
        second_ready = co_await wait_readable(
            second.fd[0], Clock::now() + std::chrono::milliseconds(200), second_cancel);
      },
      boost::asio::detached);
  // A timer's handler comes from the loop's poll: the cancel it makes completes the
  // first wait after the loop's next poll, which finds the first descriptor readable.
  boost::asio::steady_timer timer(io, std::chrono::milliseconds(20));
  timer.async_wait([&](const boost::system::error_code&) {
    ASSERT_EQ(::write(first.fd[1], "x", 1), 1);
    first_cancel.cancel();
  });
  io.run();
  ASSERT_TRUE(second_ready.has_value());
  EXPECT_FALSE(*second_ready) << "nothing was ever written to the second descriptor";
}

// The same for a handler's wait (a batch's end, a tool's exit, the controller's stdin).
TEST(LoopWaits, AHandlersWaitIsNotWokenByAnEarlierWaitsReadiness) {
  boost::asio::io_context io(1);
  SocketPair first, second;
  using Descriptor = boost::asio::posix::stream_descriptor;
  auto watched = std::make_unique<Descriptor>(io, first.fd[0]);
  Descriptor later(io);
  std::optional<boost::system::error_code> woken;
  watched->async_wait(Descriptor::wait_read, [&](const boost::system::error_code& ec) {
    EXPECT_EQ(ec, boost::asio::error::operation_aborted);
    watched->release();
    later.assign(second.fd[0]);
    when_ready(later, Descriptor::wait_read,
               [&](const boost::system::error_code& e) { woken = e; });
  });
  boost::asio::steady_timer timer(io, std::chrono::milliseconds(20));
  timer.async_wait([&](const boost::system::error_code&) {
    ASSERT_EQ(::write(first.fd[1], "x", 1), 1);
    watched->cancel();
  });
  boost::asio::steady_timer end(io, std::chrono::milliseconds(200));
  end.async_wait([&](const boost::system::error_code&) { later.cancel(); });
  io.run();
  later.release();
  ASSERT_TRUE(woken.has_value());
  EXPECT_EQ(*woken, boost::asio::error::operation_aborted)
      << "nothing was ever written to the second descriptor";
}

// On a busy loop the deadline's handler may run before the wait learns that its
// descriptor is ready: a wait whose answer is there by then is ready, not run out (the
// store's client withdrew such a WAIT, a round trip more for every node of a large
// round whose 1 s waits ended as it completed).
TEST(LoopWaits, AnAnswerThereAsTheDeadlinePassesIsReady) {
  boost::asio::io_context io(1);
  SocketPair pair;
  CancelSignal cancel;
  std::optional<bool> ready;
  auto start = Clock::now();
  // Due after the wait's deadline: run after its handler, in the same turn of the loop.
  boost::asio::steady_timer answer(io, start + std::chrono::milliseconds(30));
  answer.async_wait([&](const boost::system::error_code&) {
    ASSERT_EQ(::write(pair.fd[1], "x", 1), 1);
  });
  boost::asio::co_spawn(
      io,
      [&]() -> Task<void> {
        ready = co_await wait_readable(pair.fd[0], start + std::chrono::milliseconds(10), cancel);
      },
      boost::asio::detached);
  // The loop is busy past both: they are handled one after the other, the deadline first.
  boost::asio::post(io, [] { std::this_thread::sleep_for(std::chrono::milliseconds(60)); });
  io.run();
  ASSERT_TRUE(ready.has_value());
  EXPECT_TRUE(*ready) << "the answer was there when the wait returned";
}

// Whether `fd` is readable within 30 s, as wait_readable() says on a loop of its own.
bool readable(int fd) {
  CancelSignal cancel;
  return testing::run_task(wait_readable(fd, Clock::now() + std::chrono::seconds(30), cancel));
}

TEST(LoopWaits, AReadableDescriptorIsReady) {
  SocketPair pair;
  ASSERT_EQ(::write(pair.fd[1], "x", 1), 1);
  EXPECT_TRUE(readable(pair.fd[0]));
}

TEST(LoopWaits, AClosedPeerCountsAsReadable) {
  SocketPair pair;
  ::shutdown(pair.fd[1], SHUT_WR);
  EXPECT_TRUE(readable(pair.fd[0])) << "a read will not block: it reports the end";
}

}  // namespace
}  // namespace ddprun
