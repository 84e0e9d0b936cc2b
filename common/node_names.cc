#include "common/node_names.h"

#include <algorithm>
#include <optional>

namespace ddprun {
namespace {

struct IdParts {
  std::string address;
  std::string pid;
};

// "<address>/<pid>/<port>": the address may hold '/' of its own (never a pid's digits
// then a port's); anything else is no agent's id.
std::optional<IdParts> split_id(const std::string& id) {
  size_t port_at = id.rfind('/');
  if (port_at == std::string::npos || port_at == 0) return std::nullopt;
  size_t pid_at = id.rfind('/', port_at - 1);
  if (pid_at == std::string::npos || pid_at == 0) return std::nullopt;
  std::string pid = id.substr(pid_at + 1, port_at - pid_at - 1);
  if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  pid.erase(0, std::min(pid.find_first_not_of('0'), pid.size() - 1));  // zero-padded
  return IdParts{id.substr(0, pid_at), pid};
}

}  // namespace

std::string node_name(const std::string& id, const std::vector<std::string>& others) {
  auto parts = split_id(id);
  if (!parts) return id;
  bool shared = std::any_of(others.begin(), others.end(), [&](const std::string& other) {
    auto o = split_id(other);
    return other != id && o && o->address == parts->address;
  });
  return shared ? parts->address + " (pid " + parts->pid + ")" : parts->address;
}

std::string node_names(const std::vector<std::string>& ids, std::vector<std::string> others) {
  others.insert(others.end(), ids.begin(), ids.end());
  std::string names;
  for (const auto& id : ids) names += (names.empty() ? "" : ", ") + node_name(id, others);
  return names;
}

}  // namespace ddprun
