#include "rendezvous/store_round.h"

#include <algorithm>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

#include "common/value_parsers.h"
#include "net/wait_scope.h"

namespace ddprun::rendezvous {

StoreRound::StoreRound(boost::asio::io_context& io, Clock& clock, Options options)
    : io_(io), clock_(clock), options_(std::move(options)), heartbeat_(clock.make_timer()) {}

StoreRound::~StoreRound() { stop(); }

std::string StoreRound::lost(const std::string& why) const {
  return "lost the rendezvous store at " + options_.store_where + " (" + why + ")";
}

void StoreRound::watch_end(OnEnd on_end, OnLost on_lost) {
  end_wait_ = std::make_unique<KeyWaiter>(
      io_, options_.connect(), std::vector<std::string>{options_.prefix + "over"},
      [on_end](std::vector<std::string> v) { on_end(RoundEnd::parse(v.at(0))); },
      [this, on_lost](const std::string& why) { on_lost(lost(why)); });
}

void StoreRound::watch_members(OnDead on_dead, OnLost on_lost) {
  if (!options_.dead_members) return;
  if (!liveness_) liveness_ = std::make_unique<KeyReader>(io_, options_.connect());
  heartbeat_->start(options_.heartbeat_interval,
                    [this, on_dead, on_lost] { check_members(on_dead, on_lost); });
}

void StoreRound::stop_watching_members() {
  heartbeat_->cancel();
  liveness_.reset();  // a read in progress ends with no callback
}

// One read of the members' liveness per interval, awaited on the loop, then judged.
void StoreRound::check_members(const OnDead& on_dead, const OnLost& on_lost) {
  liveness_->read(
      options_.liveness_keys,
      [this, on_dead, on_lost](std::optional<KeyReader::Values> values) {
        // Nothing read: a stop signal waits for the loop, no fault of the store;
        // judged again next time.
        auto dead = values ? options_.dead_members(*values) : std::vector<std::string>{};
        if (dead.empty()) return watch_members(on_dead, on_lost);
        on_dead(std::move(dead));
      },
      [this, on_lost](const std::string& why) { on_lost(lost(why)); });
}

RoundEnd StoreRound::end(const RoundEnd& mine) {
  try {
    return RoundEnd::parse(
        options_.store->compare_set(options_.prefix + "over", "", mine.encode()));
  } catch (const std::exception& e) {
    spdlog::warn("could not tell the other nodes: {}", e.what());
    return mine;
  }
}

void StoreRound::finish_node(OnAllDone on_all_done, OnLost on_lost) {
  const RendezvousInfo& info = options_.info;
  try {
    options_.store->set(options_.prefix + "done/" + std::to_string(info.group_rank), "1");
  } catch (const net::Interrupted&) {
    return;  // a stop signal waits for the loop, which ends the wait for the others
  } catch (const std::exception& e) {
    boost::asio::post(io_, [alive = alive_, on_lost, msg = lost(e.what())] {
      if (*alive) on_lost(msg);
    });
    return;
  }
  done_wait_ = std::make_unique<KeyWaiter>(
      io_, options_.connect(), done_keys(), [on_all_done](auto) { on_all_done(); },
      [this, on_lost](const std::string& why) { on_lost(lost(why)); });
}

std::vector<std::string> StoreRound::done_keys() const {
  std::vector<std::string> keys;
  for (int k = 0; k < options_.info.group_world_size; ++k) {
    keys.push_back(options_.prefix + "done/" + std::to_string(k));
  }
  return keys;
}

std::vector<int> StoreRound::unfinished() {
  std::vector<int> out;
  try {
    auto done = options_.store->get_now(done_keys());
    for (size_t k = 0; k < done.size(); ++k)
      if (!done[k]) out.push_back(static_cast<int>(k));
  } catch (const std::exception& e) {
    spdlog::debug("could not read which nodes finished: {}", e.what());
  }
  return out;
}

void StoreRound::start_next_round(bool failure, const std::set<std::string>& alive) {
  if (options_.start_next) options_.start_next(failure, alive);
}

void StoreRound::note_failure(const std::string& reason) {
  if (!options_.note_failure) return;
  try {
    options_.note_failure(reason);
  } catch (const std::exception& e) {
    spdlog::warn("could not count this node's failure towards its quarantine: {}", e.what());
  }
}

std::optional<std::vector<std::string>> StoreRound::spares() {
  if (!options_.spares) return std::vector<std::string>{};
  try {
    return options_.spares();
  } catch (const std::exception& e) {
    spdlog::debug("could not read the spares: {}", e.what());
    return std::nullopt;
  }
}

void StoreRound::gather(const std::string& name, const std::string& mine,
                        std::chrono::milliseconds timeout, OnGathered on_gathered) {
  int me = options_.info.group_rank;
  std::vector<std::string> keys;
  for (int k = 0; k < options_.info.group_world_size; ++k) {
    keys.push_back(options_.prefix + "gather/" + name + "/" + std::to_string(k));
  }
  Gathering& g = gatherings_[name];  // a gather of the same name again replaces it
  g.timer = clock_.make_timer();
  // Whichever comes first, every part or the timeout, answers; the other is dropped.
  auto answered = std::make_shared<bool>(false);
  auto answer = [this, answered, on_gathered, name, timer = g.timer.get()](std::vector<std::string> parts) {
    if (*answered) return;
    *answered = true;
    timer->cancel();
    boost::asio::post(io_, [this, on_gathered, name, timer, parts = std::move(parts)] {
      auto it = gatherings_.find(name);
      if (it != gatherings_.end() && it->second.timer.get() == timer) gatherings_.erase(it);
      on_gathered(parts);
    });
  };
  try {
    options_.store->set(keys.at(static_cast<size_t>(me)), mine);
    g.wait = std::make_unique<KeyWaiter>(io_, options_.connect(), keys, answer,
                                         [this, answer, keys, me, mine](const std::string&) {
                                           answer(present_parts(keys, me, mine));
                                         });
  } catch (const std::exception& e) {
    spdlog::warn("could not share with the other nodes: {}", e.what());
    std::vector<std::string> parts(keys.size());
    parts.at(static_cast<size_t>(me)) = mine;
    return answer(parts);
  }
  g.timer->start(timeout, [this, answer, keys, me, mine] { answer(present_parts(keys, me, mine)); });
}

std::vector<std::string> StoreRound::present_parts(const std::vector<std::string>& keys,
                                                   int mine_at, const std::string& mine) {
  std::vector<std::string> parts(keys.size());
  try {
    auto present = options_.store->get_now(keys);
    for (size_t k = 0; k < keys.size(); ++k) parts[k] = present[k].value_or("");
  } catch (const std::exception& e) {
    spdlog::warn("could not read what the other nodes shared: {}", e.what());
  }
  parts.at(static_cast<size_t>(mine_at)) = mine;
  return parts;
}

// Raises the number at `key` to `mine` unless it is already as large: a
// compare-and-set from what was there, again while other nodes raise it meanwhile.
// Returns the number there now.
static int64_t raise_to(store::Store& store, const std::string& key, int64_t mine) {
  std::string want = std::to_string(mine);
  std::string expected;  // "": not there yet
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string now = store.compare_set(key, expected, want);
    int64_t theirs = 0;
    if (now == want || (to_int64(now, theirs) && theirs >= mine)) return std::max(mine, theirs);
    expected = now;  // smaller, or not a number: replaced
  }
  return mine;
}

