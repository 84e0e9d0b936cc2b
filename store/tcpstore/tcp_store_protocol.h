#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

// PyTorch's TCPStore wire protocol (see TCPSTORE_PROTOCOL.md): integers in host byte
// order, strings as u64 length + bytes, no error replies (failure = close).
namespace ddprun::store::tcpstore {

/// Operations, independent of their on-wire numbering.
enum class Op : uint8_t {
  kValidate,
  kSet,
  kCompareSet,
  kGet,
  kAdd,
  kCheck,
  kWait,
  kGetNumKeys,
  kWatchKey,
  kDeleteKey,
  kAppend,
  kMultiGet,
  kMultiSet,
  kCancelWait,
  kPing,
  kQueuePush,
  kQueuePop,
  kQueueLen,
  kList,
  kBarrier,  // 2.x (2.14): str key, i64 members; u8 STOP_WAITING once that many came
};

constexpr size_t kOpCount = static_cast<size_t>(Op::kBarrier) + 1;

/// An operation's name, lower case ("multi_get"), as metrics label it.
constexpr const char* op_name(Op op) {
  constexpr const char* kNames[kOpCount] = {
      "validate", "set",        "compare_set", "get",        "add",       "check",  "wait",
      "num_keys", "watch_key",  "delete_key",  "append",     "multi_get", "multi_set",
      "cancel_wait", "ping",    "queue_push",  "queue_pop",  "queue_len", "list",   "barrier"};
  return static_cast<size_t>(op) < kOpCount ? kNames[static_cast<size_t>(op)] : "unknown";
}

/// torch 1.13 numbers SET as 0; 2.x inserted VALIDATE at 0 and shifted the rest.
enum class Numbering { kUnknown, kV113, kV2 };

constexpr uint32_t kValidationMagic = 0x3C85F7CE;

constexpr size_t kMaxKeySize = 8192;

/// A key ddprun's server answers a get of with its wall clock (milliseconds since the
/// epoch, as text), whatever is stored: how agents measure their clock's offset to the
/// rendezvous host. Workers' keys never start with "ddprun/".
constexpr const char* kWallClockKey = "ddprun/wall_clock_ms";
constexpr size_t kMaxValueSize = 8 * 1024 * 1024;
constexpr uint64_t kMaxKeysPerRequest = 131072;
/// ddprun's own bound on one request (a MULTI_SET within the other limits could
/// otherwise claim a terabyte).
constexpr size_t kMaxRequestSize = 64 * 1024 * 1024;
/// A connection's buffers keep at most this much memory between requests; what a
/// larger request or reply took is given back once it is done (the server holds
/// thousands of connections).
constexpr size_t kKeptBufferBytes = 16 * 1024;

constexpr uint8_t kCheckReady = 0;
constexpr uint8_t kCheckNotReady = 1;
constexpr uint8_t kStopWaiting = 0;
constexpr uint8_t kWaitCanceled = 1;

/// 1.13 WATCH_KEY events: u8 type, str key, bytes old, bytes new.
enum class WatchEvent : uint8_t { kUpdated = 0, kCreated = 1, kDeleted = 2, kRegistered = 3 };

/// The operation an opcode byte stands for, or nullopt when it means nothing.
inline std::optional<Op> op_from_wire(Numbering n, uint8_t code) {
  if (n == Numbering::kV2) {
    // 2.x dropped WATCH_KEY: codes from 8 on name the ops after it.
    int op = code >= 8 ? code + 1 : code;
    if (op > static_cast<int>(Op::kBarrier)) return std::nullopt;
    return static_cast<Op>(op);
  }
  if (code > 8) return std::nullopt;  // 1.13: SET..DELETE_KEY are 0..8
  return static_cast<Op>(code + 1);
}

/// The opcode byte of `op` (nullopt when the numbering has no such op).
inline std::optional<uint8_t> op_to_wire(Numbering n, Op op) {
  auto v = static_cast<uint8_t>(op);
  if (n == Numbering::kV2) {
    if (op == Op::kWatchKey) return std::nullopt;
    return v >= 9 ? v - 1 : v;
  }
  if (op == Op::kValidate || v > static_cast<uint8_t>(Op::kDeleteKey)) return std::nullopt;
  return v - 1;
}

}  // namespace ddprun::store::tcpstore
