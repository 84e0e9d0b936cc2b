// libFuzzer target for how ddprun reads etcd's replies: any bytes, as a reply body or a
// watch stream, are either read or refused with one StoreError; nothing else escapes.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "store/etcd/etcd_wire.h"

using namespace ddprun::store::etcd_wire;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  // A watch stream: one JSON object after another, split where each one ends.
  JsonScan scan;
  for (size_t from = 0, end; (end = json_object_end(text, scan)) != std::string::npos;) {
    if (end <= from || end > text.size()) __builtin_trap();
    from = end;
    scan = JsonScan{.at = end};
  }
  (void)unb64(text);
  auto j = nlohmann::json::parse(text, nullptr, false);
  try {
    read_reply("fuzz", [&] {
      (void)to_range(j);
      (void)to_kv(j);
      return int_field(j, "revision");
    });
  } catch (const ddprun::StoreError&) {
  }
  return 0;
}
