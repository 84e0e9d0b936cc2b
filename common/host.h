#pragma once

#include <unistd.h>

#include <string>

namespace ddprun {

/// This machine's host name as gethostname() gives it ("localhost" if that fails).
/// Never a DNS lookup: a closed network must not make ddprun hang.
inline std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

}  // namespace ddprun
