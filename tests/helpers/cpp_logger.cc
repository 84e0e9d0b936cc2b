// A C++ worker that logs through the header-only tracking client: N points per rank.
#include <cstdlib>
#include <string>

#include "tracking/ddprun_tracking.hpp"

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 10;
  const char* rank = std::getenv("RANK");
  ddprun::track::config({{"model", "tiny \"quoted\""}});
  for (int i = 0; i < n; ++i) {
    ddprun::track::log({{"loss", 1.0 / (i + 1)}, {"rank", rank ? std::atof(rank) : -1}}, i);
  }
  ddprun::track::summary({{"done", "yes"}});
  return 0;
}
