#include "tracking/primary_run.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/host.h"
#include "net/listen.h"

namespace ddprun::tracking {
namespace {

// How long the primary waits for the other agents' last records at the end.
constexpr std::chrono::seconds kLastRecordsWait{5};

}  // namespace

PrimaryRun::PrimaryRun(const RunOptions& options, std::string agent_id)
    : NodeRun(options, std::move(agent_id)) {
  std::string name = options_.run_id;
  std::string dir = options_.tracking_dir + "/" + name;
  for (int n = 1;; ++n) {
    if (!std::filesystem::exists(dir)) {
      make_writable_dir(dir + "/streams", options_.tracking_dir);
      owner_lock_ = RunOwnerLock::take(dir);
      if (owner_lock_) break;
    }
    name = options_.run_id + "." + std::to_string(n);
    dir = options_.tracking_dir + "/" + name;
  }
  if (name != options_.run_id) {
    std::cerr << "ddprun: " << options_.tracking_dir << " already holds a run '" << options_.run_id
              << "'; this job's run is '" << name << "'\n";
  }
  place(name, dir, dir);
  // A run before any worker starts: one killed from then on is listed as crashed (its
  // directory, locked, is one: run_exists). The stream thread makes run.db and
  // describes the run while the agent goes on to its rendezvous and starts the workers.
  run_made_ = made_.get_future().share();
  own_.set_path(run_dir() + "/" + kLauncherStream);
  start_stream_thread();
  on_stream_thread([this] { make_run(); });
  describe(wall_seconds());
  // The first pass at once: making a file is the slow part of a write, on a disk that
  // has just seen many files deleted.
  watcher_->nudge(std::chrono::milliseconds(0));
}

PrimaryRun::~PrimaryRun() { stop_stream_thread(); }

void PrimaryRun::make_run() {
  guarded("creating the run", [&] {
    bool made = make_empty_run(run_dir());
    store_ = std::make_unique<RunStore>(run_dir(),
                                        made ? RunStore::Open::kNew : RunStore::Open::kCreate);
    ingester_ =
        std::make_unique<StreamIngester>(*store_, run_dir(), "", StreamIngester::Dir::kRun);
  });
  made_.set_value();
}

void PrimaryRun::describe(double created) {
  on_stream_thread([this, created] {
    nlohmann::json meta{{"run_id", run_name()},
                        {"rdzv_id", options_.run_id},
                        {"name", options_.run_name.empty() ? run_name() : options_.run_name},
                        {"status", "running"},
                        {"created", std::to_string(created)},
                        {"owner_pid", std::to_string(::getpid())},
                        {"owner_host", host_name()},
                        {"command", options_.command_json},
                        {"config", options_.config_json}};
    own_.add({{"k", "meta"}, {"d", std::move(meta)}});
    own_.add_event({created, "run_started", -1, -1, -1, "{}"});
  });
}

std::string PrimaryRun::serve_agents(const std::string& address) {
  run_made_.wait();  // the receiver writes into run.db
  receiver_ = std::make_unique<RecordReceiver>(
      run_dir(), options_.token, options_.listen_all ? "" : net::listen_host_for(address));
  return address + " " + std::to_string(receiver_->port()) + "\n" + run_name();
}

IngestStats PrimaryRun::pass_streams(bool final) {
  return ingester_ ? ingester_->drain(final) : IngestStats{};
}

void PrimaryRun::finished(const std::string& status, int exitcode, const std::string& root_cause) {
  remove_empty_files_dir();
  // The other agents' last records (their final events) arrive about now.
  if (receiver_) receiver_->wait_for_agents(kLastRecordsWait);
  nlohmann::json d{{"status", status}, {"exitcode", exitcode}, {"root_cause", root_cause}};
  on_stream_thread([this, d = d.dump(), wall = wall_seconds(), status, exitcode, root_cause] {
    guarded("finishing the run", [&] {
      own_.add_event({wall, "run_finished", -1, -1, -1, d});
      nlohmann::json end{{"exit_code", std::to_string(exitcode)},
                         {"root_cause", root_cause},
                         {"finished", std::to_string(wall)},
                         {"status", status}};
      own_.add({{"k", "meta"}, {"d", std::move(end)}});
    });
  });
  pending_final_.reset();
  // The thread ends while the agent ends the rest; the last pass is complete()'s, on
  // this thread, with nothing to wake.
  watcher_->stop_soon();
  finishing_ = true;
}

void PrimaryRun::complete() {
  if (!finishing_) return;
  finishing_ = false;
  watcher_->finish_here();
}

}  // namespace ddprun::tracking
