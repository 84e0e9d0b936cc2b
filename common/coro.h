#pragma once

// Asio's C++20 coroutines, as every coroutine of ddprun includes them: include this
// before any other of Asio's coroutine headers. Boost 1.74, Debian's, needs two things
// it does not do itself: <utility> before awaitable.hpp (which uses std::exchange), and,
// under clang, BOOST_ASIO_HAS_CO_AWAIT (it looks for clang's coroutines only under the
// Coroutines TS; clang 14 has the standard ones). Later Boost releases find both alone.

#include <coroutine>
#include <utility>

#if defined(__clang__) && defined(__cpp_impl_coroutine) && !defined(BOOST_ASIO_HAS_CO_AWAIT)
#define BOOST_ASIO_HAS_CO_AWAIT 1
#endif

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace ddprun {

/// A coroutine that runs on an io_context's loop (co_spawn it there): each co_await
/// is a completion of that loop.
template <typename T = void>
using Task = boost::asio::awaitable<T>;

}  // namespace ddprun
