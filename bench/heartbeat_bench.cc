// The C++ client's cost per call of heartbeat() and of a one-value log(), as one
// process sees it: `on` maps a progress page first (hang detection on), `off` does not.
// Needs DDPRUN_TRACKING_STREAM (a file) for log() to do its real work.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tracking/ddprun_tracking.hpp"

namespace {

template <typename F>
double ns_per_call(long calls, F call) {
  auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < calls; ++i) call(i);
  ddprun::track::flush();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s * 1e9 / static_cast<double>(calls);
}

// A page as ddprun creates it: 128 bytes starting with the magic.
bool make_page(const std::string& path) {
  char page[128] = {};
  std::memcpy(page, "DDPRPG01", 8);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && ::write(fd, page, sizeof(page)) == static_cast<ssize_t>(sizeof(page));
  if (fd >= 0) ::close(fd);
  return ok && ::setenv("DDPRUN_PROGRESS_FILE", path.c_str(), 1) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool on = argc > 1 && std::strcmp(argv[1], "on") == 0;
  long n = argc > 2 ? std::atol(argv[2]) : 2'000'000;
  std::string page = "/tmp/ddprun_heartbeat_bench_" + std::to_string(::getpid());
  if (on && !make_page(page)) {
    std::fprintf(stderr, "cannot create %s\n", page.c_str());
    return 2;
  }
  double beat = ns_per_call(n, [](long) { ddprun::track::heartbeat(); });
  double log = ns_per_call(n, [](long i) {
    ddprun::track::log({{"loss", 0.5 * static_cast<double>(i)}}, i);
  });
  std::printf("%.1f %.1f\n", beat, log);
  if (on) ::unlink(page.c_str());
  return 0;
}
