#include "rendezvous/key_waiter.h"

#include <thread>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>

#include "rendezvous/tcp_store_client.h"

namespace ddprun::rendezvous {

struct KeyWaiter::Wait {
  std::unique_ptr<Store> store;
  std::vector<std::string> keys;
  OnReady on_ready;
  OnError on_error;
  bool cancelled = false;  // loop thread only
  // TCPStore: the connection's descriptor, watched (not owned) by the loop.
  std::unique_ptr<boost::asio::posix::stream_descriptor> readable;
  // Other stores: the thread blocked in the wait.
  std::thread thread;

  void deliver(std::vector<std::string> values) {
    if (!cancelled) on_ready(std::move(values));
  }
  void fail(const std::string& message) {
    if (!cancelled) on_error(message);
  }
};

KeyWaiter::KeyWaiter(boost::asio::io_context& io, std::unique_ptr<Store> store,
                     std::vector<std::string> keys, OnReady on_ready, OnError on_error)
    : wait_(std::make_shared<Wait>()) {
  wait_->store = std::move(store);
  wait_->keys = std::move(keys);
  wait_->on_ready = std::move(on_ready);
  wait_->on_error = std::move(on_error);
  auto* tcp = dynamic_cast<TcpStoreClient*>(wait_->store.get());
  if (tcp != nullptr) {
    int fd = -1;
    try {
      fd = tcp->start_wait(wait_->keys);
    } catch (const std::exception& e) {
      boost::asio::post(io, [w = wait_, msg = std::string(e.what())] { w->fail(msg); });
      return;
    }
    wait_->readable = std::make_unique<boost::asio::posix::stream_descriptor>(io, fd);
    wait_->readable->async_wait(boost::asio::posix::descriptor_base::wait_read,
                                [w = wait_, tcp](const boost::system::error_code& ec) {
                                  if (w->cancelled || ec == boost::asio::error::operation_aborted)
                                    return;
                                  if (ec) return w->fail(ec.message());
                                  // The answer is there: reading it and the values is one quick
                                  // round trip.
                                  try {
                                    tcp->finish_wait();
                                    w->deliver(tcp->multi_get_now(w->keys));
                                  } catch (const std::exception& e) {
                                    w->fail(e.what());
                                  }
                                });
    return;
  }
  Store* s = wait_->store.get();
  std::weak_ptr<Wait> weak = wait_;
  wait_->thread = std::thread([&io, s, keys = wait_->keys, weak] {
    auto post = [&io, weak](std::function<void(Wait&)> f) {
      boost::asio::post(io, [weak, f = std::move(f)] {
        if (auto w = weak.lock()) f(*w);
      });
    };
    try {
      auto values = s->multi_get(keys, std::chrono::hours(24 * 365));
      post([values = std::move(values)](Wait& w) mutable { w.deliver(std::move(values)); });
    } catch (const std::exception& e) {
      post([msg = std::string(e.what())](Wait& w) { w.fail(msg); });
    }
  });
}

KeyWaiter::~KeyWaiter() {
  wait_->cancelled = true;
  if (wait_->readable) {
    boost::system::error_code ignored;
    wait_->readable->cancel(ignored);
    wait_->readable->release();  // the store client owns and closes the descriptor
  }
  if (wait_->thread.joinable()) {
    wait_->store->interrupt();
    wait_->thread.join();
  }
  // Closed now, not when the cancelled handler (which holds the Wait) next runs: a
  // store waiting for its clients to leave must not wait for this one.
  wait_->store.reset();
}

}  // namespace ddprun::rendezvous
