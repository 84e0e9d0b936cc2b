// The header-only C++ tracking client's cost per point: one value per log() call (the
// worst case: every point pays a whole record), and ten values per call (a training
// step logging a handful of metrics). The background thread's writes to the stream
// file run meanwhile and are included.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tracking/ddprun_tracking.hpp"

namespace {

template <typename F>
double ns_per_point(long calls, int points_per_call, F log) {
  auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < calls; ++i) log(i);
  ddprun::track::flush();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s * 1e9 / (static_cast<double>(calls) * points_per_call);
}

}  // namespace

int main(int argc, char** argv) {
  long n = argc > 1 ? std::atol(argv[1]) : 1'000'000;
  if (!ddprun::track::active()) {
    std::fprintf(stderr, "set DDPRUN_TRACKING_STREAM to a file\n");
    return 2;
  }
  double one = ns_per_point(n, 1, [](long i) {
    ddprun::track::log({{"loss", 0.5 * static_cast<double>(i)}}, i);
  });
  double ten = ns_per_point(n / 10, 10, [](long i) {
    double x = static_cast<double>(i);
    ddprun::track::log({{"loss", x * 0.5},
                        {"acc", x * 0.25},
                        {"lr", 1e-3},
                        {"grad_norm", x * 0.1},
                        {"tokens", x * 4096},
                        {"step_time", 0.25},
                        {"data_time", 0.01},
                        {"mem", 1234.5},
                        {"scale", 65536},
                        {"epoch", 3}},
                       i);
  });
  std::printf("| C++ client log(), 10 values per call | %.0f ns/point (1 value per call: %.0f ns) |\n",
              ten, one);
  return 0;
}
