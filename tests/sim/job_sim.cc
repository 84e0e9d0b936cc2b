#include "tests/sim/job_sim.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "rendezvous/join/dynamic_state.h"
#include "tracking/goodput.h"
#include "tracking/run_summary.h"

namespace ddprun::sim {
namespace {

using rendezvous::Action;
using rendezvous::DynamicConfig;
using rendezvous::DynamicState;

// The clock moves up to this far between two passes over the agents (each agent takes
// one step a pass, in an order the seed shuffles).
constexpr int64_t kTickMax = 50;
constexpr int64_t kJoinTimeoutMs = 20'000;
constexpr int64_t kHorizonMs = 120'000;  // simulated time at most, per schedule
constexpr int kMaxFaults = 4;
// A worker that cannot run (stopped, in D state): its node's hang detection fires after
// kHangMs, and stopping it takes at most the agent's bounds: the stack capture (15 s,
// the flight recorder's), the grace period (3 s here), the wait after SIGKILL (5 s);
// then it is left behind and the agent goes on.
constexpr int64_t kHangMs = 3000;
constexpr int64_t kStopBoundMs = 15'000 + 3000 + 5000;

struct Config {
  DynamicConfig rdzv;
  int max_restarts = 0;
  int64_t liveness_ms = 0;  // keep-alive interval x misses: silent this long = dead
  int64_t train_ms = 0;     // how long a round trains before its workers finish
};

enum class Phase { kJoining, kRunning, kFinished, kGone };

struct Agent {
  std::string id;  // "<address>/<pid>/<port>", as the agent's node id
  Phase phase = Phase::kJoining;
  int64_t arrive_at = 0;
  bool alive = true;         // false once SIGKILLed: no step, no heartbeat
  int64_t frozen_until = 0;  // an agent SIGSTOPped: no step, no heartbeat until then
  bool bad = false;          // its workers fail each time they run
  bool was_quarantined = false;
  int failures = 0;  // of its own workers (a peer's collective failing counts: it failed)
  int64_t last_beat = 0;
  int min_round = 0;
  int round = -1;  // the round its workers run (or ran) in
  int64_t running_since = 0;
  int64_t fail_at = -1;        // when its workers fail (-1: they don't)
  bool stuck = false;          // a worker of it cannot run
  int64_t stopping_until = 0;  // stopping its workers: no step until then
  int64_t join_deadline = 0;
  int64_t waiting_since = -1;  // joining while a round with room runs
  std::string exit;
};

struct RoundEnd {
  enum class Kind { kRestart, kMembership, kFinal } kind;
  std::string reason;
  std::set<std::string> dropped;
};

class Sim {
 public:
  Sim(uint64_t seed, bool verbose) : rng_(seed), verbose_(verbose) { out_.seed = seed; }

  Outcome run() {
    configure();
    while (now_ < start_ + kHorizonMs && out_.violation.empty()) {
      ++out_.steps;
      inject_fault();
      std::vector<size_t> order(agents_.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng_);
      for (size_t i : order) {
        step(agents_[i]);
        check();
        if (!out_.violation.empty()) break;
      }
      if (job_over()) break;
      now_ += uniform(1, kTickMax);
      beat();
    }
    if (out_.ended.empty()) out_.ended = state_.closed ? "closed" : "running";
    if (out_.violation.empty()) check_goodput();
    return out_;
  }

 private:
  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  void say(const std::string& what) {
    if (verbose_) out_.trace.push_back("t=" + std::to_string(now_ - start_) + " " + what);
  }
  void violate(const std::string& what) {
    if (out_.violation.empty()) out_.violation = what;
    say("VIOLATION: " + what);
  }

