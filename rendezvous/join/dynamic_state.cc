#include "rendezvous/join/dynamic_state.h"

#include <algorithm>
#include <charconv>
#include <string_view>

#include <nlohmann/json.hpp>

#include "store/store.h"

namespace ddprun::rendezvous {

// One line per entry, in the maps' order; the header holds the scalars. Node ids and
// addresses have no spaces, so each ends its line or sits between two fields; a
// quarantine's reason (free text, its line breaks made spaces) ends its line.
//
//   ddprun-rdzv 1 round 3 restarts 1 complete 0 closed 0 failed 0 deadline 0
//   p 8 10.0.0.1/4242/29500        participants: workers, id
//   e 10.0.0.1/4242/29500          expected back
//   w 8 <id> / s 8 <id>            waiting, spares
//   f 2 10.0.0.2                   failures by address
//   q 1700000000000 1 10.0.0.3 <reason>
//
// It replaced JSON: at 1,024 nodes each agent reads the state about ten times while the
// round forms, and parsing a JSON tree of it was most of the rendezvous' CPU time
// (see docs/performance.md, "How costs grow").
std::string DynamicState::encode() const {
  std::string out;
  out.reserve(64 + 32 * (participants.size() + expected.size() + waiting.size() + spares.size()));
  auto num = [&out](int64_t v) { out += std::to_string(v); };
  out += "ddprun-rdzv 1 round ";
  num(round);
  out += " restarts ";
  num(restarts);
  out += complete ? " complete 1" : " complete 0";
  out += closed ? " closed 1" : " closed 0";
  out += failed ? " failed 1" : " failed 0";
  out += " deadline ";
  num(last_call_deadline_ms);
  auto counted = [&](char tag, const std::map<std::string, int>& m) {
    for (const auto& [id, n] : m) {
      out += '\n';
      out += tag;
      out += ' ';
      num(n);
      out += ' ';
      out += id;
    }
  };
  counted('p', participants);
  for (const auto& id : expected) {
    out += "\ne ";
    out += id;
  }
  counted('w', waiting);
  counted('s', spares);
  counted('f', failures);
  for (const auto& [address, q] : quarantined) {
    out += "\nq ";
    num(q.until_ms);
    out += ' ';
    num(q.times);
    out += ' ';
    out += address;
    out += ' ';
    size_t reason_at = out.size();
    out += q.reason;
    std::replace(out.begin() + static_cast<std::ptrdiff_t>(reason_at), out.end(), '\n', ' ');
  }
  return out;
}

namespace {

// Reads the compact form field by field; any deviation throws naming the line.
class StateReader {
 public:
  explicit StateReader(std::string_view text) : rest_(text) {}

  DynamicState read() {
    DynamicState s;
    next_line();
    word("ddprun-rdzv");
    if (number() != 1) fail("an unknown version");
    word("round");
    s.round = static_cast<int>(number());
    word("restarts");
    s.restarts = static_cast<int>(number());
    word("complete");
    s.complete = flag();
    word("closed");
    s.closed = flag();
    word("failed");
    s.failed = flag();
    word("deadline");
    s.last_call_deadline_ms = number();
    if (!line_.empty()) fail("more than the header holds");
    while (next_line()) {
      char tag = line_[0];
      if (line_.size() < 3 || line_[1] != ' ') fail("no entry");
      line_.remove_prefix(2);
      switch (tag) {
        case 'p':
          counted(s.participants);
          break;
        case 'w':
          counted(s.waiting);
          break;
        case 's':
          counted(s.spares);
          break;
        case 'f':
          counted(s.failures);
          break;
        case 'e':
          s.expected.emplace_hint(s.expected.end(), id());
          break;
        case 'q': {
          Quarantine q;
          q.until_ms = number();
          q.times = static_cast<int>(number());
          std::string address(field());
          q.reason = std::string(line_);
          s.quarantined.emplace(std::move(address), std::move(q));
          break;
        }
        default:
          fail("an unknown entry");
      }
    }
    return s;
  }

