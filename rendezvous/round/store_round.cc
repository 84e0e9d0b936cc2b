#include "rendezvous/round/store_round.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>
#include <utility>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

#include "common/value_parsers.h"
#include "rendezvous/round/shared_max.h"

namespace ddprun::rendezvous {

StoreRound::StoreRound(boost::asio::io_context& io, Clock& clock, Options options)
    : io_(io), clock_(clock), options_(std::move(options)), heartbeat_(clock.make_timer()) {}

StoreRound::~StoreRound() { stop(); }

std::string StoreRound::lost(const std::string& why) const {
  return "lost the rendezvous store at " + options_.store_where + " (" + why + ")";
}

// The round begins: its quick requests' connection is made now, while the store is
// surely up (made later, after the store's host died, it would retry the call timeout
// long on the loop).
void StoreRound::watch_end(OnEnd on_end, OnLost on_lost) {
  requests().connect();
  end_wait_ = std::make_unique<KeyWaiter>(
      io_, options_.connect(), std::vector<std::string>{options_.prefix + "over"},
      [this, on_end](std::vector<std::string> v) {
        RoundEnd end = told(v.at(0));
        if (!end_settled_ && options_.on_end_writer) options_.on_end_writer(end, false);
        on_end(std::move(end));
      },
      [this, on_lost](const std::string& why) { on_lost(lost(why)); });
}

// The round's end as stored; where it says where the next round is, that goes on first.
RoundEnd StoreRound::told(const std::string& value) const {
  RoundEnd end = RoundEnd::parse(value);
  if (!end.next_round.empty() && options_.on_next_round) options_.on_next_round(end.next_round);
  return end;
}

RoundRequests& StoreRound::requests() {
  if (!requests_) requests_ = std::make_unique<RoundRequests>(io_, options_.connect);
  return *requests_;
}

void StoreRound::watch_members(OnDead on_dead, OnLost on_lost) {
  if (!options_.dead_members) return;
  heartbeat_->start(options_.heartbeat_interval,
                    [this, on_dead, on_lost] { check_members(on_dead, on_lost); });
}

// One read of the members' liveness per interval, awaited on the loop, then judged.
void StoreRound::check_members(const OnDead& on_dead, const OnLost& on_lost) {
  requests().read(
      options_.liveness_keys,
      [this, on_dead, on_lost](std::optional<RoundRequests::Values> values) {
        // Nothing read: the read was refused behind a slow store, no fault of the
        // store; judged again next time.
        auto dead = values ? options_.dead_members(*values) : std::vector<std::string>{};
        if (dead.empty()) {
          // Group rank 0, finished, reads every mark once an interval: where all are
          // there and nobody set "all_done" (the last to finish counted another way,
          // being of another version), it sets it for everyone. One node reading N keys
          // an interval: linear.
          if (all_done_ && options_.info.group_rank == 0) check_all_marked();
          return watch_members(on_dead, on_lost);
        }
        drop_finished(std::move(dead), on_dead, on_lost);
      },
      [this, on_lost](const std::string& why) { on_lost(lost(why)); });
}

// Members judged dead that marked themselves done are not lost: they finished, and
// may have left once every node was (an etcd lease is revoked then, a heartbeat stops)
// before this node learnt it. Their done keys are read after their liveness, and each
// is written before its node leaves, so one that left is always found done.
void StoreRound::drop_finished(std::vector<std::string> dead, const OnDead& on_dead,
                               const OnLost& on_lost) {
  const auto& watched = options_.watched;
  std::vector<std::string> keys;
  for (const auto& m : dead) {
    // Its group rank (one past the last for an id not watched: never done).
    auto it =
        std::find_if(watched.begin(), watched.end(), [&m](const auto& w) { return w.second == m; });
    int rank = it == watched.end() ? options_.info.group_world_size : it->first;
    keys.push_back(options_.prefix + "done/" + std::to_string(rank));
  }
  requests().read(
      keys,
      [this, dead = std::move(dead), on_dead,
       on_lost](std::optional<RoundRequests::Values> done) mutable {
        if (!done) return watch_members(on_dead, on_lost);  // judged again next time
        std::vector<std::string> lost_members;
        for (size_t i = 0; i < dead.size(); ++i) {
          if (!(*done)[i]) lost_members.push_back(std::move(dead[i]));
        }
        if (lost_members.empty()) {
          if (all_done_) check_all_marked();
          return watch_members(on_dead, on_lost);
        }
        on_dead(std::move(lost_members));
      },
      [this, on_lost](const std::string& why) { on_lost(lost(why)); });
}

// Written after the requests asked before it (the next round's start): it says where
// that round is. An end that began none says none (the hint is of the last round this
// node began, which may be this one).
void StoreRound::end(const RoundEnd& mine, OnEnd on_told) {
  auto written = std::make_shared<std::string>();
  auto with_next = [this, mine, written] {
    RoundEnd end = mine;
    if (began_next_ && options_.next_round_hint) end.next_round = options_.next_round_hint();
    return *written = end.encode();
  };
  requests().compare_set(
      options_.prefix + "over", "", std::move(with_next),
      [this, on_told, written](const std::string& held) {
        RoundEnd end = told(held);
        end_settled_ = true;
        if (options_.on_end_writer) options_.on_end_writer(end, held == *written);
        on_told(std::move(end));
      },
      [this, mine, on_told](const std::string& why) {
        spdlog::warn("could not tell the other nodes: {}", why);
        end_settled_ = true;
        if (options_.on_end_writer) options_.on_end_writer(mine, std::nullopt);
        on_told(mine);
      });
}

// This node counted among the finished with its mark (LoopStore::count_in(): on a
// TCPStore an ADD on "done", then "done/<group rank>"; on etcd both in one
// transaction), the last to count sets "all_done"; then a wait for "all_done": one key
// each, where a wait for every node's mark made the store hold N x N waits. A node
// that died after it counted and before its mark is lost, not finished
// (drop_finished()), so nobody waits for an "all_done" it was to set. Where the count
// gave way to a stop signal, nothing more: the loop takes the signal, which ends the
// wait for the others.
void StoreRound::finish_node(OnAllDone on_all_done, OnLost on_lost) {
  all_done_ = std::move(on_all_done);
  requests().count_to(
      options_.prefix + "done",
      options_.prefix + "done/" + std::to_string(options_.info.group_rank),
      options_.info.group_world_size, options_.prefix + "all_done", close_run(),
      [this, on_lost] {
        try {  // a connection of its own, made now
          std::vector<std::string> all_done{options_.prefix + "all_done"};
          done_wait_ = std::make_unique<KeyWaiter>(
              io_, options_.connect(), std::move(all_done), [this](auto) { this->all_done(); },
              [this, on_lost](const std::string& why) { on_lost(lost(why)); });
        } catch (const std::exception& e) {
          on_lost(lost(e.what()));
        }
      },
      [this, on_lost](const std::string& why) { on_lost(lost(why)); });
}

void StoreRound::all_done() {
  if (auto done = std::exchange(all_done_, nullptr)) done();
}

// A member that left after it marked itself done, while this node, finished too, still
// waits for "all_done" (or, at group rank 0, every interval of that wait): "all_done"
// is read, and where it is there, this node's wait ends (the member most often left
// because it saw it: at 1,024 agents on etcd, the word reaches some nodes after the
// first have left). Otherwise every mark is read once. They are all there where the
// last node to finish set no "all_done" (an agent of an earlier version, which marks
// itself but counts nothing or counts another way), and this node sets it: every
// node's wait ends.
void StoreRound::check_all_marked() {
  requests().read(
      {options_.prefix + "all_done"},
      [this](const std::optional<RoundRequests::Values>& set) {
        if (!set || !all_done_) return;
        if (set->at(0)) return all_done();
        read_marks();
      },
      [](const std::string& why) {
        spdlog::debug("could not read whether all finished: {}", why);
      });
}

void StoreRound::read_marks() {
  requests().read(
      done_keys(),
      [this](const std::optional<RoundRequests::Values>& done) {
        if (!done || !all_done_) return;
        for (const auto& mark : *done) {
          if (!mark) return;
        }
        // The run is closed first (where this node is to), and this node's wait ends
        // once the others are told (ending it first may stop the requests before the
        // word went out).
        if (auto close = close_run()) {
          requests().run(std::move(close), [](const std::string& why) {
            spdlog::warn("could not close the rendezvous: {}", why);
          });
        }
        requests().write(
            options_.prefix + "all_done", "1", [this] { all_done(); },
            [this](const std::string& why) {
              spdlog::debug("could not tell the other nodes that every node finished: {}", why);
              all_done();
            });
      },
      [](const std::string& why) {
        spdlog::debug("could not read which nodes finished: {}", why);
      });
}

// options_.close_run, whose failure is said rather than thrown: "all_done" is set all
// the same (the others must not wait for ever). Null where there is none.
RoundRequests::Work StoreRound::close_run() const {
  if (!options_.close_run) return nullptr;
  return [close = options_.close_run](CancelSignal& cancel) -> Task<void> {
    std::optional<std::string> why;
    try {
      co_await close(cancel);
    } catch (const std::exception& e) {
      why = e.what();
    }
    cancel.check();  // stopped: nothing more
    if (why) spdlog::warn("could not close the rendezvous: {}", *why);
  };
}

std::vector<std::string> StoreRound::done_keys() const {
  std::vector<std::string> keys;
  for (int k = 0; k < options_.info.group_world_size; ++k) {
    keys.push_back(options_.prefix + "done/" + std::to_string(k));
  }
  return keys;
}

void StoreRound::unfinished(OnUnfinished on_read) {
  requests().read(
      done_keys(),
      [on_read](const std::optional<RoundRequests::Values>& done) {
        std::vector<int> out;
        for (size_t k = 0; done && k < done->size(); ++k)
          if (!(*done)[k]) out.push_back(static_cast<int>(k));
        on_read(std::move(out));
      },
      [on_read](const std::string& why) {
        spdlog::debug("could not read which nodes finished: {}", why);
        on_read({});
      });
}

void StoreRound::start_next_round(bool failure, const std::set<std::string>& lost) {
  if (!options_.start_next) return;
  began_next_ = true;
  requests().run(
      [this, failure, lost](CancelSignal& cancel) {
        return options_.start_next(failure, lost, cancel);
      },
      [](const std::string& why) { spdlog::warn("could not begin the next round: {}", why); });
}

void StoreRound::after_requests(OnAllDone on_settled) {
  requests().after_requests(std::move(on_settled));
}

void StoreRound::note_failure(const std::string& reason) {
  if (!options_.note_failure) return;
  requests().run(
      [this, reason](CancelSignal& cancel) { return options_.note_failure(reason, cancel); },
      [](const std::string& why) {
        spdlog::warn("could not count this node's failure towards its quarantine: {}", why);
      });
}

void StoreRound::spares(OnSpares on_read) {
  if (!options_.spares_in) return on_read(std::vector<std::string>{});
  requests().read(
      {options_.state_key},
      [this, on_read](const std::optional<RoundRequests::Values>& state) {
        if (!state) return on_read(std::nullopt);  // gave way: read again later
        if (!state->at(0)) return on_read(std::vector<std::string>{});
        try {
          on_read(options_.spares_in(*state->at(0)));
        } catch (const std::exception& e) {
          spdlog::debug("could not read the spares: {}", e.what());
          on_read(std::nullopt);
        }
      },
      [on_read](const std::string& why) {
        spdlog::debug("could not read the spares: {}", why);
        on_read(std::nullopt);
      });
}

// This node's part is written and every part waited for, both on the loop; where the
// wait fails or the time is up, what is there by then is read.
void StoreRound::gather(const std::string& name, const std::string& mine,
                        std::chrono::milliseconds timeout, OnGathered on_gathered) {
  std::vector<int> everyone(static_cast<size_t>(options_.info.group_world_size));
  std::iota(everyone.begin(), everyone.end(), 0);
  gather_from(name, mine, std::move(everyone), timeout, std::move(on_gathered));
}

void StoreRound::gather_from(const std::string& name, const std::string& mine,
                             std::vector<int> group_ranks, std::chrono::milliseconds timeout,
                             OnGathered on_gathered) {
  auto key_of = [&](int k) { return options_.prefix + "gather/" + name + "/" + std::to_string(k); };
  std::string my_key = key_of(options_.info.group_rank);
  if (!on_gathered) {
    requests().write(
        my_key, mine, [] {},
        [](const std::string& why) {
          spdlog::warn("could not share with the other nodes: {}", why);
        });
    return;
  }
  std::vector<std::string> keys;
  for (int k : group_ranks) keys.push_back(key_of(k));
  Gathering& g = gatherings_[name];    // a gather of the same name again replaces it
  if (g.answered) *g.answered = true;  // the one replaced answers nobody
  g.answered = std::make_shared<bool>(false);
  g.timer = clock_.make_timer();
  // Whichever comes first answers; the others are dropped.
  auto answer = [this, answered = g.answered, on_gathered, name,
                 timer = g.timer.get()](std::vector<std::string> parts) {
    if (*answered) return;
    *answered = true;
    timer->cancel();
    boost::asio::post(io_, [this, on_gathered, name, timer, parts = std::move(parts)] {
      auto it = gatherings_.find(name);
      if (it == gatherings_.end() || it->second.timer.get() != timer) return;  // stopped
      gatherings_.erase(it);
      on_gathered(parts);
    });
  };
  // This node's own part, where it is among them, is what it shares.
  auto with_mine = [group_ranks, me = options_.info.group_rank,
                    mine](std::vector<std::string> parts) {
    for (size_t i = 0; i < group_ranks.size(); ++i) {
      if (group_ranks[i] == me) parts.at(i) = mine;
    }
    return parts;
  };
  auto only_mine = [answer, with_mine, n = keys.size()] {
    answer(with_mine(std::vector<std::string>(n)));
  };
  auto present = [this, answer, only_mine, with_mine, keys] {
    read_parts(keys, [answer, only_mine, with_mine](std::optional<std::vector<std::string>> parts) {
      if (!parts) return only_mine();
      answer(with_mine(std::move(*parts)));
    });
  };
  requests().write(
      my_key, mine, [] {},
      [only_mine](const std::string& why) {
        spdlog::warn("could not share with the other nodes: {}", why);
        only_mine();
      });
  // Once every part is there, they are the wait's values where the wait brought them
  // (etcd), else read as the time being up reads them.
  std::unique_ptr<store::LoopStore> waiting = options_.connect();
  bool with_values = waiting->wait_brings_values();
  auto there = [present, answer, with_mine, with_values](std::vector<std::string> parts) {
    if (!with_values) return present();
    answer(with_mine(std::move(parts)));
  };
  g.wait = std::make_unique<KeyWaiter>(
      io_, std::move(waiting), keys, there, [present](const std::string&) { present(); },
      with_values ? KeyWaiter::Read::kValues : KeyWaiter::Read::kNone);
  g.timer->start(timeout, present);
}

void StoreRound::read_parts(std::vector<std::string> keys, OnParts on_read,
                            std::vector<std::string> read_so_far) {
  if (read_so_far.size() == keys.size()) return on_read(std::move(read_so_far));
  size_t from = read_so_far.size();
  std::vector<std::string> next(
      keys.begin() + static_cast<std::ptrdiff_t>(from),
      keys.begin() + static_cast<std::ptrdiff_t>(std::min(keys.size(), from + kPartsPerRead)));
  requests().read(
      std::move(next),
      [this, keys = std::move(keys), on_read, so_far = std::move(read_so_far)](
          const std::optional<RoundRequests::Values>& values) mutable {
        if (!values) return on_read(std::nullopt);
        for (const auto& v : *values) so_far.push_back(v.value_or(""));
        read_parts(std::move(keys), std::move(on_read), std::move(so_far));
      },
      [on_read](const std::string& why) {
        spdlog::warn("could not read what the other nodes shared: {}", why);
        on_read(std::nullopt);
      });
}

// One key per name holds the round's largest: each node raises it and reads it, so
// the exchange costs the store the same per node however many nodes share. Both are
// quick requests of the round, taken in order: the read comes after the raise.
void StoreRound::share_max(const std::string& name, int64_t mine, OnMax on_max) {
  std::string key = options_.prefix + "max/" + name;
  auto written = shared_.find(name);
  if (written == shared_.end() || written->second < mine) {
    shared_[name] = mine;
    requests().raise(key, mine, [name](const std::string& why) {
      spdlog::debug("could not share {} with the other nodes: {}", name, why);
    });
  }
  requests().read(
      {key},
      [mine, on_max](const std::optional<RoundRequests::Values>& values) {
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
  std::string key =
      options_.prefix + "pub/" + name + "/" + std::to_string(options_.info.group_rank);
  requests().write(
      key, value, [] {},
      [name](const std::string& why) {
        spdlog::debug("could not publish {} to the other nodes: {}", name, why);
      });
}

void StoreRound::read_published(const std::string& name, std::vector<int> group_ranks,
                                OnPublished on_read) {
  std::vector<std::string> keys;
  keys.reserve(group_ranks.size());
  for (int k : group_ranks)
    keys.push_back(options_.prefix + "pub/" + name + "/" + std::to_string(k));
  requests().read(
      std::move(keys),
      [on_read](std::optional<RoundRequests::Values> values) {
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
  heartbeat_->cancel();
  // The request in progress ends with no callback. What is asked after (the hang
  // report's gather, once the attempt is over) goes on a connection of its own.
  requests_.reset();
  gatherings_.clear();
  end_wait_.reset();
  done_wait_.reset();
}

}  // namespace ddprun::rendezvous