  void configure() {
    int min = static_cast<int>(uniform(1, 3));
    int max = static_cast<int>(uniform(min, min + 2));
    c_.rdzv.min_nodes = min;
    c_.rdzv.max_nodes = max;
    c_.rdzv.last_call_timeout_ms = uniform(200, 1000);
    c_.rdzv.node_failure_limit = chance(0.5) ? static_cast<int>(uniform(1, 2)) : 0;
    c_.rdzv.quarantine_ms = uniform(2000, 8000);
    c_.max_restarts = static_cast<int>(uniform(0, 5));
    c_.liveness_ms = uniform(1000, 3000);
    c_.train_ms = uniform(2000, 8000);
    int members = static_cast<int>(uniform(min, max));
    int spares = static_cast<int>(uniform(0, 2));
    bool shared = chance(0.5);  // every agent on one address (one host, or loopback)
    for (int i = 0; i < members + spares; ++i) {
      Agent a = new_agent(shared);
      a.arrive_at = start_ + (i < members ? uniform(0, 200) : uniform(0, c_.train_ms));
      agents_.push_back(a);
    }
    if (chance(0.3)) agents_[static_cast<size_t>(uniform(0, members + spares - 1))].bad = true;
    shared_ = shared;
    say("min " + std::to_string(min) + " max " + std::to_string(max) + " members " +
        std::to_string(members) + " spares " + std::to_string(spares) + " max_restarts " +
        std::to_string(c_.max_restarts) + " failure_limit " +
        std::to_string(c_.rdzv.node_failure_limit) + " liveness " + std::to_string(c_.liveness_ms) +
        (shared ? " shared address" : ""));
  }

  Agent new_agent(bool shared) {
    Agent a;
    int n = next_pid_++;
    std::string address = shared ? "127.0.0.1" : "10.0.0." + std::to_string(n);
    char pid[16];
    std::snprintf(pid, sizeof(pid), "%010d", 1000 + n);
    a.id = address + "/" + pid + "/" + std::to_string(29500 + n);
    a.join_deadline = 0;
    return a;
  }

  bool active(const Agent& a) const {
    return a.alive && a.phase != Phase::kGone && now_ >= a.arrive_at && now_ >= a.frozen_until &&
           now_ >= a.stopping_until;
  }

  void beat() {
    for (auto& a : agents_) {
      if (a.alive && a.phase != Phase::kGone && now_ >= a.arrive_at && now_ >= a.frozen_until) {
        a.last_beat = now_;
      }
    }
  }
  bool dead(const std::string& id) const {
    for (const auto& a : agents_) {
      if (a.id == id) return now_ - a.last_beat > c_.liveness_ms;
    }
    return true;
  }

  // The faults real clusters produce, at any point of the protocol.
  void inject_fault() {
    if (out_.faults >= kMaxFaults || !chance(0.02)) return;
    ++out_.faults;
    last_fault_ = now_;
    std::vector<Agent*> live;
    for (auto& a : agents_) {
      if (a.alive && a.phase != Phase::kGone && now_ >= a.arrive_at) live.push_back(&a);
    }
    int kind = static_cast<int>(uniform(0, 6));
    if (kind == 5 || live.empty()) {
      Agent a = new_agent(shared_);
      a.arrive_at = now_;
      say("a spare arrives: " + a.id);
      agents_.push_back(a);
      return;
    }
    Agent& a = *live[static_cast<size_t>(uniform(0, static_cast<int64_t>(live.size()) - 1))];
    switch (kind) {
      case 0:
      case 1: {  // SIGKILL of an agent (its workers die with it)
        if (&a == &agents_.front() && chance(0.75)) break;  // the store's host, now and then
        a.alive = false;
        say("SIGKILL " + a.id);
        if (&a == &agents_.front()) store_lost_ = true;  // it hosted the store
        // Mostly seen first as its peers' failed collectives.
        if (a.phase == Phase::kRunning && chance(0.7)) {
          for (auto& peer : agents_) {
            if (&peer != &a && peer.phase == Phase::kRunning && peer.round == a.round &&
                peer.alive) {
              peer.fail_at = now_ + uniform(0, 20);
              say("  its peer " + peer.id + " fails in a collective");
              break;
            }
          }
        }
        break;
      }
      case 2:  // a worker exits, or hangs and is stopped at the hang timeout
        if (a.phase == Phase::kRunning) {
          a.fail_at = now_ + (chance(0.5) ? 0 : uniform(500, 3000));
          say("worker of " + a.id + " fails at t=" + std::to_string(a.fail_at - start_));
        }
        break;
      case 3:  // the agent freezes (SIGSTOP, a frozen VM)
        a.frozen_until = now_ + uniform(c_.liveness_ms / 2, c_.liveness_ms * 2);
        say("freeze " + a.id + " until t=" + std::to_string(a.frozen_until - start_));
        break;
      case 6:  // a worker that cannot run: a hang, and a stop that takes all its bounds
        if (a.phase == Phase::kRunning && !a.stuck) {
          a.stuck = true;
          stuck_seen_ = true;
          a.fail_at = now_ + kHangMs;
          say("a worker of " + a.id + " cannot run (D state)");
        }
        break;
      case 4:  // SIGTERM
        say("SIGTERM " + a.id);
        if (a.phase == Phase::kRunning || a.phase == Phase::kFinished) {
          end_round(a, {RoundEnd::Kind::kFinal, "node " + a.id + " received SIGTERM", {}});
          close(true);
        }
        leave(a, "SIGTERM");
        if (&a == &agents_.front()) store_lost_ = true;
        break;
      default:
        break;
    }
  }

