#include "rendezvous/tcp_store_server.h"

#include <sys/resource.h>

#include <future>
#include <thread>
#include <unordered_map>

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "net/listen.h"
#include "rendezvous/store.h"
#include "rendezvous/tcp_store_session.h"

namespace asio = boost::asio;
using asio::ip::tcp;

namespace ddprun::rendezvous {
namespace {

// Holding thousands of connections needs more descriptors than the usual soft limit.
void raise_fd_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
}

}  // namespace

class TcpStoreServer::Impl {
 public:
  Impl(const std::string& host, uint16_t port)
      : acceptor_(net::open_acceptor(io_, host, port)), port_(acceptor_.local_endpoint().port()) {
    raise_fd_limit();
    do_accept();
    thread_ = std::thread([this] { io_.run(); });
  }

  // Runs `f` on the server's thread and returns its result.
  template <typename F>
  auto run_on_io(F f) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto result = task.get_future();
    asio::post(io_, [&task] { task(); });
    return result.get();
  }

  ~Impl() {
    run_on_io([this] {
      boost::system::error_code ignored;
      acceptor_.close(ignored);
      accept_retry_.cancel();
      for (auto& [ptr, weak] : sessions_)
        if (auto s = weak.lock()) s->close();
      sessions_.clear();
      return 0;
    });
    // Handlers of the closed sessions need not run; io_ (declared first, destroyed
    // last) frees them.
    io_.stop();
    thread_.join();
  }

  uint16_t port() const { return port_; }

  size_t clear_except(const std::string& keep_prefix) {
    return run_on_io([&] { return state_.table.erase_all_except(keep_prefix); });
  }

  size_t connection_count() {
    return run_on_io([&] {
      prune();
      return sessions_.size();
    });
  }

 private:
  void do_accept() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (ec) return pause_accepting(ec);
      accept_failing_ = false;
      auto session = std::make_shared<tcpstore::Session>(std::move(socket), state_);
      sessions_[session.get()] = session;
      session->start();
      if (sessions_.size() % 1024 == 0) prune();
      do_accept();
    });
  }

  // Out of descriptors (EMFILE/ENFILE) or another accept error: keep serving the
  // connections we have, say so once, and retry shortly instead of spinning.
  void pause_accepting(const boost::system::error_code& ec) {
    if (!accept_failing_) spdlog::warn("store: cannot accept connections: {}", ec.message());
    accept_failing_ = true;
    accept_retry_.expires_after(std::chrono::milliseconds(50));
    accept_retry_.async_wait([this](const boost::system::error_code& e) {
      if (!e) do_accept();
    });
  }

  void prune() {
    std::erase_if(sessions_, [](const auto& entry) {
      auto s = entry.second.lock();
      return !s || s->closed();
    });
  }

  asio::io_context io_{1};  // one thread runs it: Asio may skip its internal locking
  tcp::acceptor acceptor_;
  uint16_t port_;
  tcpstore::StoreState state_;
  std::unordered_map<tcpstore::Session*, std::weak_ptr<tcpstore::Session>> sessions_;
  asio::steady_timer accept_retry_{io_};
  bool accept_failing_ = false;
  std::thread thread_;
};

TcpStoreServer::TcpStoreServer(const std::string& host, uint16_t port)
    : impl_(std::make_unique<Impl>(host, port)) {}

TcpStoreServer::~TcpStoreServer() = default;

uint16_t TcpStoreServer::port() const { return impl_->port(); }

size_t TcpStoreServer::clear_except(const std::string& keep_prefix) {
  return impl_->clear_except(keep_prefix);
}

size_t TcpStoreServer::connection_count() { return impl_->connection_count(); }

void TcpStoreServer::wait_until_connections_at_most(size_t n, std::chrono::milliseconds max) {
  // Only at shutdown, so a short sleep between looks is fine.
  auto deadline = std::chrono::steady_clock::now() + max;
  while (connection_count() > n && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace ddprun::rendezvous