 private:
  bool next_line() {
    if (rest_.empty()) return false;
    ++line_no_;
    auto end = rest_.find('\n');
    line_ = rest_.substr(0, end);
    rest_ = end == std::string_view::npos ? std::string_view{} : rest_.substr(end + 1);
    if (line_.empty()) fail("an empty line");
    return true;
  }
  std::string_view field() {
    auto end = line_.find(' ');
    std::string_view f = line_.substr(0, end);
    line_ = end == std::string_view::npos ? std::string_view{} : line_.substr(end + 1);
    if (f.empty()) fail("a missing field");
    return f;
  }
  void word(std::string_view expected) {
    if (field() != expected) fail("no '" + std::string(expected) + "'");
  }
  int64_t number() {
    std::string_view f = field();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec != std::errc() || end != f.data() + f.size()) {
      fail("'" + std::string(f) + "', not a number");
    }
    return v;
  }
  bool flag() {
    int64_t v = number();
    if (v != 0 && v != 1) fail("a flag that is neither 0 nor 1");
    return v == 1;
  }
  // A node id: the rest of the line.
  std::string id() {
    if (line_.empty() || line_.find(' ') != std::string_view::npos) fail("a malformed node id");
    return std::string(line_);
  }
  void counted(std::map<std::string, int>& m) {
    int n = static_cast<int>(number());
    m.emplace_hint(m.end(), id(), n);
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw StoreError("malformed rendezvous state: line " + std::to_string(line_no_) + " has " +
                     what);
  }

  std::string_view rest_;
  std::string_view line_;
  int line_no_ = 0;
};

// The JSON form of agents before the compact one (read, never written).
DynamicState from_json(const std::string& text) {
  try {
    auto j = nlohmann::json::parse(text);
    DynamicState s;
    s.round = j.at("round").get<int>();
    s.restarts = j.at("restarts").get<int>();
    s.complete = j.at("complete").get<bool>();
    s.closed = j.at("closed").get<bool>();
    s.participants = j.at("participants").get<std::map<std::string, int>>();
    s.expected = j.at("expected").get<std::set<std::string>>();
    s.waiting = j.at("waiting").get<std::map<std::string, int>>();
    s.last_call_deadline_ms = j.at("deadline").get<int64_t>();
    s.spares = j.value("spares", std::map<std::string, int>{});
    s.failed = j.value("failed", false);
    s.failures = j.value("failures", std::map<std::string, int>{});
    if (auto q = j.find("quarantined"); q != j.end()) {
      for (const auto& [address, entry] : q->items()) {
        s.quarantined[address] = {entry.at("until").get<int64_t>(), entry.at("times").get<int>(),
                                  entry.at("reason").get<std::string>()};
      }
    }
    return s;
  } catch (const std::exception& e) {
    throw StoreError(std::string("malformed rendezvous state: ") + e.what());
  }
}

}  // namespace

DynamicState DynamicState::decode(const std::string& text) {
  if (!text.empty() && text[0] == '{') return from_json(text);
  return StateReader(text).read();
}

namespace {

// Nodes expected back are not waited for once quarantined (a node that left after
// failing its preflight between rounds).
bool all_expected_in(const DynamicState& s, int64_t now_ms) {
  if (s.expected.empty()) return false;
  // Without quarantines, fewer participants than expected nodes settles it at once: a
  // write that takes in many announced nodes asks this once for each.
  if (s.quarantined.empty() && s.participants.size() < s.expected.size()) return false;
  for (const auto& e : s.expected)
    if (!s.participants.count(e) && !quarantine_of(s, e, now_ms)) return false;
  return true;
}

// Places of the forming round kept for nodes expected back that are not in yet.
int owed_places(const DynamicState& s, int64_t now_ms) {
  int owed = 0;
  for (const auto& e : s.expected)
    owed += s.participants.count(e) || quarantine_of(s, e, now_ms) ? 0 : 1;
  return owed;
}

// Nodes kept out now (quarantined, by id or by address) that are no participant: each
// would have taken a place, so a round does not hold its last call open for them (a
// node that failed its preflight before its first round is known to be out at once).
int kept_out_places(const DynamicState& s, int64_t now_ms) {
  int out = 0;
  for (const auto& [key, q] : s.quarantined)
    out += q.until_ms > now_ms && !s.participants.count(key) ? 1 : 0;
  return out;
}

// Ranks are fixed from here. Spares that did not come while the round had room are
// forgotten (most likely gone): one alive asks again while the round runs.
DynamicState completed(DynamicState s, const DynamicConfig& config) {
  s.complete = true;
  s.last_call_deadline_ms = 0;
  if (static_cast<int>(s.participants.size()) < config.max_nodes) s.spares.clear();
  return s;
}

Action write(DynamicState next) {
  Action a;
  a.kind = Action::Kind::kWrite;
  a.next = std::move(next);
  return a;
}

}  // namespace

