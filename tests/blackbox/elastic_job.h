#pragma once

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/blackbox/ddprun_process.h"

namespace ddprun::test {

// One agent of job `id`: c10d at 127.0.0.1:port, or etcd at `endpoint`.
struct Job {
  int port = free_port();
  std::string id = "job" + std::to_string(port);
  std::string nnodes;
  std::string backend = "c10d";
  std::string endpoint;  // "" = 127.0.0.1:<port>
  std::string local_addr = "127.0.0.1";  // what the agent advertises (ranks sort by it)
  // A node is judged dead after 3 s of silence and a store call gives up after 10 s:
  // short for a test, yet long enough that a sanitized build on a loaded 2-core machine
  // is never taken for a dead node or a lost store.
  std::string conf =
      "last_call_timeout=0.3,keep_alive_interval=0.1,keep_alive_max_attempt=30,"
      "join_timeout=20,read_timeout=10";

  // ddprun's flags for this agent, then `command` (the program and its arguments).
  std::vector<std::string> agent_running(std::vector<std::string> flags,
                                         const std::vector<std::string>& command,
                                         std::optional<bool> is_host = std::nullopt) const {
    std::string c = conf;
    if (is_host) c += std::string(",is_host=") + (*is_host ? "1" : "0");
    std::vector<std::string> args{
        "--nnodes=" + nnodes,
        "--rdzv_backend=" + backend,
        "--rdzv_endpoint=" + (endpoint.empty() ? "127.0.0.1:" + std::to_string(port) : endpoint),
        "--rdzv_id=" + id,
        "--local_addr=" + local_addr,
        "--rdzv_conf=" + c};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), command.begin(), command.end());
    return args;
  }

  // An agent running the test worker with `worker` arguments.
  std::vector<std::string> agent(std::vector<std::string> flags, std::vector<std::string> worker,
                                 std::optional<bool> is_host = std::nullopt) const {
    flags.push_back("--no_python");
    worker.insert(worker.begin(), test_worker_binary());
    return agent_running(std::move(flags), worker, is_host);
  }
};

// Marker files "w<world>.r<rank>.a<attempt>" the workers of `world` have written.
inline std::set<std::string> markers(const std::string& dir, int world) {
  std::set<std::string> out;
  std::string prefix = "w" + std::to_string(world) + ".";
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::string name = e.path().filename();
    if (name.rfind(prefix, 0) == 0) out.insert(name);
  }
  return out;
}

inline bool world_running(const std::string& dir, int world, int attempt) {
  for (int r = 0; r < world; ++r) {
    std::string name =
        "w" + std::to_string(world) + ".r" + std::to_string(r) + ".a" + std::to_string(attempt);
    if (!std::filesystem::exists(dir + "/" + name)) return false;
  }
  return true;
}

}  // namespace ddprun::test
