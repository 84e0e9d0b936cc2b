#include "tracking/membership_story.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <set>

#include <nlohmann/json.hpp>

#include "common/node_names.h"

namespace ddprun::tracking {
namespace {

// One "rendezvous" event's members, spares and quarantines.
struct Formed {
  double wall = 0;
  int round = 0;
  std::vector<std::string> members, spares;
  std::vector<KeptOut> kept_out;
};

std::vector<std::string> strings(const nlohmann::json& d, const char* key) {
  std::vector<std::string> out;
  if (!d.contains(key) || !d[key].is_array()) return out;
  for (const auto& v : d[key]) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

// An event of another shape (a damaged run) is left out.
std::vector<Formed> parse(const std::vector<Event>& rounds) {
  std::vector<Formed> out;
  for (const auto& e : rounds) {
    auto d = nlohmann::json::parse(e.data_json, nullptr, false);
    if (!d.is_object()) continue;
    try {
      Formed f{e.wall, d.value("round", 0), strings(d, "members"), strings(d, "spares"), {}};
      if (d.contains("quarantined") && d["quarantined"].is_array()) {
        for (const auto& q : d["quarantined"]) {
          if (!q.is_object()) continue;
          f.kept_out.push_back({q.value("node", ""), q.value("until", 0.0), q.value("reason", "")});
        }
      }
      out.push_back(std::move(f));
    } catch (const nlohmann::json::exception&) {
      continue;
    }
  }
  return out;
}

std::vector<std::string> without(const std::vector<std::string>& from,
                                 const std::vector<std::string>& these) {
  std::vector<std::string> out;
  for (const auto& x : from) {
    if (std::find(these.begin(), these.end(), x) == these.end()) out.push_back(x);
  }
  return out;
}

std::string clock_time(double wall) {
  std::time_t t = static_cast<std::time_t>(wall);
  std::tm tm{};
  localtime_r(&t, &tm);
  char text[16];
  std::strftime(text, sizeof(text), "%H:%M:%S", &tm);
  return text;
}

// Each round's end ("restart" events) as (wall, why), oldest first.
std::vector<std::pair<double, std::string>> round_ends(const std::vector<Event>& ends) {
  std::vector<std::pair<double, std::string>> out;
  for (const auto& e : ends) {
    auto d = nlohmann::json::parse(e.data_json, nullptr, false);
    if (d.is_object() && d.contains("reason") && d["reason"].is_string())
      out.emplace_back(e.wall, d["reason"]);
  }
  return out;
}

// One round's change from the last, as a line ("" where the members are the same and
// nobody new is kept out).
std::string change(const Formed& last, const Formed& now, const std::string& why, double start) {
  std::vector<std::string> known = last.members;
  known.insert(known.end(), now.members.begin(), now.members.end());
  known.insert(known.end(), last.spares.begin(), last.spares.end());
  auto name = [&known](const std::string& id) { return node_name(id, known); };
  std::vector<std::string> left = without(last.members, now.members);
  std::vector<std::string> joined = without(now.members, last.members);
  std::vector<std::string> parts;
  if (!why.empty()) parts.push_back(why);
  // A spare that came in takes the place of one that left, in order.
  size_t replaced = 0;
  for (const auto& j : joined) {
    bool was_spare = std::find(last.spares.begin(), last.spares.end(), j) != last.spares.end();
    if (was_spare && replaced < left.size()) {
      parts.push_back("spare " + name(j) + " took the place of " + name(left[replaced++]));
    } else {
      parts.push_back((was_spare ? "spare " : "") + name(j) + " joined");
    }
  }
  for (size_t i = replaced; i < left.size(); ++i) parts.push_back(name(left[i]) + " left");
  for (const auto& k : now.kept_out) {
    if (std::find(last.kept_out.begin(), last.kept_out.end(), k) != last.kept_out.end()) continue;
    parts.push_back(name(k.node) + " kept out until " + clock_time(k.until) + " (" + k.reason +
                    ")");
  }
  if (left.empty() && joined.empty() && parts.size() <= (why.empty() ? 0u : 1u)) return "";
  char head[64];
  std::snprintf(head, sizeof(head), "+%.1f s round %d: ", now.wall - start, now.round);
  std::string line = head;
  for (size_t i = 0; i < parts.size(); ++i) line += (i ? "; " : "") + parts[i];
  return line;
}

}  // namespace

Membership read_membership(const std::vector<Event>& rounds, const std::vector<Event>& ends,
                           double start) {
  Membership m;
  std::vector<Formed> formed = parse(rounds);
  for (const auto& f : formed) {
    for (const auto& k : f.kept_out) {
      bool seen = std::any_of(m.quarantined.begin(), m.quarantined.end(), [&](const KeptOut& a) {
        return a.node == k.node && a.until == k.until;
      });
      if (!seen) m.quarantined.push_back(k);
    }
    for (const auto* ids : {&f.members, &f.spares}) {
      for (const auto& id : *ids) {
        if (std::find(m.agents.begin(), m.agents.end(), id) == m.agents.end())
          m.agents.push_back(id);
      }
    }
  }
  // Why the round before each ended: the last end recorded between the two (one walk
  // over both, oldest first, however many restarts the job had).
  auto why = round_ends(ends);
  size_t next_end = 0;
  for (size_t i = 1; i < formed.size(); ++i) {
    const Formed& last = formed[i - 1];
    const Formed& now = formed[i];
    std::string reason;
    while (next_end < why.size() && why[next_end].first <= now.wall) {
      if (why[next_end].first >= last.wall) reason = why[next_end].second;
      ++next_end;
    }
    std::string line = change(last, now, reason, start);
    if (!line.empty()) m.story.push_back(std::move(line));
  }
  return m;
}

}  // namespace ddprun::tracking