// `s` is the state read; every outcome hands it back in Action::next (changed only for
// kWrite), so a caller that applies many nodes' steps moves one state through them.
Action decide_join(DynamicState s, const std::string& node, int local_world_size, int64_t now_ms,
                   const DynamicConfig& config) {
  auto wait = [&s](int64_t wake_at_ms) {
    Action a;
    a.next = std::move(s);
    a.wake_at_ms = wake_at_ms;
    return a;
  };
  if (s.closed) {
    Action a = wait(0);
    a.kind = Action::Kind::kClosed;
    return a;
  }
  int count = static_cast<int>(s.participants.size());
  bool in = s.participants.count(node) > 0;
  if (!in) {
    if (const Quarantine* q = quarantine_of(s, node, now_ms)) {
      return wait(q->until_ms);  // kept out until then: no place, no spare
    }
  }
  if (s.complete) {
    if (in) {
      Action a = wait(0);
      a.kind = Action::Kind::kDone;
      return a;
    }
    if (s.waiting.count(node) || s.spares.count(node)) return wait(0);
    // Late: ask the members to start over with us if there is room; else wait as a
    // spare for the next round, leaving the running one alone.
    // A node back from quarantine does not make a running round start over: it waits
    // as a spare, for the next round that forms for another reason.
    if (count + static_cast<int>(s.waiting.size()) < config.max_nodes &&
        !back_from_quarantine(s, node, now_ms)) {
      s.waiting[node] = local_world_size;
    } else {
      s.spares[node] = local_world_size;
    }
    return write(std::move(s));
  }
  bool changed = false;
  if (!in) {
    // The places of the nodes expected back are kept for them: any other node (a
    // spare) takes one of the rest, or waits as a spare.
    if (!s.expected.count(node) && count + owed_places(s, now_ms) >= config.max_nodes) {
      if (s.spares.count(node)) return wait(0);
      s.spares[node] = local_world_size;
      return write(std::move(s));
    }
    s.participants[node] = local_world_size;
    s.waiting.erase(node);
    s.spares.erase(node);
    ++count;
    changed = true;
  }
  bool enough = count >= config.min_nodes;
  bool full = count + kept_out_places(s, now_ms) >= config.max_nodes;
  if (enough && (full || (all_expected_in(s, now_ms) && s.spares.empty()))) {
    return write(completed(std::move(s), config));
  }
  if (enough && s.last_call_deadline_ms == 0) {
    s.last_call_deadline_ms = now_ms + config.last_call_timeout_ms;
    changed = true;
  }
  // The deadline is wall-clock time (nodes share no other clock). One further away than
  // a whole last call was set by a clock ahead of ours, or ours jumped back: it counts
  // as passed, so no clock change can hold a round open longer than that.
  bool passed = now_ms >= s.last_call_deadline_ms ||
                s.last_call_deadline_ms - now_ms > config.last_call_timeout_ms;
  if (enough && s.last_call_deadline_ms != 0 && passed) {
    return write(completed(std::move(s), config));
  }
  if (changed) return write(std::move(s));
  int64_t deadline = s.last_call_deadline_ms;
  return wait(deadline);
}

DynamicState next_round(const DynamicState& state, bool failure, const std::set<std::string>& lost,
                        int64_t now_ms) {
  DynamicState next;
  next.round = state.round + 1;
  next.restarts = state.restarts + (failure ? 1 : 0);
  for (const auto& [id, n] : state.participants)
    if (!lost.count(id) && !quarantine_of(state, id, now_ms)) next.expected.insert(id);
  for (const auto& [id, n] : state.waiting)
    if (!quarantine_of(state, id, now_ms)) next.expected.insert(id);
  next.spares = state.spares;
  next.failures = state.failures;
  next.quarantined = state.quarantined;
  return next;
}

