#pragma once

#include <exception>
#include <optional>
#include <utility>

#include <boost/asio/io_context.hpp>

#include "common/coro.h"

namespace ddprun::testing {

/// Runs `task` on `io`'s loop until it ends (and whatever else the loop has meanwhile);
/// returns its value or throws what it threw.
template <typename T>
T run_task(boost::asio::io_context& io, Task<T> task) {
  std::optional<T> value;
  std::exception_ptr error;
  boost::asio::co_spawn(io, std::move(task), [&](std::exception_ptr e, T v) {
    error = e;
    if (!e) value = std::move(v);
  });
  io.restart();
  io.run();
  if (error) std::rethrow_exception(error);
  return std::move(*value);
}

/// The same for a task without a value.
inline void run_task(boost::asio::io_context& io, Task<void> task) {
  std::exception_ptr error;
  boost::asio::co_spawn(io, std::move(task), [&](std::exception_ptr e) { error = e; });
  io.restart();
  io.run();
  if (error) std::rethrow_exception(error);
}

/// The same on a loop of its own.
template <typename T>
T run_task(Task<T> task) {
  boost::asio::io_context io;
  return run_task(io, std::move(task));
}

}  // namespace ddprun::testing
