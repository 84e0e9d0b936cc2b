#include <map>

#include <boost/asio/post.hpp>

#include "rendezvous/round/round_coordinator.h"

namespace ddprun::rendezvous {
namespace {

class LocalRound : public RoundCoordinator {
 public:
  explicit LocalRound(boost::asio::io_context& io) : io_(io) {}
  void watch_end(OnEnd, OnLost) override {}
  void watch_members(OnDead, OnLost) override {}
  void end(const RoundEnd& mine, OnEnd on_told) override {
    boost::asio::post(io_, [alive = alive_, f = std::move(on_told), mine] {
      if (*alive) f(mine);
    });
  }
  void finish_node(OnAllDone on_all_done, OnLost) override {
    boost::asio::post(io_, [alive = alive_, f = std::move(on_all_done)] {
      if (*alive) f();
    });
  }
  void unfinished(OnUnfinished on_read) override {
    boost::asio::post(io_, [alive = alive_, f = std::move(on_read)] {
      if (*alive) f({});
    });
  }
  void start_next_round(bool, const std::set<std::string>&) override {}
  void after_requests(OnAllDone on_settled) override {
    boost::asio::post(io_, [alive = alive_, f = std::move(on_settled)] {
      if (*alive) f();
    });
  }
  void spares(OnSpares on_read) override {
    boost::asio::post(io_, [alive = alive_, f = std::move(on_read)] {
      if (*alive) f(std::vector<std::string>{});
    });
  }
  void gather(const std::string& name, const std::string& mine, std::chrono::milliseconds timeout,
              OnGathered on_gathered) override {
    gather_from(name, mine, {0}, timeout, std::move(on_gathered));
  }
  // Group rank 0 is this node; no other shares anything.
  void gather_from(const std::string&, const std::string& mine, std::vector<int> group_ranks,
                   std::chrono::milliseconds, OnGathered on_gathered) override {
    if (!on_gathered) return;  // nobody else to share with
    std::vector<std::string> parts;
    for (int k : group_ranks) parts.push_back(k == 0 ? mine : "");
    boost::asio::post(io_, [alive = alive_, f = std::move(on_gathered), parts] {
      if (*alive) f(parts);
    });
  }
  void share_max(const std::string&, int64_t mine, OnMax on_max) override {
    boost::asio::post(io_, [alive = alive_, f = std::move(on_max), mine] {
      if (*alive) f(mine);
    });
  }
  void publish(const std::string& name, const std::string& value) override {
    published_[name] = value;
  }
  void read_published(const std::string& name, std::vector<int> group_ranks,
                      OnPublished on_read) override {
    std::vector<std::string> values;
    for (int k : group_ranks) {
      auto it = published_.find(name);
      values.push_back(k == 0 && it != published_.end() ? it->second : "");
    }
    boost::asio::post(io_, [alive = alive_, f = std::move(on_read), values] {
      if (*alive) f(values);
    });
  }
  void stop() override {
    *alive_ = false;
    alive_ = std::make_shared<bool>(true);  // for what is started after
  }
  ~LocalRound() override { stop(); }

 private:
  boost::asio::io_context& io_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::map<std::string, std::string> published_;
};

}  // namespace

std::unique_ptr<RoundCoordinator> make_local_round(boost::asio::io_context& io) {
  return std::make_unique<LocalRound>(io);
}

}  // namespace ddprun::rendezvous
