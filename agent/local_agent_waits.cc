// LocalAgent's waits for the other nodes that a stop signal cuts short: defined here,
// apart from the coroutines that await them, and instantiated for the types they
// await (GCC 12's coroutine rule, docs/contributing.md).
#include "agent/local_agent_impl.h"
#include "agent/preflight/link_probe.h"

namespace ddprun::agent {

template <typename T>
Task<T> LocalAgent::Impl::unless_signalled(Task<T> task, std::function<void()> cancel) {
  stop_.begin_wait(std::move(cancel));
  std::optional<T> value;
  std::exception_ptr error;
  try {
    value = co_await std::move(task);
  } catch (...) {
    error = std::current_exception();
  }
  stop_.end_wait();
  if (stop_.signal() != 0) throw Signalled{};
  if (error) std::rethrow_exception(error);
  co_return std::move(*value);
}

namespace {

Task<bool> done(Task<void> t) {
  co_await std::move(t);
  co_return true;
}

}  // namespace

Task<void> LocalAgent::Impl::unless_signalled(Task<void> task, std::function<void()> cancel) {
  co_await unless_signalled(done(std::move(task)), std::move(cancel));
}

template Task<bool> LocalAgent::Impl::unless_signalled(Task<bool>, std::function<void()>);
template Task<std::string> LocalAgent::Impl::unless_signalled(Task<std::string>,
                                                              std::function<void()>);
template Task<rendezvous::RendezvousInfo> LocalAgent::Impl::unless_signalled(
    Task<rendezvous::RendezvousInfo>, std::function<void()>);
template Task<std::unique_ptr<rendezvous::RendezvousHandler>> LocalAgent::Impl::unless_signalled(
    Task<std::unique_ptr<rendezvous::RendezvousHandler>>, std::function<void()>);
template Task<LinkFigures> LocalAgent::Impl::unless_signalled(Task<LinkFigures>,
                                                              std::function<void()>);
template Task<std::vector<Finding>> LocalAgent::Impl::unless_signalled(Task<std::vector<Finding>>,
                                                                       std::function<void()>);
template Task<std::optional<std::chrono::milliseconds>> LocalAgent::Impl::unless_signalled(
    Task<std::optional<std::chrono::milliseconds>>, std::function<void()>);

}  // namespace ddprun::agent