  void leave(Agent& a, const std::string& why) {
    if (a.phase == Phase::kGone) return;
    a.phase = Phase::kGone;
    a.exit = why;
    say(a.id + " leaves: " + why);
  }

  void close(bool failed) {
    if (state_.closed) return;
    state_.closed = true;
    state_.failed = failed;
    say(std::string("the run is closed, ") + (failed ? "failed" : "finished"));
  }

  // The first end written for a round wins (the store's compare-and-set).
  void end_round(const Agent& a, RoundEnd end) {
    if (over_.count(a.round)) return;
    say("round " + std::to_string(a.round) + " ends: " + end.reason);
    record_end(end.kind);
    end_span(a.round, end.reason != "the job finished", a.stuck);
    over_.emplace(a.round, std::move(end));
  }
  // The run's view of an attempt (what goodput accounts): its steps from 0.3 s after it
  // formed to its end, checkpointed half way; failed unless the job finished.
  void end_span(int round, bool failed, bool hang) {
    auto it = spans_.find(round);
    if (it == spans_.end()) return;
    tracking::AttemptSpan& span = it->second;
    double end = seconds(now_);
    if (end - span.start > 0.3) {
      span.first_step = span.start + 0.3;
      span.last_step = end;
      span.checkpoint = span.start + (end - span.start) / 2;
    }
    if (failed) span.failed = end;
    span.hang = hang;
  }
  // Accounting: the job's goodput puts every second from its launch to its end in one
  // category, attempt after attempt, end to end.
  void check_goodput() {
    std::vector<tracking::AttemptSpan> spans;
    for (const auto& [round, span] : spans_) spans.push_back(span);
    if (spans.empty()) return;
    tracking::Goodput g = tracking::account_goodput(seconds(start_), seconds(now_), spans);
    double wall = seconds(now_ - start_);
    const tracking::TimeSplit& t = g.job;
    for (double part : {t.startup, t.productive, t.lost, t.hang_wait, t.restart, t.shutdown}) {
      if (part < -1e-9) violate("goodput: a category below zero");
    }
    if (std::abs(t.total() - wall) > 1e-6 * std::max(1.0, wall)) {
      violate("goodput's categories sum to " + std::to_string(t.total()) + " s of " +
              std::to_string(wall) + " s");
    }
    double at = seconds(start_);
    for (const auto& attempt : g.attempts) {
      for (const auto& seg : attempt.segments) {
        if (std::abs(seg.from - at) > 1e-6 || seg.to < seg.from) {
          violate("goodput's timeline is not end to end");
        }
        at = seg.to;
      }
    }
  }
  // The run records each round's end once (its primary), and counts them as a run does.
  void record_end(RoundEnd::Kind kind) {
    if (kind == RoundEnd::Kind::kFinal) return;  // "job_stopped", not a round's end
    tracking::count_round_end(kind == RoundEnd::Kind::kRestart ? "restart" : "membership",
                              counted_);
  }

  void step(Agent& a) {
    if (!active(a)) return;
    if (store_lost_) return leave(a, "the rendezvous store was lost");
    switch (a.phase) {
      case Phase::kJoining:
        return join(a);
      case Phase::kRunning:
      case Phase::kFinished:
        return run(a);
      case Phase::kGone:
        return;
    }
  }

