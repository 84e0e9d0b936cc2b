#include "agent/local_agent.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <optional>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <spdlog/spdlog.h>

#include "agent/key_watch.h"
#include "agent/log_dir.h"
#include "agent/orphan_guard.h"
#include "agent/worker_group_runner.h"
#include "common/logging.h"
#include "rendezvous/static_rendezvous.h"

namespace asio = boost::asio;

namespace ddprun::agent {
namespace {

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

std::unique_ptr<rendezvous::RendezvousHandler> make_rendezvous(const AgentConfig& c) {
  rendezvous::StaticRendezvous::Options o;
  o.nnodes = c.max_nodes;
  o.node_rank = c.node_rank;
  o.master_addr = c.master_addr;
  o.master_port = c.master_port;
  o.join_timeout = c.join_timeout;
  return std::make_unique<rendezvous::StaticRendezvous>(o);
}

// Another node's request to stop the round: "<exitcode>|<what happened>".
struct PeerStop {
  int exitcode = 1;
  std::string reason;

  static PeerStop parse(const std::string& value) {
    PeerStop p;
    size_t bar = value.find('|');
    try {
      p.exitcode = std::stoi(value.substr(0, bar));
    } catch (const std::exception&) {
    }
    p.reason = bar == std::string::npos ? value : value.substr(bar + 1);
    return p;
  }
};

}  // namespace

class LocalAgent::Impl {
 public:
  Impl(AgentConfig config, ProcessLauncher& launcher, OrphanGuard* guard)
      : config_(std::move(config)),
        guard_(guard),
        stop_signals_(io_, SIGINT, SIGTERM, SIGHUP),
        log_dir_(config_.log_dir, config_.run_id),
        host_(host_name()),
        runner_(io_, config_, launcher, guard, log_dir_, host_) {
    stop_signals_.add(SIGQUIT);
  }

  int run() {
    // Grandchildren orphaned by a dying worker are re-parented to us, so we can
    // reap them and nothing escapes the job.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    wait_for_stop_signals();
    for (int round = 0;; ++round) {
      rendezvous::RendezvousInfo info = rendezvous(round);
      run_attempt(info);
      if (signalled_ != 0) {
        announce_stop(round, 128 + signalled_,
                      "node " + std::to_string(config_.node_rank) + " (" + host_ + ") received " +
                          signal_name(signalled_));
        return finish(128 + signalled_);
      }
      const auto& failures = runner_.failures();
      if (failures.empty() && !peer_stop_) return finish_success(info);
      if (round >= config_.spec.max_restarts) return finish_failure(failures);
      std::string why = failures.empty() ? peer_stop_->reason
                                         : "rank " + std::to_string(failures.front().global_rank) +
                                               " exited with " +
                                               std::to_string(failures.front().exitcode);
      spdlog::warn("worker group failed ({}); restarting, attempt {} of {}", why, round + 1,
                   config_.spec.max_restarts);
    }
  }

 private:
  bool multi_node() const { return config_.max_nodes > 1; }

  std::string stop_key(int round) const { return handler_->round_prefix(round) + "stop"; }
  std::string done_key(int round, int node) const {
    return handler_->round_prefix(round) + "done/" + std::to_string(node);
  }

  // Joins the round on a helper thread while this thread keeps handling signals: a
  // Ctrl-C while other nodes are awaited ends ddprun at once (no worker runs now).
  rendezvous::RendezvousInfo rendezvous(int round) {
    std::optional<rendezvous::RendezvousInfo> result;
    std::exception_ptr error;
    std::atomic<bool> finished{false};
    std::thread joiner([&] {
      try {
        if (!handler_) handler_ = make_rendezvous(config_);
        result = handler_->next_rendezvous(round, config_.spec.local_world_size);
      } catch (...) {
        error = std::current_exception();
      }
      finished = true;
      asio::post(io_, [] {});  // wake the loop
    });
    while (!finished && signalled_ == 0) io_.run_one();
    if (!finished) {
      spdlog::warn("received {} while waiting for the other nodes", signal_name(signalled_));
      std::cerr << std::flush;
      if (guard_) guard_->release();
      std::_Exit(128 + signalled_);
    }
    joiner.join();
    if (error) std::rethrow_exception(error);
    if (multi_node()) set_log_node_rank(result->group_rank);
    return *result;
  }

  WorkerGroup make_group(const rendezvous::RendezvousInfo& info) const {
    WorkerGroup g;
    g.group_rank = info.group_rank;
    g.group_world_size = info.group_world_size;
    g.master_addr = info.master_addr;
    g.master_port = info.master_port;
    g.use_agent_store = true;
    g.restart_count = info.round;
    int base = info.rank_offset(info.group_rank);
    int world = info.world_size();
    for (int i = 0; i < config_.spec.local_world_size; ++i) {
      Worker w;
      w.local_rank = i;
      w.global_rank = base + i;
      w.role_rank = w.global_rank;
      w.world_size = world;
      w.role_world_size = world;
      g.workers.push_back(w);
    }
    return g;
  }

