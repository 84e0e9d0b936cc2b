#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "store/tcpstore/tcp_store_protocol.h"

namespace ddprun::store::tcpstore {

/// One request's bytes as a client sends them: the opcode in the server's numbering,
/// then integers in host byte order and strings as u64 length + bytes.
class RequestWriter {
 public:
  /// StoreError where the numbering has no such operation (1.13 has no MULTI_GET, ...).
  RequestWriter(Numbering n, Op op) {
    auto code = op_to_wire(n, op);
    if (!code) throw StoreError("this store protocol version has no such operation");
    put(*code);
  }
  template <typename T>
  RequestWriter& put(T v) {
    bytes_.append(reinterpret_cast<const char*>(&v), sizeof(v));
    return *this;
  }
  RequestWriter& str(const std::string& s) {
    put<uint64_t>(s.size());
    bytes_ += s;
    return *this;
  }
  RequestWriter& keys(const std::vector<std::string>& ks) {
    put<uint64_t>(ks.size());
    for (const auto& k : ks) str(k);
    return *this;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

}  // namespace ddprun::store::tcpstore