  void join(Agent& a) {
    if (a.join_deadline == 0) a.join_deadline = now_ + kJoinTimeoutMs;
    if (!state_.closed && state_.round < a.min_round) return;
    Action act = decide_join(state_, a.id, 1, now_, c_.rdzv);
    bool quarantined = rendezvous::quarantine_of(state_, a.id, now_) != nullptr;
    bool spare = state_.spares.count(a.id) > 0;
    if (quarantined || (spare && state_.complete)) a.join_deadline = now_ + kJoinTimeoutMs;
    switch (act.kind) {
      case Action::Kind::kClosed:
        return leave(a, state_.failed ? "the job failed" : "the job finished");
      case Action::Kind::kDone:
        a.phase = Phase::kRunning;
        a.round = state_.round;
        a.running_since = now_;
        a.fail_at = a.bad ? now_ + uniform(50, 500) : -1;
        a.join_deadline = 0;
        a.waiting_since = -1;
        say(a.id + " runs in round " + std::to_string(a.round));
        return;
      case Action::Kind::kWrite: {
        bool asked_in =
            state_.complete && !state_.waiting.count(a.id) && act.next.waiting.count(a.id);
        write(act.next);
        if (asked_in) {
          // A late node ends the running round for everyone so that the next has it.
          if (a.was_quarantined) violate(a.id + ", back from quarantine, forced a restart");
          int round = state_.round;
          begin_next_round(round, false, {});
          if (!over_.count(round)) {
            over_.emplace(round,
                          RoundEnd{RoundEnd::Kind::kMembership, "node " + a.id + " joins", {}});
            record_end(RoundEnd::Kind::kMembership);
            say("round " + std::to_string(round) + " ends: " + a.id + " joins");
          }
        }
        return;
      }
      case Action::Kind::kWait:
        break;
    }
    // A node in a forming round (in it, or a spare for it) frees the places of nodes
    // expected back that are gone (DynamicJoiner::free_places_of_dead).
    if (!state_.complete && (state_.participants.count(a.id) || state_.spares.count(a.id))) {
      std::vector<std::string> gone;
      for (const auto& e : rendezvous::absent_expected(state_, now_)) {
        if (dead(e)) gone.push_back(e);
      }
      if (!gone.empty()) {
        say(a.id + " frees the places of " + std::to_string(gone.size()) + " dead node(s)");
        write(rendezvous::without_expected(state_, gone));
      }
    }
    if (now_ > a.join_deadline) leave(a, "join timeout");
  }

  void write(const DynamicState& next) {
    bool completes = next.complete && !state_.complete;
    if (next.round != state_.round || completes) forming_since_ = now_;
    state_ = next;
    if (completes) {
      int n = static_cast<int>(state_.participants.size());
      say("round " + std::to_string(state_.round) + " completes with " + std::to_string(n) +
          " node(s), restarts " + std::to_string(state_.restarts));
      if (n < c_.rdzv.min_nodes || n > c_.rdzv.max_nodes) {
        violate("round " + std::to_string(state_.round) + " completed with " + std::to_string(n) +
                " node(s), outside MIN:MAX");
      }
      members_[state_.round] = rendezvous::ordered_members(state_);
      restarts_of_[state_.round] = state_.restarts;
      tracking::AttemptSpan span;
      span.attempt = state_.restarts;
      span.start = seconds(now_);
      spans_[state_.round] = span;
    }
  }
  static double seconds(int64_t ms) { return static_cast<double>(ms) / 1000; }

  void begin_next_round(int round, bool failure, const std::set<std::string>& lost) {
    if (state_.round != round || state_.closed) return;  // someone was first
    if (failure) ++restarts_begun_;
    write(rendezvous::next_round(state_, failure, lost, now_));
    say("round " + std::to_string(state_.round) + " begins" + (failure ? " (a restart)" : ""));
  }

