#include "common/logging.h"

#include <unistd.h>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "common/error.h"

namespace ddprun {
namespace {

void set_pattern(const std::string& node) {
  spdlog::set_pattern("[ddprun" + node + " pid " + std::to_string(::getpid()) + "] %l: %v");
}

}  // namespace

void setup_logging(const std::string& level) {
  auto parsed = spdlog::level::from_str(level);
  // from_str maps unknown names to "off"; only accept "off" when asked for.
  if (parsed == spdlog::level::off && level != "off") {
    throw UsageError("--log_level=" + level +
                     ": expected trace, debug, info, warn, error, critical or off");
  }
  auto logger =
      std::make_shared<spdlog::logger>("ddprun", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  spdlog::set_default_logger(logger);
  spdlog::set_level(parsed);
  set_pattern("");
}

void set_log_node_rank(int node_rank) { set_pattern(" node " + std::to_string(node_rank)); }

}  // namespace ddprun
