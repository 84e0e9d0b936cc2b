#include "tracking/console_event_log.h"

#include <chrono>
#include <utility>

#include <nlohmann/json.hpp>

namespace ddprun::tracking {
namespace {

using nlohmann::json;


int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ConsoleEventLog::ConsoleEventLog(RunObserver* inner, std::ostream& out, std::string host)
    : inner_(inner), out_(out), host_(std::move(host)) {}

template <typename Metadata>
void ConsoleEventLog::emit(const std::string& name, const Metadata& metadata) {
  json m = metadata;
  m["hostname"] = host_;
  json event{{"name", name}, {"source", "AGENT"}, {"timestamp", now_ms()}, {"metadata", m}};
  // One write per line: lines of several agents sharing a terminal never interleave.
  std::string line = event.dump(-1, ' ', false, json::error_handler_t::replace);
  line += '\n';
  out_ << line << std::flush;
}

std::string ConsoleEventLog::attach(const std::string& address, bool primary) {
  return inner_ ? inner_->attach(address, primary) : "";
}

void ConsoleEventLog::add_worker_env(int node, int rank, int attempt,
                                     std::map<std::string, std::string>& env) {
  if (inner_) inner_->add_worker_env(node, rank, attempt, env);
}

namespace {

json quarantined_json(const std::vector<QuarantinedNode>& nodes) {
  json out = json::array();
  for (const auto& q : nodes) out.push_back({{"node", q.node}, {"until", q.until}, {"reason", q.reason}});
  return out;
}

}  // namespace

void ConsoleEventLog::rendezvous_complete(const FormedRound& formed) {
  json round{{"round", formed.round},
             {"attempt", formed.attempt},
             {"world_size", formed.world_size},
             {"spares", formed.spares},
             {"quarantined", quarantined_json(formed.quarantined)}};
  // Only where this node knows them: most members of a large round read their own seat.
  if (!formed.members.empty()) round["members"] = formed.members;
  emit("rendezvous", round);
  if (inner_) inner_->rendezvous_complete(formed);
}

bool ConsoleEventLog::may_start_workers(int attempt, bool wait) {
  return !inner_ || inner_->may_start_workers(attempt, wait);
}

void ConsoleEventLog::worker_started(int node, int rank, int local_rank, int attempt, pid_t pid) {
  emit("worker_started", json{{"group_rank", node},
                              {"global_rank", rank},
                              {"local_rank", local_rank},
                              {"attempt", attempt},
                              {"pid", pid}});
  if (inner_) inner_->worker_started(node, rank, local_rank, attempt, pid);
}

void ConsoleEventLog::worker_exited(int node, int rank, int local_rank, int attempt, int exitcode) {
  emit("worker_exited", json{{"group_rank", node},
                             {"global_rank", rank},
                             {"local_rank", local_rank},
                             {"attempt", attempt},
                             {"exitcode", exitcode}});
  if (inner_) inner_->worker_exited(node, rank, local_rank, attempt, exitcode);
}

void ConsoleEventLog::hang(int attempt, const std::string& report_json) {
  json report = json::parse(report_json, nullptr, false);
  json m{{"attempt", attempt}};
  if (report.is_object()) {
    m["reason"] = report.value("reason", "");
    if (report.contains("culprits")) m["culprits"] = report["culprits"];
  }
  emit("hang", m);
  if (inner_) inner_->hang(attempt, report_json);
}

void ConsoleEventLog::watchdog_reaped(int node, int rank, int attempt,
                                      const std::string& data_json) {
  json m = json::parse(data_json, nullptr, false);
  if (!m.is_object()) m = json::object();
  m["group_rank"] = node;
  m["global_rank"] = rank;
  m["attempt"] = attempt;
  emit("watchdog", m);
  if (inner_) inner_->watchdog_reaped(node, rank, attempt, data_json);
}

void ConsoleEventLog::links_probed(int attempt, const std::string& report_json) {
  json report = json::parse(report_json, nullptr, false);
  json m{{"attempt", attempt}};
  if (report.is_object()) m["slow"] = report.value("slow", json::array());
  emit("links", m);
  if (inner_) inner_->links_probed(attempt, report_json);
}

void ConsoleEventLog::straggler_named(int attempt, const std::string& data_json) {
  json m = json::parse(data_json, nullptr, false);
  if (!m.is_object()) m = json::object();
  m["attempt"] = attempt;
  emit("straggler", m);
  if (inner_) inner_->straggler_named(attempt, data_json);
}

void ConsoleEventLog::straggler_scores(int attempt, const std::string& data_json) {
  if (inner_) inner_->straggler_scores(attempt, data_json);  // the run's, not the console's
}

void ConsoleEventLog::spares_waiting(int attempt, const std::vector<std::string>& spares) {
  emit("spares", json{{"attempt", attempt}, {"spares", spares}});
  if (inner_) inner_->spares_waiting(attempt, spares);
}

void ConsoleEventLog::round_over(int attempt, const std::string& kind, const std::string& reason) {
  emit(kind == "final" ? "job_stopped" : kind, json{{"attempt", attempt}, {"reason", reason}});
  if (inner_) inner_->round_over(attempt, kind, reason);
}

void ConsoleEventLog::attempt_ended() {
  if (inner_) inner_->attempt_ended();
}

void ConsoleEventLog::finished(const std::string& status, int exitcode,
                               const std::string& root_cause) {
  if (inner_) {
    inner_->finished(status, exitcode, root_cause);
    inner_->complete();  // a reader told the run finished finds all of it
  }
  emit("run_finished",
       json{{"status", status}, {"exitcode", exitcode}, {"root_cause", root_cause}});
}

}  // namespace ddprun::tracking
