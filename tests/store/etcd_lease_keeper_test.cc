// EtcdLeaseKeeper against a fake etcd whose answers are slow: a renewal waits for its
// answer while the lease lasts, and a lease etcd says is gone is taken again.

#include "store/etcd/etcd_lease_keeper.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "store/etcd/etcd_endpoint.h"
#include "tests/helpers/free_port.h"

namespace ddprun::store {
namespace {

using namespace std::chrono_literals;

// The lease API of etcd's JSON gateway, each answer `delay` late: keep-alives renew
// lease 7 with `ttl` ("0": etcd no longer holds it), grants give lease 8. Remembers on
// which connection each request came.
class SlowLeaseServer {
 public:
  SlowLeaseServer(std::chrono::milliseconds delay, std::string ttl)
      : delay_(delay), ttl_(std::move(ttl)) {
    fd_ = test::listen_on_loopback(port_);
    acceptor_ = std::thread([this] { accept_all(); });
  }
  ~SlowLeaseServer() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      for (int c : connections_) ::shutdown(c, SHUT_RDWR);
    }
    changed_.notify_all();
    acceptor_.join();
    for (auto& t : sessions_) t.join();
    for (int c : connections_) ::close(c);
    ::close(fd_);
  }

  std::vector<EtcdEndpoint> endpoints() const {
    return parse_etcd_endpoints("127.0.0.1:" + std::to_string(port_));
  }
  struct Request {
    size_t connection;
    std::string path;
  };
  // Waits (20 s at most) until `n` keep-alives were answered; the requests so far.
  std::vector<Request> after_answered(size_t n) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, 20s, [&] { return answered_ >= n; });
    return requests_;
  }

 private:
  void accept_all() {
    while (true) {
      pollfd p{fd_, POLLIN, 0};
      ::poll(&p, 1, 50);
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      if ((p.revents & POLLIN) == 0) continue;
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      connections_.push_back(c);
      size_t index = connections_.size() - 1;
      sessions_.emplace_back([this, c, index] { serve(c, index); });
    }
  }

  // One request after another on connection `c`, each answered `delay_` late.
  void serve(int c, size_t index) {
    std::string in;
    char buf[4096];
    while (true) {
      size_t head_end = in.find("\r\n\r\n");
      size_t length_at = in.find("Content-Length: ");
      if (head_end != std::string::npos && length_at != std::string::npos) {
        size_t length = std::stoul(in.substr(length_at + 16));
        if (in.size() >= head_end + 4 + length) {
          std::string path = in.substr(5, in.find(' ', 5) - 5);
          in.erase(0, head_end + 4 + length);
          if (!answer(c, index, path)) return;
          continue;
        }
      }
      ssize_t n = ::read(c, buf, sizeof(buf));
      if (n <= 0) return;
      in.append(buf, static_cast<size_t>(n));
    }
  }

  bool answer(int c, size_t index, const std::string& path) {
    std::unique_lock lock(mutex_);
    requests_.push_back({index, path});
    if (changed_.wait_for(lock, delay_, [this] { return stopping_; })) return false;
    std::string body = "{}";
    if (path == "/v3/lease/keepalive") body = R"({"result":{"ID":"7","TTL":")" + ttl_ + R"("}})";
    if (path == "/v3/lease/grant") body = R"({"ID":"8","TTL":"3"})";
    std::string reply = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n" + body;
    bool sent = ::write(c, reply.data(), reply.size()) == static_cast<ssize_t>(reply.size());
    if (path == "/v3/lease/keepalive") ++answered_;
    changed_.notify_all();
    return sent;
  }

  const std::chrono::milliseconds delay_;
  const std::string ttl_;
  int fd_ = -1;
  int port_ = 0;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  std::vector<int> connections_;
  std::vector<std::thread> sessions_;
  std::vector<Request> requests_;
  std::thread acceptor_;  // last: started once the rest is
  size_t answered_ = 0;
};

// A keeper as an agent makes it, interval 1 s: a client timeout of 2 s (its attempts a
// third of that each where one call's timeout splits them); the lease 5 s, so that a
// renewal may wait 3 s or more for its answer.
std::unique_ptr<EtcdLeaseKeeper> keeper(const SlowLeaseServer& etcd,
                                        const EtcdLeaseKeeper::Regained& regained) {
  return std::make_unique<EtcdLeaseKeeper>(std::make_unique<EtcdClient>(etcd.endpoints(), 2s), 7,
                                           5s, EtcdLeaseKeeper::Clock::now(), 1s, regained);
}

// Each answer takes 1 s, longer than a third of the client's timeout: the keeper waits
// for it on the connection it asked on (the lease lasts), where giving up and asking
// again would never get one through.
TEST(EtcdLeaseKeeperTest, ARenewalWaitsForASlowAnswerWhileTheLeaseLasts) {
  SlowLeaseServer etcd(1s, "3");
  bool regained = false;
  auto k = keeper(etcd, [&](EtcdClient&, int64_t) { regained = true; });
  auto requests = etcd.after_answered(2);
  k->stop();
  ASSERT_GE(requests.size(), 2U);
  for (const auto& r : requests) {
    EXPECT_EQ(r.path, "/v3/lease/keepalive");
    EXPECT_EQ(r.connection, 0U) << "a renewal was given up and asked again";
  }
  EXPECT_FALSE(regained);
  EXPECT_EQ(k->lease(), 7);
}

// etcd no longer holds the lease (TTL 0): a new one is granted and handed on, so the
// holder puts its keys under it; lease() is the new one.
TEST(EtcdLeaseKeeperTest, ALeaseEtcdLostIsTakenAgainAndHandedOn) {
  SlowLeaseServer etcd(0ms, "0");
  std::mutex mutex;
  std::vector<int64_t> handed;
  auto k = keeper(etcd, [&](EtcdClient&, int64_t lease) {
    std::lock_guard lock(mutex);
    handed.push_back(lease);
  });
  auto requests = etcd.after_answered(1);
  for (int i = 0; i < 2000 && k->lease() != 8; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(k->stop(), 8);
  std::lock_guard lock(mutex);
  ASSERT_FALSE(handed.empty());
  EXPECT_EQ(handed.front(), 8);
}

// A renewal in flight (etcd silent) ends with stop(), which hands back the lease held.
TEST(EtcdLeaseKeeperTest, StopEndsARenewalInFlight) {
  SlowLeaseServer etcd(60s, "3");
  auto k = keeper(etcd, [](EtcdClient&, int64_t) {});
  auto start = EtcdLeaseKeeper::Clock::now();
  while (etcd.after_answered(0).empty() && EtcdLeaseKeeper::Clock::now() - start < 20s) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(k->stop(), 7);
}

}  // namespace
}  // namespace ddprun::store
