#include "launcher/ssh_flags.h"

#include <fstream>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/value_parsers.h"

namespace ddprun::launcher {
namespace {

// The controller's own flags: never passed on.
const std::set<std::string> kControllerFlags = {
    "nnodes",        "hostfile",    "hosts",       "include",     "exclude", "ssh_cmd",
    "remote_ddprun", "ssh_timeout", "master_addr", "master_port", "rdzv_id",
    "ssh_keepalive"};
// The rendezvous the controller decides for every host.
const std::set<std::string> kRefused = {"node_rank", "rdzv_backend", "rdzv_endpoint",
                                        "rdzv_conf", "standalone",   "stop_on_stdin_close",
                                        "stdin_timeout"};

std::vector<HostSlots> read_hosts(const Values& v) {
  if (v.given("hostfile") && v.given("hosts")) {
    throw UsageError("--hostfile and --hosts cannot be used together");
  }
  if (v.given("hosts")) return parse_host_list(v.source("hosts"), v.str("hosts"));
  const std::string& path = v.str("hostfile");
  std::ifstream in(path);
  if (!in) throw UsageError(v.source("hostfile") + "=" + path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return parse_hostfile(path, text.str());
}

}  // namespace

std::optional<SshJob> read_ssh_job(const Values& v, const EnvLookup& env,
                                   const std::vector<OptionTokens>& options,
                                   const std::vector<std::string>& exports,
                                   const std::vector<std::string>& script_and_args) {
  if (!v.given("hostfile") && !v.given("hosts")) {
    if (!exports.empty()) throw UsageError("--export needs --hostfile or --hosts");
    return std::nullopt;
  }
  SshJob job;
  job.hosts = filter_hosts(read_hosts(v), v.str("include"), v.str("exclude"));
  for (const auto& name : kRefused) {
    if (v.from_user(name)) {
      throw UsageError(v.source(name) +
                       ": --hostfile/--hosts start one node per host and "
                       "set the rendezvous themselves");
    }
  }
  std::string ssh = v.given("ssh_cmd") ? v.str("ssh_cmd") : env("DDPRUN_SSH").value_or("ssh");
  job.ssh_cmd.clear();
  std::istringstream words(ssh);
  for (std::string w; words >> w;) job.ssh_cmd.push_back(w);
  if (job.ssh_cmd.empty()) throw UsageError(v.source("ssh_cmd") + "=: names no command");
  job.remote_ddprun = v.str("remote_ddprun");
  double timeout = static_cast<double>(
      parse_seconds(v.source("ssh_timeout"), v.str("ssh_timeout"), false).count());
  job.ssh_timeout_s = std::max(1, static_cast<int>(timeout / 1000));
  double keepalive = static_cast<double>(
      parse_seconds(v.source("ssh_keepalive"), v.str("ssh_keepalive"), false).count());
  job.keepalive_s = std::max(1, static_cast<int>(keepalive / 1000));
  if (v.from_user("nnodes")) {
    auto [lo, hi] = parse_nnodes(v.source("nnodes"), v.str("nnodes"));
    if (lo == hi) {
      throw UsageError(v.source("nnodes") + "=" + v.str("nnodes") +
                       ": --hostfile/--hosts run one node per host; give MIN:MAX for an "
                       "elastic job, or nothing");
    }
    job.nnodes = v.str("nnodes");
  }
  if (v.from_user("master_addr")) job.master_addr = v.str("master_addr");
  if (v.from_user("master_port")) job.master_port = v.integer("master_port");
  if (v.from_user("rdzv_id")) job.run_id = v.str("rdzv_id");
  for (const auto& o : options) {
    if (kControllerFlags.count(o.name)) continue;
    if (o.name == "log_line_prefix_template") job.prefix_given = true;
    job.agent_args.insert(job.agent_args.end(), o.tokens.begin(), o.tokens.end());
  }
  job.exports = exports;
  job.script_and_args = script_and_args;
  return job;
}

}  // namespace ddprun::launcher
