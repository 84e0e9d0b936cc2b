#include "common/logging.h"

#include <unistd.h>

#include <memory>

#include <spdlog/sinks/stdout_sinks.h>

#include "common/error.h"

namespace ddprun {
namespace {

std::shared_ptr<spdlog::logger>& notices() {
  static std::shared_ptr<spdlog::logger> logger;
  return logger;
}

// Each logger has a sink of its own: a pattern is set on a logger's sinks.
std::shared_ptr<spdlog::logger> stderr_logger(const std::string& name) {
  return std::make_shared<spdlog::logger>(name, std::make_shared<spdlog::sinks::stderr_sink_mt>());
}

void set_pattern(const std::string& node) {
  std::string tag = "[ddprun" + node + " pid " + std::to_string(::getpid()) + "] ";
  spdlog::set_pattern(tag + "%l: %v");
  notice_logger().set_pattern(tag + "%v");
}

}  // namespace

spdlog::logger& notice_logger() {
  auto& logger = notices();
  if (!logger) {
    logger = stderr_logger("notice");
    logger->set_pattern("[ddprun pid " + std::to_string(::getpid()) + "] %v");
  }
  return *logger;
}

void setup_logging(const std::string& level) {
  auto parsed = spdlog::level::from_str(level);
  // from_str maps unknown names to "off"; only accept "off" when asked for.
  if (parsed == spdlog::level::off && level != "off") {
    throw UsageError("--log_level=" + level +
                     ": expected trace, debug, info, warn, error, critical or off");
  }
  spdlog::set_default_logger(stderr_logger("ddprun"));
  spdlog::set_level(parsed);
  notice_logger().set_level(parsed);
  set_pattern("");
}

void set_log_node_rank(int node_rank) { set_pattern(" node " + std::to_string(node_rank)); }

}  // namespace ddprun
