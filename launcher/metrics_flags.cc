#include "launcher/metrics_flags.h"

#include <unistd.h>

#include <filesystem>

#include "common/error.h"
#include "common/value_parsers.h"

namespace ddprun::launcher {

namespace {

// The discovery file is replaced through a file beside it: its directory must exist
// and be writable, or Prometheus would never find the job.
void check_sd_file(const std::string& flag, const std::string& path) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (fs::is_directory(fs::path(path), ec)) {
    throw UsageError(flag + "=" + path + ": is a directory; name the file Prometheus reads");
  }
  if (!fs::is_directory(dir, ec)) {
    throw UsageError(flag + "=" + path + ": its directory " + dir.string() + " does not exist");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw UsageError(flag + "=" + path + ": its directory " + dir.string() +
                     " is not writable by this user");
  }
}

}  // namespace

void fill_metrics_options(const Values& v, agent::AgentConfig::Metrics& m) {
  if (v.given("metrics_port")) {
    int port = parse_int(v.source("metrics_port"), v.str("metrics_port"));
    if (port < 0 || port > 65535) {
      throw UsageError(v.source("metrics_port") + "=" + v.str("metrics_port") +
                       ": expected a port number from 0 to 65535 (0: a free one)");
    }
    m.port = static_cast<uint16_t>(port);
  }
  m.host = v.str("metrics_host");
  if (m.host.empty()) throw UsageError(v.source("metrics_host") + "=: must not be empty");
  if (v.given("metrics_host") && !m.port) {
    throw UsageError(v.source("metrics_host") + "=" + m.host +
                     ": needs --metrics_port (the port to listen on there)");
  }
  m.sd_file = v.str("metrics_sd_file");
  if (m.sd_file.empty()) return;
  if (!m.port) {
    throw UsageError(v.source("metrics_sd_file") + "=" + m.sd_file +
                     ": needs --metrics_port (the endpoints it lists)");
  }
  check_sd_file(v.source("metrics_sd_file"), m.sd_file);
}

}  // namespace ddprun::launcher
