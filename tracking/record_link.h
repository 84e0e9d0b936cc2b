#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ddprun::tracking {

// How a forwarding agent sends its node's records to the primary agent, over TCP.
// Both ways a message is a frame: a 4-byte big-endian length, then that many bytes.
//   request: header JSON, '\n', then stream bytes (whole lines only)
//     {"agent":ID,"stream":NAME,"offset":N}  bytes of stream NAME starting at offset N
//     {"agent":ID,"bye":true}                 the agent has sent its last records
//   reply: JSON {"offset":N} (how far the primary holds that stream), {"ok":true}
//     for bye, or {"error":TEXT}
// Offsets make resending harmless: the primary keeps only what it does not hold yet.

inline constexpr size_t kMaxFrame = 64u << 20;
/// Forwarders cut streams into chunks of about this size (at line ends).
inline constexpr size_t kChunk = 4u << 20;

inline std::string frame_length(size_t n) {
  return {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
          static_cast<char>(n)};
}

inline size_t read_frame_length(const unsigned char* b) {
  return (size_t{b[0]} << 24) | (size_t{b[1]} << 16) | (size_t{b[2]} << 8) | size_t{b[3]};
}

/// An agent id is safe to use in a stream key and a directory name.
inline bool valid_agent_id(std::string_view id) {
  if (id.empty() || id.size() > 255 || id == "." || id == "..") return false;
  for (char c : id) {
    if (c == '/' || static_cast<unsigned char>(c) < 0x20) return false;
  }
  return true;
}

}  // namespace ddprun::tracking
