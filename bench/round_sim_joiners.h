#pragma once

#include <string>

namespace ddprun::bench {

// Where the joiners meet: ddprun's store server (its port), or etcd.
struct Meeting {
  int port = 0;
  std::string etcd;    // endpoint; empty: the store server
  std::string prefix;  // every key under it
};

// One process' joiners, nodes [first, first + count) of `nodes`: connects them all,
// says so on `ready`, then runs each phase on a byte on `go` (round_sim.cc), saying on
// `ready` when its joiners are through. Exit status 0 when every one got the
// completed round.
int run_joiners(const Meeting& meet, int first, int count, int nodes, bool watch_all, bool hang_all,
                int floor_waves, int ready, int go);

}  // namespace ddprun::bench
