#include "launcher/node_address.h"

#include <netdb.h>
#include <sys/socket.h>

#include <cstdio>
#include <memory>

#include "common/error.h"

namespace ddprun::launcher {
namespace {

bool resolves(const std::string& name) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(name.c_str(), nullptr, &hints, &found) != 0) return false;
  ::freeaddrinfo(found);
  return true;
}

// Output of `scontrol show node -o NAME` ("" when scontrol is missing or fails). The
// name comes from an expanded Slurm host list: letters, digits, '-', '_' and '.' only,
// so it is safe in a shell command.
std::string scontrol_show_node(const std::string& name) {
  std::string command = "scontrol show node -o " + name + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  if (!pipe) return "";
  std::string out;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe.get())) > 0) out.append(buf, n);
  return out;
}

}  // namespace

std::optional<std::string> node_alias_address(const std::string& aliases, const std::string& name) {
  size_t pos = 0;
  while (pos < aliases.size()) {
    size_t end = aliases.find(',', pos);
    if (end == std::string::npos) end = aliases.size();
    std::string entry = aliases.substr(pos, end - pos);
    pos = end + 1;
    if (entry.compare(0, name.size() + 1, name + ":") != 0) continue;
    std::string rest = entry.substr(name.size() + 1);
    if (!rest.empty() && rest[0] == '[') {
      size_t close = rest.find(']');
      if (close != std::string::npos) return rest.substr(1, close - 1);
    }
    std::string address = rest.substr(0, rest.find(':'));
    if (!address.empty()) return address;
  }
  return std::nullopt;
}

std::optional<std::string> scontrol_node_addr(const std::string& output) {
  size_t at = output.find("NodeAddr=");
  if (at == std::string::npos) return std::nullopt;
  at += 9;
  size_t end = output.find_first_of(" \t\n", at);
  std::string address = output.substr(at, end == std::string::npos ? end : end - at);
  if (address.empty() || address == "(null)") return std::nullopt;
  return address;
}

NodeAddressLookup slurm_node_address_lookup(const EnvLookup& env) {
  return [env](const std::string& name) -> std::optional<NodeAddress> {
    if (resolves(name)) return std::nullopt;
    if (auto aliases = env("SLURM_NODE_ALIASES")) {
      if (auto address = node_alias_address(*aliases, name)) {
        return NodeAddress{*address, "SLURM_NODE_ALIASES"};
      }
    }
    // NodeAddr defaults to the name itself: that would not resolve either.
    if (auto address = scontrol_node_addr(scontrol_show_node(name)); address && *address != name) {
      return NodeAddress{*address, "scontrol's NodeAddr"};
    }
    throw UsageError("Slurm node " + name +
                     " does not resolve, is not in SLURM_NODE_ALIASES and scontrol does not know "
                     "its address: pass --master_addr (or --rdzv_endpoint)");
  };
}

}  // namespace ddprun::launcher
