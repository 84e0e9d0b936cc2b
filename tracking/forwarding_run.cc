#include "tracking/forwarding_run.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/host.h"

namespace ddprun::tracking {

ForwardingRun::ForwardingRun(const RunOptions& options, std::string agent_id,
                             const std::string& published)
    : NodeRun(options, std::move(agent_id)) {
  size_t nl = published.find('\n');
  std::string name = nl == std::string::npos ? options_.run_id : published.substr(nl + 1);
  std::string dir = options_.tracking_dir + "/" + name;
  place(name, dir, dir + "/parts/" + agent_id_);
  make_writable_dir(node_dir() + "/streams", options_.tracking_dir);
  nlohmann::json part{{"run_id", name}, {"agent", agent_id_}, {"host", host_name()}};
  std::ofstream(node_dir() + "/part.json") << part.dump() << "\n";
  own_.set_path(node_dir() + "/" + kAgentStream);
  own_.open_now();
  forwarder_ = std::make_unique<RecordForwarder>(node_dir(), agent_id_, options_.token);
  size_t space = published.rfind(' ', nl);
  if (nl != std::string::npos && space != std::string::npos) {
    forwarder_->set_endpoint(published.substr(0, space),
                             std::stoi(published.substr(space + 1, nl - space - 1)));
  }
  start_stream_thread();
}

void ForwardingRun::attempt_ended() {
  forwarder_->hurry();
  NodeRun::attempt_ended();
}

ForwardingRun::~ForwardingRun() { stop_stream_thread(); }

void ForwardingRun::finished(const std::string&, int, const std::string&) {
  remove_empty_files_dir();
  // Send the last events too, then (the stream thread stopped: this thread owns the
  // forwarder now) let the primary know this agent is done.
  forwarder_->hurry();
  if (watcher_) watcher_->final_pass();
  stop_stream_thread();
  bool answered = forwarder_->bye();
  if (answered && forwarder_->all_sent()) {
    std::error_code ec;
    std::filesystem::remove_all(node_dir(), ec);
    std::filesystem::remove(run_dir() + "/parts", ec);  // only when empty
    if (std::filesystem::is_empty(run_dir(), ec)) std::filesystem::remove(run_dir(), ec);
  } else {
    std::cerr << "ddprun: the primary agent " << forwarder_->endpoint()
              << " did not receive all of this node's tracking records; they are in "
              << node_dir() << ". Fold them into the run later with:\n  ddprun runs merge "
              << node_dir() << " --tracking_dir <the run's tracking directory>\n";
  }
}

}  // namespace ddprun::tracking
