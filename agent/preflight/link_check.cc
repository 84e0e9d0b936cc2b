#include "agent/preflight/link_check.h"

#include <charconv>
#include <memory>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "agent/preflight/link_probe.h"
#include "agent/preflight/preflight_options.h"
#include "common/loop_condition.h"
#include "rendezvous/join/dynamic_state.h"

namespace ddprun::agent {

Task<void> LinkCheck::probe(const rendezvous::RendezvousInfo& info,
                            rendezvous::RoundCoordinator& round, CancelSignal& cancel) {
  if (info.group_world_size < 2 || info.members == probed_) co_return;
  probed_ = info.members;
  size_t n = info.members.size();
  if (n < 2) co_return;  // nodes known by rank only (static rendezvous): nothing to probe
  // A member is "<address>/<pid>/<port of its workers' store>", which the probe speaks to.
  const std::string& next = info.members[(static_cast<size_t>(info.group_rank) + 1) % n];
  std::string host = rendezvous::node_address(next);
  int port = 0;
  size_t port_at = next.rfind('/');
  if (port_at != std::string::npos) {
    std::from_chars(next.data() + port_at + 1, next.data() + next.size(), port);
  }
  if (port <= 0 || host == next) {
    spdlog::debug("preflight: link: no probe in a round of fixed nodes ({})", next);
    co_return;
  }
  // The next node's store is ready for the probe once that node has its round (group
  // rank 0 cuts off whoever is connected to its store as it takes the round): each node
  // waits for its neighbour only, so the wait costs the same at any size. On the heap:
  // held in this frame, GCC 12 (docs/contributing.md) takes the frame's delete for a mismatched
  // one.
  // The answer may come after this frame ended (a cancel): it holds neither by pointer.
  auto ready = std::make_shared<bool>(false);
  auto changed = std::make_shared<LoopCondition>(io_);
  auto hook = std::make_unique<CancelSignal::Hook>(cancel, [c = changed.get()] { c->notify(); });
  int next_rank = (info.group_rank + 1) % static_cast<int>(n);
  round.gather_from("links_ready", "1", {next_rank}, kReadyWait,
                    [ready, weak = std::weak_ptr<LoopCondition>(changed)](
                        const std::vector<std::string>&) {
                      *ready = true;
                      if (auto c = weak.lock()) c->notify();
                    });
  const bool* is_ready = ready.get();
  const CancelSignal* stop = &cancel;
  co_await changed->until([is_ready, stop] { return *is_ready || stop->cancelled(); });
  hook.reset();
  if (cancel.cancelled()) co_return;
  LinkFigures mine = co_await probe_link(host, port, PreflightOptions::kLinkBudget, cancel);
  if (cancel.cancelled()) co_return;
  if (!mine.error.empty()) {
    spdlog::warn("preflight: link: could not probe the link to {}: {}", host, mine.error);
  } else {
    spdlog::info("preflight: link to {}: round trip {:.2f} ms, {:.0f} MB/s there, {:.0f} MB/s back",
                 host, mine.rtt_ms, mine.up_mbps, mine.down_mbps);
  }
  // Group rank 0 alone gathers the figures, judges them as they come (while the
  // workers run) and has the run keep them; the others only share theirs.
  if (info.group_rank != 0) {
    round.gather("links", mine.to_json(), PreflightOptions::kLinkGather, {});
    co_return;
  }
  std::vector<std::string> nodes;
  nodes.reserve(n);
  for (const auto& m : info.members) nodes.push_back(rendezvous::node_address(m));
  round.gather("links", mine.to_json(), PreflightOptions::kLinkGather,
               [this, nodes, attempt = info.restart_count](const std::vector<std::string>& parts) {
                 judge(nodes, parts, attempt);
               });
}

// Says which node or link is slow; the run keeps every figure.
void LinkCheck::judge(const std::vector<std::string>& nodes, const std::vector<std::string>& parts,
                      int attempt) {
  std::vector<LinkFigures> probes;
  nlohmann::json report{{"nodes", nodes}, {"probes", nlohmann::json::array()}};
  for (const auto& part : parts) {
    probes.push_back(LinkFigures::from_json(part));
    report["probes"].push_back(nlohmann::json::parse(probes.back().to_json()));
  }
  std::vector<std::string> slow = slow_links(nodes, probes);
  report["slow"] = slow;
  for (const auto& s : slow) spdlog::warn("preflight: link: {}", s);
  if (observer_) observer_->links_probed(attempt, report.dump());
}

}  // namespace ddprun::agent