// One key per name holds the round's largest: each node raises it and reads it, so
// the exchange costs the store the same per node however many nodes share.
void StoreRound::share_max(const std::string& name, int64_t mine, OnMax on_max) {
  std::string key = options_.prefix + "max/" + name;
  try {
    auto written = shared_.find(name);
    if (written == shared_.end() || written->second < mine) {
      raise_to(*options_.store, key, mine);
      shared_[name] = mine;
    }
  } catch (const std::exception& e) {
    spdlog::debug("could not share {} with the other nodes: {}", name, e.what());
  }
  if (!maxima_) maxima_ = std::make_unique<KeyReader>(io_, options_.connect());
  maxima_->read(
      {key},
      [mine, on_max](const std::optional<KeyReader::Values>& values) {
        int64_t top = mine;
        int64_t theirs = 0;
        if (values && !values->empty() && values->front() && to_int64(*values->front(), theirs)) {
          top = std::max(top, theirs);
        }
        on_max(top);
      },
      [name, mine, on_max](const std::string& why) {
        spdlog::debug("could not read what the other nodes shared as {}: {}", name, why);
        on_max(mine);
      });
}

void StoreRound::publish(const std::string& name, const std::string& value) {
  std::string key = options_.prefix + "pub/" + name + "/" + std::to_string(options_.info.group_rank);
  try {
    options_.store->set(key, value);
  } catch (const std::exception& e) {
    spdlog::debug("could not publish {} to the other nodes: {}", name, e.what());
  }
}

void StoreRound::read_published(const std::string& name, std::vector<int> group_ranks,
                                OnPublished on_read) {
  std::vector<std::string> keys;
  keys.reserve(group_ranks.size());
  for (int k : group_ranks) keys.push_back(options_.prefix + "pub/" + name + "/" + std::to_string(k));
  if (!published_) published_ = std::make_unique<KeyReader>(io_, options_.connect());
  published_->read(
      std::move(keys),
      [on_read](std::optional<KeyReader::Values> values) {
        std::vector<std::string> out;
        if (values) {
          for (auto& v : *values) out.push_back(std::move(v).value_or(""));
        }
        on_read(std::move(out));
      },
      [name, on_read](const std::string& why) {
        spdlog::debug("could not read what the other nodes published as {}: {}", name, why);
        on_read({});
      });
}

void StoreRound::stop() {
  *alive_ = false;
  alive_ = std::make_shared<bool>(true);  // for what is started after
  heartbeat_->cancel();
  liveness_.reset();
  published_.reset();
  maxima_.reset();
  end_wait_.reset();
  done_wait_.reset();
}

}  // namespace ddprun::rendezvous
