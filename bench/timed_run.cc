// Runs a command once and prints its wall time (seconds) and peak RSS (KiB, ru_maxrss
// of it and what it reaped) on stdout. For bench/launch_bench.py: the clock starts at
// the fork and stops when the command has been reaped, so this program's own start-up
// is not counted (GNU time's was: ~1 ms here, more than a shell's start of four
// programs). The command's stdout goes to /dev/null, its stderr stays this program's.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ddprun_timed_run COMMAND [ARGS...]\n");
    return 2;
  }
  auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) ::dup2(null, STDOUT_FILENO);
    ::execvp(argv[1], argv + 1);
    std::fprintf(stderr, "ddprun_timed_run: cannot run %s: %s\n", argv[1], std::strerror(errno));
    ::_exit(127);
  }
  if (pid < 0) {
    std::fprintf(stderr, "ddprun_timed_run: fork: %s\n", std::strerror(errno));
    return 1;
  }
  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  std::chrono::duration<double> wall = std::chrono::steady_clock::now() - start;
  std::printf("%.6f %ld\n", wall.count(), usage.ru_maxrss);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
