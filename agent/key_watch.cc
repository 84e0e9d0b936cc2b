#include "agent/key_watch.h"

#include <boost/asio/post.hpp>

namespace ddprun::agent {

KeyWatch::KeyWatch(boost::asio::io_context& io, std::unique_ptr<rendezvous::Store> store,
                   std::vector<std::string> keys, OnReady on_ready, OnError on_error)
    : store_(std::move(store)), alive_(std::make_shared<bool>(true)) {
  rendezvous::Store* s = store_.get();
  std::weak_ptr<bool> alive = alive_;
  thread_ = std::thread([&io, s, keys = std::move(keys), on_ready = std::move(on_ready),
                         on_error = std::move(on_error), alive] {
    // Posted callbacks check `alive` on the io thread, where the owner lives.
    auto post = [&io, alive](std::function<void()> f) {
      boost::asio::post(io, [alive, f = std::move(f)] {
        if (alive.lock()) f();
      });
    };
    try {
      auto values = s->multi_get(keys, std::chrono::hours(24 * 365));
      post([on_ready, values = std::move(values)] { on_ready(values); });
    } catch (const std::exception& e) {
      if (!alive.lock()) return;
      post([on_error, msg = std::string(e.what())] { on_error(msg); });
    }
  });
}

KeyWatch::~KeyWatch() {
  alive_.reset();
  store_->interrupt();
  thread_.join();
}

}  // namespace ddprun::agent
