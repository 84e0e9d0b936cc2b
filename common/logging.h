#pragma once

#include <string>

namespace ddprun {

/// Configures the process-wide spdlog logger: stderr, lines tagged with the agent's
/// role and pid. `level` is one of spdlog's names (trace..off); an unknown name
/// throws UsageError. Not thread-safe: call once from main before starting threads.
void setup_logging(const std::string& level);

/// Re-tags log lines once the node rank is known ("[ddprun node 1 pid 42]").
void set_log_node_rank(int node_rank);

}  // namespace ddprun
