// Tracking costs: the C++ client per point, and the agent's ingestion rate into run.db.
//   ddprun_tracking_bench [points]
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tracking/run_store.h"
#include "tracking/stream_ingester.h"

using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  long points = argc > 1 ? std::atol(argv[1]) : 1'000'000;
  char tmpl[] = "/tmp/ddprun_tracking_bench_XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  std::filesystem::create_directories(dir + "/streams");

  // Ingestion: records of 10 values, as a training loop logging a handful of metrics.
  {
    std::ofstream out(ddprun::tracking::stream_path(dir, 0, 0, 0));
    for (long i = 0; i < points / 10; ++i) {
      out << "{\"k\":\"log\",\"seq\":" << i + 1 << ",\"t\":1700000000." << i % 1000
          << ",\"step\":" << i << ",\"d\":{";
      for (int k = 0; k < 10; ++k) out << (k ? "," : "") << "\"m" << k << "\":" << 0.5 * k + i;
      out << "}}\n";
    }
  }
  ddprun::tracking::RunStore store(dir, ddprun::tracking::RunStore::Open::kCreate);
  ddprun::tracking::StreamIngester ingester(store, dir);
  auto start = Clock::now();
  auto stats = ingester.drain(true);
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("| ingestion into run.db | %ld points in %.3f s: %.0f points/s |", stats.points,
              seconds, stats.points / seconds);
  std::filesystem::remove_all(dir);
  return 0;
}
