#include "rendezvous/key_reader.h"

#include <boost/asio/post.hpp>

#include "common/cancel_signal.h"
#include "net/wait_scope.h"

namespace ddprun::rendezvous {

struct KeyReader::Reads {
  explicit Reads(std::unique_ptr<store::LoopStore> store) : store(std::move(store)) {}

  std::unique_ptr<store::LoopStore> store;
  CancelSignal cancel{"the read was cancelled"};
  bool stopped = false;  // the reader is gone: no callback
  bool reading = false;  // a read is in progress on the connection
};

KeyReader::KeyReader(boost::asio::io_context& io, std::unique_ptr<store::LoopStore> store)
    : io_(io), reads_(std::make_shared<Reads>(std::move(store))) {}

KeyReader::~KeyReader() {
  reads_->stopped = true;
  reads_->cancel.cancel();
}

void KeyReader::read(std::vector<std::string> keys, OnRead on_read, OnError on_error) {
  if (reads_->reading) {  // one request at a time on a connection: this one waits its turn
    boost::asio::post(io_, [r = reads_, on_error = std::move(on_error)] {
      if (!r->stopped) on_error("a read of the store is still in progress");
    });
    return;
  }
  reads_->reading = true;
  // The coroutine keeps the reads' state (and its store) until it has ended.
  auto run = [](std::shared_ptr<Reads> r, std::vector<std::string> keys) -> Task<Values> {
    co_return co_await r->store->get_now(std::move(keys), r->cancel);
  };
  boost::asio::co_spawn(
      io_, run(reads_, std::move(keys)),
      [r = reads_, on_read = std::move(on_read), on_error = std::move(on_error)](
          const std::exception_ptr& error, Values values) {
        r->reading = false;
        if (r->stopped) return;
        if (!error) return on_read(std::move(values));
        try {
          std::rethrow_exception(error);
        } catch (const net::Interrupted&) {
          on_read(std::nullopt);
        } catch (const std::exception& e) {
          on_error(e.what());
        }
      });
}

}  // namespace ddprun::rendezvous
