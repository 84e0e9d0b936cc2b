#pragma once

#include <string>
#include <utility>

#include <spdlog/spdlog.h>

namespace ddprun {

/// Configures the process-wide spdlog logger: stderr, lines tagged with the agent's
/// role and pid. `level` is one of spdlog's names (trace..off); an unknown name
/// throws UsageError. Not thread-safe: call once from main before starting threads.
void setup_logging(const std::string& level);

/// Re-tags log lines once the node rank is known ("[ddprun node 1 pid 42]").
void set_log_node_rank(int node_rank);

/// The logger of notice(): its lines carry the same tag and no level.
spdlog::logger& notice_logger();

/// News an operator should see at the default level that is no warning ("metrics at
/// http://...", a spare taking a place): shown where warnings are, without "warning:".
template <typename... Args>
void notice(spdlog::format_string_t<Args...> format, Args&&... args) {
  notice_logger().warn(format, std::forward<Args>(args)...);
}

}  // namespace ddprun