std::vector<std::string> absent_expected(const DynamicState& state, int64_t now_ms) {
  std::vector<std::string> absent;
  if (state.complete || state.closed) return absent;
  for (const auto& e : state.expected) {
    if (!state.participants.count(e) && !quarantine_of(state, e, now_ms)) absent.push_back(e);
  }
  return absent;
}

DynamicState without_expected(DynamicState state, const std::vector<std::string>& gone) {
  for (const auto& g : gone) state.expected.erase(g);
  return state;
}

std::string node_address(const std::string& id) {
  size_t port_at = id.rfind('/');
  if (port_at == std::string::npos || port_at == 0) return id;
  size_t pid_at = id.rfind('/', port_at - 1);
  return pid_at == std::string::npos ? id : id.substr(0, pid_at);
}

const Quarantine* quarantine_of(const DynamicState& state, const std::string& node,
                                int64_t now_ms) {
  if (state.quarantined.empty()) return nullptr;  // most rounds: no lookup per node
  for (const std::string& key : {node, node_address(node)}) {
    auto q = state.quarantined.find(key);
    if (q != state.quarantined.end() && q->second.until_ms > now_ms) return &q->second;
  }
  return nullptr;
}

bool back_from_quarantine(const DynamicState& state, const std::string& node, int64_t now_ms) {
  if (state.quarantined.empty() || quarantine_of(state, node, now_ms)) return false;
  return state.quarantined.count(node) || state.quarantined.count(node_address(node));
}

DynamicState note_failure(const DynamicState& state, const std::string& node,
                          const std::string& reason, int64_t now_ms, const DynamicConfig& config) {
  DynamicState next = state;
  if (config.node_failure_limit <= 0) return next;
  int failures = ++next.failures[node];
  auto q = next.quarantined.find(node);
  int times = q == next.quarantined.end() ? 0 : q->second.times;
  // Quarantined at the limit, and again at each further limit's worth of failures.
  if (failures < config.node_failure_limit * (times + 1)) return next;
  return quarantine(next, node,
                    std::to_string(failures) + " failure(s) of its workers" +
                        (times > 0 ? ", quarantined " + std::to_string(times + 1) + " times" : "") +
                        "; last: " + reason,
                    now_ms, config);
}

DynamicState quarantine(const DynamicState& state, const std::string& key,
                        const std::string& reason, int64_t now_ms, const DynamicConfig& config) {
  DynamicState next = state;
  Quarantine& q = next.quarantined[key];
  int64_t cooldown = config.quarantine_ms << std::min(q.times, 20);
  q = {now_ms + cooldown, q.times + 1, reason};
  return next;
}

std::vector<std::string> ordered_members(const DynamicState& state) {
  std::vector<std::string> ids;
  for (const auto& [id, n] : state.participants) ids.push_back(id);  // std::map: sorted
  return ids;
}

// Nodes that lost a write announced themselves, and a node that writes the forming round adds every
// announced node with it: nodes arriving together need a few writes instead of one each (each of
// which all the others would have to redo).
DynamicState take_in_announced(const DynamicState& read, DynamicState next, const std::string& self,
                               const std::vector<std::pair<std::string, int>>& announced,
                               int64_t now, const DynamicConfig& config) {
  if (read.complete || read.closed || next.complete) return next;
  for (const auto& [other, workers] : announced) {
    if (other == self || next.complete || next.participants.count(other)) continue;
    // One state moved through every announced node's step (a copy each would make a
    // write cost announced x nodes).
    bool was_spare = next.spares.count(other) > 0;
    Action theirs = decide_join(std::move(next), other, workers, now, config);
    next = std::move(theirs.next);
    bool taken_in = theirs.kind == Action::Kind::kWrite && next.participants.count(other);
    // A node that would only wait as a spare is left to say so itself.
    if (!taken_in && !was_spare) next.spares.erase(other);
  }
  return next;
}

}  // namespace ddprun::rendezvous
