// libFuzzer target for the rendezvous flags (--nnodes, --rdzv_backend, --rdzv_endpoint,
// --rdzv_conf, ...): any values are either parsed or refused with one UsageError naming
// the flag; nothing else escapes. The input's lines are the flags' values, in order.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "common/error.h"
#include "rendezvous/rendezvous_params.h"

using namespace ddprun::rendezvous;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream lines(std::string(reinterpret_cast<const char*>(data), size));
  RendezvousFlags f;
  f.nnodes.value = "1";
  f.rdzv_backend.value = "static";
  f.rdzv_id.value = "none";
  f.node_rank.value = "0";
  f.master_addr.value = "127.0.0.1";
  f.master_port.value = "29500";
  FlagValue* fields[] = {&f.nnodes,      &f.rdzv_backend, &f.rdzv_endpoint,
                         &f.rdzv_conf,   &f.node_rank,    &f.master_addr,
                         &f.master_port, &f.local_addr,   &f.rdzv_id};
  const char* names[] = {"--nnodes",      "--rdzv_backend", "--rdzv_endpoint",
                         "--rdzv_conf",   "--node_rank",    "--master_addr",
                         "--master_port", "--local_addr",   "--rdzv_id"};
  std::string line;
  for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); ++i) {
    fields[i]->source = names[i];
    if (!std::getline(lines, line)) break;
    fields[i]->value = line;
    fields[i]->given = true;
  }
  f.standalone = size > 0 && data[0] == '!';
  try {
    RendezvousParams p = parse_rendezvous(f);
    if (p.min_nodes < 1 || p.max_nodes < p.min_nodes) __builtin_trap();
  } catch (const ddprun::UsageError&) {
  }
  return 0;
}
