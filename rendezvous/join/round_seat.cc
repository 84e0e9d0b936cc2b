#include "rendezvous/join/round_seat.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "rendezvous/round/watched_members.h"
#include "store/store.h"

namespace ddprun::rendezvous {

using nlohmann::json;

std::string RoundSeat::encode() const {
  json watch = json::array();
  for (const auto& [rank, id] : watched) watch.push_back({rank, id});
  json out = json::array();
  for (const auto& [address, q] : quarantined) {
    out.push_back({address, q.until_ms, q.times, q.reason});
  }
  return json{
      {"restarts", restarts},        {"rank", group_rank},       {"nodes", group_world_size},
      {"first_rank", first_rank},    {"world_size", world_size}, {"host", host},
      {"watched", std::move(watch)}, {"spares", spares},         {"quarantined", std::move(out)}}
      .dump();
}

RoundSeat RoundSeat::decode(const std::string& text) {
  try {
    json j = json::parse(text);
    RoundSeat s;
    s.restarts = j.at("restarts").get<int>();
    s.group_rank = j.at("rank").get<int>();
    s.group_world_size = j.at("nodes").get<int>();
    s.first_rank = j.at("first_rank").get<int>();
    s.world_size = j.at("world_size").get<int>();
    s.host = j.at("host").get<std::string>();
    for (const auto& w : j.at("watched")) {
      s.watched.emplace_back(w.at(0).get<int>(), w.at(1).get<std::string>());
    }
    s.spares = j.at("spares").get<std::vector<std::string>>();
    for (const auto& q : j.at("quarantined")) {
      s.quarantined[q.at(0).get<std::string>()] = {q.at(1).get<int64_t>(), q.at(2).get<int>(),
                                                   q.at(3).get<std::string>()};
    }
    if (s.group_rank < 0 || s.group_rank >= s.group_world_size || s.host.empty()) {
      throw std::invalid_argument("its rank is not one of its round");
    }
    return s;
  } catch (const std::exception& e) {
    throw StoreError(std::string("a rendezvous seat that is not one (") + e.what() + ")");
  }
}

namespace {

// The fields every member's seat shares.
RoundSeat shared_part(const DynamicState& state, const std::vector<std::string>& members) {
  RoundSeat s;
  s.restarts = state.restarts;
  s.group_world_size = static_cast<int>(members.size());
  s.host = members.empty() ? "" : members.front();
  for (const auto& [id, workers] : state.spares) s.spares.push_back(id);
  s.quarantined = state.quarantined;
  for (const auto& id : members) s.world_size += state.participants.at(id);
  return s;
}

void place(RoundSeat& s, const std::vector<std::string>& members, int rank, int first_rank) {
  s.group_rank = rank;
  s.first_rank = first_rank;
  s.watched.clear();
  std::vector<std::string> watched = watched_members(members, rank);
  // watched_members() keeps the ring's order: group rank 0, then the next (or every
  // other member, for group rank 0 itself).
  for (const auto& id : watched) {
    auto at = std::lower_bound(members.begin(), members.end(), id);
    s.watched.emplace_back(static_cast<int>(at - members.begin()), id);
  }
}

}  // namespace

RoundSeat seat_in(const DynamicState& state, const std::vector<std::string>& members,
                  int group_rank) {
  RoundSeat s = shared_part(state, members);
  int first = 0;
  for (int k = 0; k < group_rank; ++k)
    first += state.participants.at(members[static_cast<size_t>(k)]);
  place(s, members, group_rank, first);
  return s;
}

std::vector<std::pair<std::string, std::string>> seats_of(const DynamicState& state) {
  std::vector<std::string> members = ordered_members(state);
  RoundSeat s = shared_part(state, members);
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(members.size());
  int first = 0;
  for (size_t k = 0; k < members.size(); ++k) {
    place(s, members, static_cast<int>(k), first);
    out.emplace_back(members[k], s.encode());
    first += state.participants.at(members[k]);
  }
  return out;
}

std::vector<std::string> seat_keys(const std::string& round_prefix, const std::string& node) {
  return {round_prefix + "seat/" + node, round_prefix + "seated"};
}

}  // namespace ddprun::rendezvous