  void run_attempt(const rendezvous::RendezvousInfo& info) {
    peer_stop_.reset();
    bool done = false;
    if (multi_node()) {
      stop_watch_ = std::make_unique<KeyWatch>(
          io_, handler_->connect(), std::vector<std::string>{stop_key(info.round)},
          [this](std::vector<std::string> v) { on_peer_stop(PeerStop::parse(v[0])); },
          [this](std::string err) { on_store_lost(err); });
    }
    runner_.start(
        make_group(info),
        [this, round = info.round](const FailureRecord& f) {
          announce_stop(round, f.exitcode < 0 ? 128 - f.exitcode : f.exitcode,
                        "rank " + std::to_string(f.global_rank) + " (local_rank " +
                            std::to_string(f.local_rank) + ") on node " +
                            std::to_string(config_.node_rank) + " (" + host_ +
                            ") exited with " + std::to_string(f.exitcode));
        },
        [&done] { done = true; });
    while (!done) io_.run_one();
    stop_watch_.reset();
  }

  // Tells the other nodes to stop this round (fail-stop): their watches fire at once.
  void announce_stop(int round, int exitcode, const std::string& reason) {
    if (!multi_node() || !handler_) return;
    try {
      handler_->store().compare_set(stop_key(round), "", std::to_string(exitcode) + "|" + reason);
    } catch (const std::exception& e) {
      spdlog::warn("could not tell the other nodes to stop: {}", e.what());
    }
  }

  void on_peer_stop(PeerStop stop) {
    if (!runner_.failures().empty() || signalled_) return;  // our own announcement
    spdlog::warn("stopping: {}", stop.reason);
    peer_stop_ = std::move(stop);
    runner_.stop(SIGTERM);
  }

  void on_store_lost(const std::string& err) {
    if (runner_.idle()) return;
    spdlog::error("lost the rendezvous store ({}); stopping the workers", err);
    peer_stop_ = PeerStop{1, "the rendezvous store at " + config_.master_addr + " was lost"};
    runner_.stop(SIGTERM);
  }

  void wait_for_stop_signals() {
    stop_signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      on_stop_signal(sig);
      wait_for_stop_signals();
    });
  }

  void on_stop_signal(int sig) {
    if (signalled_ != 0) {
      spdlog::warn("received {} again; killing the workers now", signal_name(sig));
      runner_.stop(SIGKILL);
      return;
    }
    signalled_ = sig;
    spdlog::warn("received {}; stopping {} worker(s)", signal_name(sig), runner_.running_workers());
    runner_.stop(sig);
  }

  int finish_success(const rendezvous::RendezvousInfo& info) {
    if (multi_node()) {
      handler_->store().set(done_key(info.round, info.group_rank), "1");
      // Node 0 hosts the store: keep it up until every node has finished.
      if (info.group_rank == 0) {
        if (int code = wait_for_all_done(info); code != 0) return finish(code);
      }
    }
    log_dir_.remove_if_temporary();
    return finish(0);
  }

  int wait_for_all_done(const rendezvous::RendezvousInfo& info) {
    std::vector<std::string> keys;
    for (int k = 0; k < info.group_world_size; ++k) keys.push_back(done_key(info.round, k));
    std::optional<int> outcome;
    KeyWatch all_done(io_, handler_->connect(), keys, [&](auto) { outcome = 0; },
                      [&](std::string) { outcome = 0; });
    KeyWatch failed(io_, handler_->connect(), {stop_key(info.round)},
                    [&](std::vector<std::string> v) {
                      PeerStop p = PeerStop::parse(v[0]);
                      spdlog::error("the job failed after this node finished: {}", p.reason);
                      outcome = p.exitcode;
                    },
                    [](std::string) {});
    while (!outcome && signalled_ == 0) io_.run_one();
    return signalled_ ? 128 + signalled_ : *outcome;
  }

  int finish_failure(const std::vector<FailureRecord>& failures) {
    if (failures.empty()) {
      std::cerr << "ddprun: the job failed on another node: " << peer_stop_->reason << "\n";
      return finish(peer_stop_->exitcode);
    }
    std::cerr << format_failure_summary(config_.spec.entrypoint_name, host_, failures)
              << std::flush;
    return finish(shell_exit_code(failures.front().exitcode));
  }

  int finish(int code) {
    if (guard_) guard_->release();
    return code;
  }

  AgentConfig config_;
  OrphanGuard* guard_;
  asio::io_context io_;
  asio::signal_set stop_signals_;
  LogDir log_dir_;
  std::string host_;
  WorkerGroupRunner runner_;
  std::unique_ptr<rendezvous::RendezvousHandler> handler_;
  std::unique_ptr<KeyWatch> stop_watch_;
  std::optional<PeerStop> peer_stop_;
  int signalled_ = 0;
};

LocalAgent::LocalAgent(AgentConfig config, ProcessLauncher& launcher, OrphanGuard* guard)
    : impl_(std::make_unique<Impl>(std::move(config), launcher, guard)) {}

LocalAgent::~LocalAgent() = default;

int LocalAgent::run() { return impl_->run(); }

}  // namespace ddprun::agent