  // A running (or finished, waiting for the others) agent: the round's end, its
  // workers' failure, its members' liveness, the job's success.
  void run(Agent& a) {
    if (auto it = over_.find(a.round); it != over_.end()) {
      const RoundEnd& end = it->second;
      if (end.dropped.count(a.id)) return leave(a, "dropped from the job");
      if (end.kind == RoundEnd::Kind::kFinal) return leave(a, end.reason);
      if (a.stuck) {  // its stop runs to the end of its bounds; the worker is left behind
        a.stuck = false;
        a.stopping_until = now_ + kStopBoundMs;
        say(a.id + " stops its workers until t=" + std::to_string(a.stopping_until - start_));
      }
      a.phase = Phase::kJoining;
      a.min_round = a.round + 1;
      a.join_deadline = 0;
      return;
    }
    if (a.phase == Phase::kRunning && a.fail_at >= 0 && now_ >= a.fail_at) return fail(a);
    // The members this node watches (all of them, here).
    std::vector<std::string> lost;
    for (const auto& m : members_[a.round]) {
      if (m != a.id && dead(m)) lost.push_back(m);
    }
    if (!lost.empty()) return leave_out(a, lost);
    if (a.phase == Phase::kRunning && now_ - a.running_since >= c_.train_ms) {
      a.phase = Phase::kFinished;
      say(a.id + "'s workers finished");
    }
    if (a.phase == Phase::kFinished) {
      for (const auto& m : members_[a.round]) {
        for (const auto& other : agents_) {
          if (other.id == m && !(other.phase == Phase::kFinished && other.round == a.round)) return;
        }
      }
      end_round(a, {RoundEnd::Kind::kFinal, "the job finished", {}});
      close(false);
    }
  }

  void fail(Agent& a) {
    a.fail_at = -1;
    ++a.failures;
    std::string what = "a worker of " + a.id + " exited with 1";
    say(what);
    if (over_.count(a.round)) return;
    if (c_.rdzv.node_failure_limit > 0) {
      // By agent, as DynamicRendezvous::count_failure counts it.
      state_ = rendezvous::note_failure(state_, a.id, what, now_, c_.rdzv);
      if (rendezvous::quarantine_of(state_, a.id, now_)) {
        a.was_quarantined = true;
        say(a.id + " is quarantined");
      }
    }
    bool budget_left = restarts_of_[a.round] < c_.max_restarts;
    if (!budget_left) {
      end_round(a, {RoundEnd::Kind::kFinal, what + "; no restart left", {}});
      return close(true);
    }
    begin_next_round(a.round, true, {});
    end_round(a, {RoundEnd::Kind::kRestart, what, {}});
  }

  // LocalAgent::on_dead: the round goes on without them if enough remain with the spares.
  void leave_out(Agent& a, const std::vector<std::string>& lost) {
    if (over_.count(a.round)) return;
    int left = static_cast<int>(members_[a.round].size() - lost.size());
    int spares = left < c_.rdzv.min_nodes ? static_cast<int>(state_.spares.size()) : 0;
    std::set<std::string> out(lost.begin(), lost.end());
    if (left + spares >= c_.rdzv.min_nodes) {
      begin_next_round(a.round, false, out);
      end_round(a, {RoundEnd::Kind::kMembership, "lost node(s)", out});
    } else {
      end_round(a, {RoundEnd::Kind::kFinal, "lost node(s): too few left", out});
      close(true);
    }
  }

  bool job_over() {
    for (const auto& a : agents_) {
      if (a.alive && a.phase != Phase::kGone) return false;
    }
    out_.ended = store_lost_ ? "the store was lost" : state_.failed ? "failed" : "succeeded";
    return true;
  }

  // Eligible to be in a round now: alive, not frozen, not quarantined, not gone; an
  // agent still stopping its workers counts (its stop is bounded).
  bool eligible(const Agent& a) const {
    return a.alive && a.phase != Phase::kGone && now_ >= a.arrive_at && now_ >= a.frozen_until &&
           !rendezvous::quarantine_of(state_, a.id, now_);
  }

