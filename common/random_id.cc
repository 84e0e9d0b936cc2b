#include "common/random_id.h"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstdint>

#include "common/error.h"

namespace ddprun {

std::string random_uuid() {
  std::array<uint8_t, 16> bytes{};
  size_t have = 0;
  while (have < bytes.size()) {  // at most 256 bytes come whole; EINTR before any
    ssize_t n = ::getrandom(bytes.data() + have, bytes.size() - have, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SystemError("getrandom for a run id", errno);
    have += static_cast<size_t>(n);
  }
  bytes[6] = static_cast<uint8_t>((bytes[6] & 0x0f) | 0x40);  // version 4
  bytes[8] = static_cast<uint8_t>((bytes[8] & 0x3f) | 0x80);  // the RFC 4122 variant
  const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 0x0f];
  }
  return out;
}

}  // namespace ddprun
