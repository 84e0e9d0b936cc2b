#include "store/tcpstore/tcp_store_server.h"

#include <sys/resource.h>

#include <algorithm>
#include <future>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/loop_waits.h"
#include "common/thread_name.h"
#include "net/listen.h"
#include "net/peer_address.h"
#include "store/store.h"
#include "store/tcpstore/tcp_store_session.h"
#include "net/token_gate.h"

namespace asio = boost::asio;
using asio::ip::tcp;

namespace ddprun::store {
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
  Impl(const std::string& host, uint16_t port, std::string token, Guests guests,
       net::TokenHandout handout)
      : acceptor_(net::open_acceptor(io_, host, port)),
        port_(acceptor_.local_endpoint().port()),
        gate_(io_, std::move(token), "store", std::move(handout)),
        guests_(guests) {
    raise_fd_limit();
    do_accept();
    thread_ = std::thread([this] {
      name_this_thread("ddprun-store");
      io_.run();
    });
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
    // Stopped first: no handler runs any more, so this thread may close what they used
    // (one wake-up of the server's thread, not a round trip and then one). Handlers of
    // the closed sessions need not run; io_ (declared first, destroyed last) frees them.
    io_.stop();
    try {
      thread_.join();
      boost::system::error_code ignored;
      acceptor_.close(ignored);
      accept_retry_.cancel();
      for (auto& [ptr, weak] : sessions_)
        if (auto s = weak.lock()) s->close();
      sessions_.clear();
      held_.clear();
    } catch (const std::exception& e) {  // a destructor must not throw; the sockets go with io_
      spdlog::warn("store: while shutting down: {}", e.what());
    }
  }

  uint16_t port() const { return port_; }

  void stop() { io_.stop(); }

  size_t clear_except(const std::string& keep_prefix) {
    return run_on_io([&] {
      close_gone_clients();
      return state_.table.erase_all_except(keep_prefix);
    });
  }

  size_t erase_prefix(const std::string& prefix) {
    return run_on_io([&] { return state_.table.erase_prefix(prefix); });
  }

  size_t edit_keys(const std::function<size_t(KeyValueTable&)>& edit) {
    return run_on_io([&] { return edit(state_.table); });
  }

  size_t close_connections() {
    return run_on_io([&] {
      size_t n = 0;
      for (auto& [ptr, weak] : sessions_) {
        auto session = weak.lock();
        if (session && !session->closed()) {
          session->close();
          ++n;
        }
      }
      sessions_.clear();
      return n;
    });
  }

  // Resolved here, on the caller's thread (a host name may take a lookup); one that
  // does not resolve admits nothing more, and says so.
  void admit_only(const std::vector<std::string>& hosts) {
    std::vector<asio::ip::address> addresses;
    asio::io_context io;
    tcp::resolver resolver(io);
    for (const auto& host : hosts) {
      boost::system::error_code ec;
      for (const auto& e : resolver.resolve(host, "", ec)) {
        addresses.push_back(net::unmapped(e.endpoint().address()));
      }
      if (ec) spdlog::warn("store: cannot resolve node address {}: {}", host, ec.message());
    }
    run_on_io([&] { members_ = std::move(addresses); });
  }

  std::vector<std::pair<std::string, uint64_t>> request_counts() const {
    std::vector<std::pair<std::string, uint64_t>> out;
    for (size_t op = 0; op < tcpstore::kOpCount; ++op) {
      uint64_t n = state_.requests[op].load(std::memory_order_relaxed);
      if (n > 0) out.emplace_back(tcpstore::op_name(static_cast<tcpstore::Op>(op)), n);
    }
    return out;
  }

  void hold_new_connections() {
    run_on_io([&] {
      accept_queued();  // they came before the hold
      holding_ = true;
    });
  }

  void serve_held() {
    run_on_io([&] {
      accept_queued();  // they came during the hold
      holding_ = false;
      for (auto& socket : std::exchange(held_, {})) {
        // A stopped worker's is closed unread: its requests are not for this round.
        if (!tcpstore::connection_gone(socket.native_handle())) serve(std::move(socket));
      }
    });
  }

  size_t connection_count() {
    return run_on_io([&] {
      prune();
      return sessions_.size() + held_.size();
    });
  }