  void check() {
    if (store_lost_ || state_.closed) return;
    int64_t bound = c_.liveness_ms + c_.rdzv.last_call_timeout_ms + 4 * kTickMax +
                    (stuck_seen_ ? kStopBoundMs : 0);
    if (state_.restarts > c_.max_restarts) {
      violate("restarts " + std::to_string(state_.restarts) + " exceed --max_restarts " +
              std::to_string(c_.max_restarts));
    }
    if (state_.restarts != restarts_begun_) {
      violate("the state counts " + std::to_string(state_.restarts) + " restart(s), " +
              std::to_string(restarts_begun_) + " were begun");
    }
    // The run's count is the workers' (TORCHELASTIC_RESTART_COUNT): once the rounds
    // that began have ended, the run counts as many restarts as the state.
    int ended_restarts = counted_.restarts;
    if (ended_restarts > state_.restarts) {
      violate("the run counts " + std::to_string(ended_restarts) +
              " restart(s) where the workers saw " + std::to_string(state_.restarts) +
              " (membership changes counted as restarts?)");
    }
    int able = 0;
    for (auto& a : agents_) {
      // Quarantined only for its own workers' failures (not a neighbour's at its address).
      if (a.failures < c_.rdzv.node_failure_limit &&
          rendezvous::quarantine_of(state_, a.id, now_)) {
        violate("agent " + a.id + " is quarantined after " + std::to_string(a.failures) +
                " failure(s) of its own workers, limit " +
                std::to_string(c_.rdzv.node_failure_limit));
      }
      if (eligible(a)) ++able;
      // A free place is filled while a node waits for one (a node back from
      // quarantine waits for the next round on purpose).
      bool waits = eligible(a) && a.phase == Phase::kJoining && state_.complete &&
                   static_cast<int>(state_.participants.size()) < c_.rdzv.max_nodes &&
                   !a.was_quarantined && state_.round >= a.min_round;
      if (!waits) {
        a.waiting_since = -1;
      } else if (a.waiting_since < 0) {
        a.waiting_since = now_;
      } else if (now_ - a.waiting_since > bound) {
        violate(a.id + " waited " + std::to_string(now_ - a.waiting_since) + " ms while round " +
                std::to_string(state_.round) + " ran with a free place");
      }
    }
    // Liveness: a round that enough live nodes could form forms within the bound of
    // the job's own timeouts.
    if (able < c_.rdzv.min_nodes) able_since_ = -1;
    if (able >= c_.rdzv.min_nodes && able_since_ < 0) able_since_ = now_;
    int64_t since = std::max({forming_since_, able_since_, last_fault_});
    if (!state_.complete && able >= c_.rdzv.min_nodes && now_ - since > bound) {
      bool someone_joins = false;
      for (const auto& a : agents_) {
        someone_joins |= eligible(a) && a.phase == Phase::kJoining && state_.round >= a.min_round;
      }
      if (someone_joins) {
        violate("round " + std::to_string(state_.round) + " still forms after " +
                std::to_string(now_ - since) + " ms with " + std::to_string(able) +
                " live node(s), bound " + std::to_string(bound) + " ms");
      }
    }
  }

  std::mt19937_64 rng_;
  bool verbose_;
  Outcome out_;
  Config c_;
  DynamicState state_;
  std::map<int, RoundEnd> over_;                     // each round's end: the first written
  std::map<int, std::vector<std::string>> members_;  // each round's members, as formed
  std::map<int, int> restarts_of_;                   // TORCHELASTIC_RESTART_COUNT of a round
  std::map<int, tracking::AttemptSpan> spans_;       // each round's attempt, as the run saw it
  std::vector<Agent> agents_;
  const int64_t start_ = 1'000'000;
  int64_t now_ = start_;
  int64_t forming_since_ = start_;
  int64_t able_since_ = -1;  // since when enough nodes could form a round
  int64_t last_fault_ = 0;
  int restarts_begun_ = 0;
  tracking::RoundEndCounts counted_;  // the run's count of the rounds' ends
  int next_pid_ = 1;
  bool shared_ = false;
  bool store_lost_ = false;
  bool stuck_seen_ = false;  // a worker could not run: nodes may take the stop's bound
};

}  // namespace

Outcome run_schedule(uint64_t seed, bool verbose) { return Sim(seed, verbose).run(); }

}  // namespace ddprun::sim
