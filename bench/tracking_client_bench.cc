// The header-only C++ tracking client's cost per point (one value per log call).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tracking/ddprun_tracking.hpp"

int main(int argc, char** argv) {
  long n = argc > 1 ? std::atol(argv[1]) : 1'000'000;
  if (!ddprun::track::active()) {
    std::fprintf(stderr, "set DDPRUN_TRACKING_STREAM to a file\n");
    return 2;
  }
  auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) ddprun::track::log({{"loss", 0.5 * static_cast<double>(i)}}, i);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("| C++ client log() | %ld points | %.0f ns/point |\n", n, s * 1e9 / n);
  return 0;
}