 private:
  void do_accept() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (ec) return pause_accepting(ec);
      accept_failing_ = false;
      serve_admitted(std::move(socket));
      do_accept();
    });
  }

  void serve_admitted(tcp::socket socket) {
    if (!admitted(socket)) return;  // the socket closes as it goes
    auto serve_it = [this](tcp::socket s) { serve(std::move(s)); };
    if (guests_ == Guests::kMembers) {
      gate_.admit_shared(std::move(socket), serve_it, serve_it);
    } else {
      gate_.admit(std::move(socket), serve_it);
    }
  }

  bool admitted(const tcp::socket& socket) {
    if (!members_) return true;
    boost::system::error_code ec;
    auto peer = socket.remote_endpoint(ec);
    if (ec) return false;  // gone already
    auto address = net::unmapped(peer.address());
    if (net::is_loopback_peer(address) ||
        std::find(members_->begin(), members_->end(), address) != members_->end()) {
      return true;
    }
    if (refused_.insert(address).second) {
      spdlog::warn(
          "store: refused a connection from {}: not the address of a node of this "
          "job (a node that connects from another address than it advertises needs "
          "--local_addr); further ones from there are refused silently",
          address.to_string());
    }
    return false;
  }

  // Closes, unread, every connection whose client closed its end (those the kernel
  // completed but nobody accepted yet too): what a stopped worker sent and the store
  // did not read yet must not land after a clear.
  void close_gone_clients() {
    accept_queued();
    for (auto& [ptr, weak] : sessions_) {
      auto session = weak.lock();
      if (session && !session->closed() && session->client_gone()) session->close();
    }
  }

  // The connections the kernel completed that were not accepted yet.
  void accept_queued() {
    boost::system::error_code ec;
    acceptor_.non_blocking(true, ec);
    while (!ec) {
      tcp::socket socket(io_);
      acceptor_.accept(socket, ec);
      if (!ec) serve_admitted(std::move(socket));
    }
  }

  void serve(tcp::socket socket) {
    if (holding_) {
      held_.push_back(std::move(socket));  // nothing read until serve_held()
      return;
    }
    auto session = std::make_shared<tcpstore::Session>(std::move(socket), state_);
    sessions_[session.get()] = session;
    session->start();
    // Closed sessions' memory stays with their entries until pruned: prune whenever
    // the table doubled since, so the dead never outnumber the live by more than 64
    // (a job restarted a thousand times opens thousands of short connections) at an
    // amortized constant cost per accept.
    if (sessions_.size() >= next_prune_) {
      prune();
      next_prune_ = std::max<size_t>(64, 2 * sessions_.size());
    }
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
  size_t next_prune_ = 64;
  net::TokenGate gate_;  // without a token, every client is served
  Guests guests_;
  std::optional<std::vector<asio::ip::address>> members_;  // unset: every address
  std::set<asio::ip::address> refused_;                    // addresses already logged
  asio::steady_timer accept_retry_{io_};
  bool accept_failing_ = false;
  bool holding_ = false;           // hold_new_connections() until serve_held()
  std::vector<tcp::socket> held_;  // accepted meanwhile, unread
  std::thread thread_;
};

TcpStoreServer::TcpStoreServer(const std::string& host, uint16_t port, std::string token,
                               Guests guests, net::TokenHandout handout)
    : impl_(std::make_unique<Impl>(host, port, std::move(token), guests, std::move(handout))) {}

TcpStoreServer::~TcpStoreServer() = default;

uint16_t TcpStoreServer::port() const { return impl_->port(); }

void TcpStoreServer::stop() { impl_->stop(); }

size_t TcpStoreServer::close_connections() { return impl_->close_connections(); }

size_t TcpStoreServer::erase_prefix(const std::string& prefix) {
  return impl_->erase_prefix(prefix);
}

size_t TcpStoreServer::edit_keys(const std::function<size_t(KeyValueTable&)>& edit) {
  return impl_->edit_keys(edit);
}

size_t TcpStoreServer::clear_except(const std::string& keep_prefix) {
  return impl_->clear_except(keep_prefix);
}

void TcpStoreServer::admit_only(const std::vector<std::string>& addresses) {
  impl_->admit_only(addresses);
}

void TcpStoreServer::hold_new_connections() { impl_->hold_new_connections(); }

void TcpStoreServer::serve_held() { impl_->serve_held(); }

size_t TcpStoreServer::connection_count() { return impl_->connection_count(); }

std::vector<std::pair<std::string, uint64_t>> TcpStoreServer::request_counts() const {
  return impl_->request_counts();
}

Task<void> TcpStoreServer::connections_at_most(size_t n, std::chrono::milliseconds max,
                                               CancelSignal& cancel) {
  auto deadline = std::chrono::steady_clock::now() + max;
  try {
    while (connection_count() > n && std::chrono::steady_clock::now() < deadline) {
      co_await sleep_for(std::chrono::milliseconds(10), cancel);
    }
  } catch (const Error&) {
    // cancelled: the caller goes on now
  }
}

}  // namespace ddprun::store
