#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/cancel_signal.h"
#include "common/coro.h"

namespace ddprun::agent {

/// What one node's probe of its link to another found (preflight's `link` check).
struct LinkFigures {
  double rtt_ms = 0;     // the fastest of a few round trips
  double up_mbps = 0;    // megabytes a second, this node to the other
  double down_mbps = 0;  // the other way
  std::string error;     // why there are no figures ("" when there are)

  std::string to_json() const;
  /// From to_json(); figures with an error when `text` is none (a node that sent none).
  static LinkFigures from_json(const std::string& text);
};

/// Probes the link to the node whose workers' store (ddprun's TCPStore server) listens
/// at host:port, by ddprun's own requests on one connection: round trips of a ping,
/// then values sent and read back, one at a time, growing from 64 KiB to 4 MiB while
/// each is quick, each way until kProbeBytes or half of `budget` went by (a slow link
/// takes one value longer). Each wait is the loop's completion; an error, `cancel`'s
/// included, becomes LinkFigures::error.
Task<LinkFigures> probe_link(std::string host, int port, std::chrono::milliseconds budget,
                             CancelSignal& cancel);
inline constexpr size_t kProbeBytes = 16 * 1024 * 1024;

/// The probes of one round: node g of `nodes` probed node g+1 (the last node the
/// first). A node whose faster probe (to or from it, its slower way) is still far
/// slower than the median node's is named: a quarter of the bandwidth, or four times
/// the round trip and 1 ms more. Otherwise a probe far slower than the median probe
/// names its link. Needs three nodes or more with figures from every one: with two
/// there is nothing to compare with. Returns what to say, one line each.
std::vector<std::string> slow_links(const std::vector<std::string>& nodes,
                                    const std::vector<LinkFigures>& probes);

}  // namespace ddprun::agent
