// libFuzzer target for how ddprun reads an NCCL flight recorder's dump (a file a worker
// wrote): any bytes are either read as a pickle or refused with one PickleError, and
// any pickle or JSON either summarizes or is refused; nothing else escapes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "agent/hang/flight_recorder.h"
#include "agent/hang/pickle_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    (void)ddprun::agent::read_pickle(bytes).dump(-1, ' ', false,
                                                  nlohmann::json::error_handler_t::replace);
  } catch (const ddprun::agent::PickleError&) {
  }
  if (auto record = ddprun::agent::read_flight_record(bytes)) {
    (void)ddprun::agent::to_json(*record).dump();
    for (const auto& g : record->groups) (void)ddprun::agent::describe_collective(g);
  }
  return 0;
}
