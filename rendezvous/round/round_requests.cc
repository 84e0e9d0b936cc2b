#include "rendezvous/round/round_requests.h"

#include <deque>

#include <boost/asio/post.hpp>

#include "common/cancel_signal.h"
#include "common/error.h"
#include "rendezvous/round/shared_max.h"

namespace ddprun::rendezvous {

namespace {

// A request refused because too many wait: the store is slow, and the request in
// progress will say whether it is gone.
class Refused : public Error {
 public:
  Refused() : Error("too many requests wait for the store") {}
};

// Whether a request was refused (too many waited) rather than failed by the store.
bool refused(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Refused&) {
    return true;
  } catch (...) {
    return false;
  }
}

// Why a request failed, whatever it was.
std::string what_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace

struct RoundRequests::Queue {
  explicit Queue(Connect connect) : connect(std::move(connect)) {}

  Connect connect;
  std::unique_ptr<store::LoopStore> store;  // made by the first request
  std::exception_ptr failed;  // the store's error that failed the connection, for good
  CancelSignal cancel{"the request was cancelled"};
  std::deque<std::pair<Request, Answered>> waiting;
  bool stopped = false;      // the owner is gone: no callback
  bool in_progress = false;  // a request is on the connection
};

RoundRequests::RoundRequests(boost::asio::io_context& io, Connect connect)
    : io_(io), queue_(std::make_shared<Queue>(std::move(connect))) {}

RoundRequests::~RoundRequests() { stop(); }

void RoundRequests::stop() {
  queue_->stopped = true;
  queue_->waiting.clear();
  queue_->cancel.cancel();
}

void RoundRequests::ask(Request request, Answered answered, bool bounded) {
  if (queue_->stopped) return;
  if (queue_->failed) {
    boost::asio::post(io_, [q = queue_, answered = std::move(answered)] {
      if (!q->stopped) answered(q->failed);
    });
    return;
  }
  if (bounded && queue_->waiting.size() >= kMostWaiting) {
    boost::asio::post(io_, [q = queue_, answered = std::move(answered)] {
      if (!q->stopped) answered(std::make_exception_ptr(Refused()));
    });
    return;
  }
  queue_->waiting.emplace_back(std::move(request), std::move(answered));
  if (!queue_->in_progress) next(io_, queue_);
}

// Takes the oldest request waiting, if any, onto the connection.
void RoundRequests::next(boost::asio::io_context& io, const std::shared_ptr<Queue>& q) {
  q->in_progress = !q->stopped && !q->waiting.empty();
  if (!q->in_progress) return;
  auto [request, answered] = std::move(q->waiting.front());
  q->waiting.pop_front();
  // The coroutine keeps the queue (and its store) and the request until it has ended.
  auto run = [](std::shared_ptr<Queue> q, Request request) -> Task<void> {
    if (!q->store) q->store = q->connect();
    co_await request(*q->store, q->cancel);
  };
  boost::asio::co_spawn(io, run(q, std::move(request)),
                        [&io, q, answered = std::move(answered)](const std::exception_ptr& error) {
                          if (q->stopped) return;
                          bool lost = error != nullptr;
                          if (lost) q->failed = error;
                          answered(error);  // may destroy the owner: q is kept here
                          // The connection failed: the requests waiting for it fail the same way
                          // now, rather than one call timeout each.
                          while (lost && !q->stopped && !q->waiting.empty()) {
                            Answered waiting = std::move(q->waiting.front().second);
                            q->waiting.pop_front();
                            waiting(error);
                          }
                          next(io, q);
                        });
}

void RoundRequests::connect() {
  ask([](store::LoopStore&, CancelSignal&) -> Task<void> { co_return; },
      [](const std::exception_ptr&) {});
}

void RoundRequests::read(std::vector<std::string> keys, OnRead on_read, OnError on_error) {
  auto values = std::make_shared<Values>();
  ask(
      [keys = std::move(keys), values](store::LoopStore& s, CancelSignal& cancel) -> Task<void> {
        *values = co_await s.get_now(keys, cancel);
      },
      [values, on_read = std::move(on_read),
       on_error = std::move(on_error)](const std::exception_ptr& error) {
        if (!error) return on_read(std::move(*values));
        if (refused(error)) return on_read(std::nullopt);
        on_error(what_of(error));
      });
}

void RoundRequests::write(std::string key, std::string value, OnDone on_done, OnError on_error) {
  ask([key = std::move(key), value = std::move(value)](store::LoopStore& s, CancelSignal& cancel)
          -> Task<void> { co_await s.set(key, value, cancel); },
      [on_done = std::move(on_done),
       on_error = std::move(on_error)](const std::exception_ptr& error) {
        if (!error) return on_done();
        on_error(what_of(error));
      });
}

void RoundRequests::count_to(std::string counter, std::string mark, int64_t last,
                             std::string reached, Work before_reached, OnDone on_done,
                             OnError on_error) {
  ask(
      [counter = std::move(counter), mark = std::move(mark), last, reached = std::move(reached),
       before_reached = std::move(before_reached)](store::LoopStore& s,
                                                   CancelSignal& cancel) -> Task<void> {
        int64_t now = co_await s.count_in(counter, mark, cancel);
        if (now != last) co_return;
        if (before_reached) co_await before_reached(cancel);
        const std::string one = "1";  // a local: GCC 12 (docs/contributing.md) frees a temporary
                                      // made in a co_await twice
        co_await s.set(reached, one, cancel);
      },
      [on_done = std::move(on_done),
       on_error = std::move(on_error)](const std::exception_ptr& error) {
        if (!error) return on_done();
        on_error(what_of(error));
      });
}

void RoundRequests::raise(std::string key, int64_t mine, OnError on_error) {
  ask(
      [key = std::move(key), mine](store::LoopStore& s, CancelSignal& cancel) -> Task<void> {
        co_await raise_to(s, key, mine, cancel);
      },
      [on_error = std::move(on_error)](const std::exception_ptr& error) {
        if (error) on_error(what_of(error));
      });
}

void RoundRequests::compare_set(std::string key, std::string expected, std::string desired,
                                OnValue on_value, OnError on_error) {
  compare_set(
      std::move(key), std::move(expected), [desired = std::move(desired)] { return desired; },
      std::move(on_value), std::move(on_error));
}

void RoundRequests::compare_set(std::string key, std::string expected,
                                std::function<std::string()> desired, OnValue on_value,
                                OnError on_error) {
  auto held = std::make_shared<std::string>();
  ask(
      [key = std::move(key), expected = std::move(expected), desired = std::move(desired), held](
          store::LoopStore& s, CancelSignal& cancel) -> Task<void> {
        std::string value = desired();
        *held = co_await s.compare_set(key, expected, std::move(value), cancel);
      },
      [held, on_value = std::move(on_value),
       on_error = std::move(on_error)](const std::exception_ptr& error) {
        if (!error) return on_value(std::move(*held));
        on_error(what_of(error));
      });
}

// Its failure is its own (another connection's, or the state's): the round's
// connection stays good for the requests after it.
void RoundRequests::run(Work work, OnError on_error) {
  auto why = std::make_shared<std::optional<std::string>>();
  ask(
      [work = std::move(work), why](store::LoopStore&, CancelSignal& cancel) -> Task<void> {
        try {
          co_await work(cancel);
        } catch (const std::exception& e) {
          *why = e.what();
        }
      },
      [why, on_error = std::move(on_error)](const std::exception_ptr& error) {
        if (*why) return on_error(**why);
        if (error) on_error(what_of(error));  // the round's connection failed first
      },
      /*bounded=*/false);
}

void RoundRequests::after_requests(OnDone on_settled) {
  ask([](store::LoopStore&, CancelSignal&) -> Task<void> { co_return; },
      [on_settled = std::move(on_settled)](const std::exception_ptr&) { on_settled(); },
      /*bounded=*/false);
}

}  // namespace ddprun::rendezvous
