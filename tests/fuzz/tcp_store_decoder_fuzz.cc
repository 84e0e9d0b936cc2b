// libFuzzer target for the TCP store's request decoder: the input is split into
// chunks at positions taken from its first byte, as a network would, and every
// decoded request must respect the protocol's limits.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "store/tcpstore/tcp_store_decoder.h"

using namespace ddprun::store::tcpstore;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  size_t chunk = 1 + data[0] % 64;
  RequestDecoder decoder;
  Request request;
  for (size_t off = 1; off < size; off += chunk) {
    size_t n = size - off < chunk ? size - off : chunk;
    decoder.feed(reinterpret_cast<const char*>(data + off), n);
    RequestDecoder::Status s;
    while ((s = decoder.next(request)) == RequestDecoder::Status::kReady) {
      if (request.keys.size() > kMaxKeysPerRequest) abort();
      for (const auto& k : request.keys)
        if (k.size() > kMaxKeySize) abort();
      for (const auto& v : request.values)
        if (v.size() > kMaxValueSize) abort();
    }
    if (s == RequestDecoder::Status::kBad) return 0;
  }
  return 0;
}
