// A worker for black-box tests of ddprun, one behaviour per mode:
//   env                      print "KEY=VALUE" for every environment variable
//   exit N                   exit with status N
//   raise N                  kill itself with signal N
//   fail_before N CODE       exit CODE while TORCHELASTIC_RESTART_COUNT < N, else 0
//   fail_rank R CODE         rank R exits CODE at once, the others wait to be stopped
//   hang DIR [ignore_term]   write DIR/<rank>.pids (own pid and a grandchild's) and sleep
//   catch SIG DIR            on signal SIG (a number) create DIR/<rank>.got and exit 0;
//                            DIR/<rank>.ready once the handler is in place
//   mark DIR                 create DIR/w<WORLD_SIZE>.r<RANK>.a<RESTART_COUNT> and sleep
//   mark_until DIR FILE [N]  the same marker, then exit N (default 0) once FILE exists
//   fail_first DIR FAIL STOP the same marker; in the first attempt exit 1 once FAIL
//                            exists; exit 0 once STOP exists
//   steps DIR FILE MS        the same marker, then steps of MS ms of its own work each
//                            (ddprun::track::step()) until FILE exists; exit 0
//   error_file MSG           write torchrun's error file with MSG and exit 1
//   chatter N                print N long lines, each in several separate writes
//   tick N MS                print a line every MS milliseconds, N times, then exit 0
//   args ...                 print each argument on its own line
//   lines TEXT...            print each TEXT on stdout and "err:" TEXT on stderr
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "tracking/ddprun_tracking.hpp"

extern char** environ;

namespace {

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}

void write_str(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

[[noreturn]] void sleep_forever() {
  while (true) ::pause();
}

// DIR/w<WORLD_SIZE>.r<RANK>.a<RESTART_COUNT>, holding this worker's pid.
void mark(const std::string& dir) {
  std::string name = dir + "/w" + std::to_string(env_int("WORLD_SIZE")) + ".r" +
                     std::to_string(env_int("RANK")) + ".a" +
                     std::to_string(env_int("TORCHELASTIC_RESTART_COUNT"));
  std::ofstream(name) << ::getpid() << "\n";
}

std::string g_got_path;

void got_signal(int /*sig*/) {
  int fd = ::open(g_got_path.c_str(), O_CREAT | O_WRONLY, 0644);
  if (fd >= 0) ::close(fd);
  ::_exit(0);
}

int catch_signal(int sig, const std::string& dir) {
  std::string rank = std::to_string(env_int("RANK"));
  g_got_path = dir + "/" + rank + ".got";
  ::signal(sig, got_signal);
  std::ofstream(dir + "/" + rank + ".ready") << ::getpid() << "\n";
  sleep_forever();
}

int hang(const std::string& dir, bool ignore_term) {
  if (ignore_term) ::signal(SIGTERM, SIG_IGN);
  pid_t grandchild = ::fork();
  if (grandchild == 0) sleep_forever();
  std::string path = dir + "/" + std::to_string(env_int("RANK")) + ".pids";
  {
    std::ofstream out(path + ".tmp");
    out << ::getpid() << " " << grandchild << "\n";
  }
  std::rename((path + ".tmp").c_str(), path.c_str());
  sleep_forever();
}

// Leaves a daemon behind (its own session, parent gone) and exits 0 once the daemon
// has written its pid to <dir>/daemon.pid.
int daemon_behind(const std::string& dir) {
  int ready[2];
  if (::pipe(ready) != 0) return 65;
  pid_t child = ::fork();
  if (child == 0) {
    ::setsid();
    if (::fork() == 0) {
      std::ofstream(dir + "/daemon.pid") << ::getpid() << "\n";
      char c = 1;
      [[maybe_unused]] ssize_t n = ::write(ready[1], &c, 1);
      sleep_forever();
    }
    ::_exit(0);
  }
  ::waitpid(child, nullptr, 0);
  char c = 0;
  [[maybe_unused]] ssize_t n = ::read(ready[0], &c, 1);
  return 0;
}

int error_file(const std::string& msg) {
  const char* path = std::getenv("TORCHELASTIC_ERROR_FILE");
  if (path == nullptr) return 3;
  std::ofstream out(path);
  out << R"({"message": {"message": "RuntimeError: )" << msg
      << R"(", "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  File \"train.py\", line 3\nRuntimeError: )"
      << msg << R"(", "timestamp": "1700000000"}}})";
  return 1;
}

int chatter(int n) {
  int rank = env_int("RANK");
  std::string body(200, static_cast<char>('a' + rank % 26));
  for (int i = 0; i < n; ++i) {
    write_str(1, "rank" + std::to_string(rank) + " ");
    write_str(1, body);
    write_str(1, " line" + std::to_string(i));
    write_str(1, "\n");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 64;
  std::string mode = argv[1];
  if (mode == "env") {
    for (char** e = environ; *e; ++e) std::printf("%s\n", *e);
    return 0;
  }
  if (mode == "exit" && argc > 2) return std::atoi(argv[2]);
  if (mode == "raise" && argc > 2) {
    ::raise(std::atoi(argv[2]));
    return 0;
  }
  if (mode == "fail_before" && argc > 3) {
    std::printf("attempt %d\n", env_int("TORCHELASTIC_RESTART_COUNT"));
    std::fflush(stdout);
    return env_int("TORCHELASTIC_RESTART_COUNT") < std::atoi(argv[2]) ? std::atoi(argv[3]) : 0;
  }
  if (mode == "fail_rank" && argc > 3) {
    if (env_int("RANK") == std::atoi(argv[2])) return std::atoi(argv[3]);
    sleep_forever();
  }
  if (mode == "hang" && argc > 2) return hang(argv[2], argc > 3);
  if (mode == "sleep") {  // stuck in sleep(3), as a hung C++ program would be
    for (;;) ::sleep(3600);
  }
  if (mode == "catch" && argc > 3) return catch_signal(std::atoi(argv[2]), argv[3]);
  if (mode == "mark" && argc > 2) {
    mark(argv[2]);
    sleep_forever();
  }
  if (mode == "mark_until" && argc > 3) {
    mark(argv[2]);
    while (::access(argv[3], F_OK) != 0) ::usleep(10'000);
    return argc > 4 ? std::atoi(argv[4]) : 0;
  }
  if (mode == "fail_first" && argc > 4) {
    mark(argv[2]);
    bool first = env_int("TORCHELASTIC_RESTART_COUNT") == 0;
    while (::access(argv[4], F_OK) != 0) {
      if (first && ::access(argv[3], F_OK) == 0) return 1;
      ::usleep(10'000);
    }
    return 0;
  }
  if (mode == "steps" && argc > 4) {
    mark(argv[2]);
    auto own = static_cast<useconds_t>(std::atoi(argv[4]) * 1000);
    while (::access(argv[3], F_OK) != 0) {
      ::usleep(own);
      ddprun::track::step();
    }
    return 0;
  }
  if (mode == "error_file" && argc > 2) return error_file(argv[2]);
  if (mode == "daemon" && argc > 2) return daemon_behind(argv[2]);
  if (mode == "chatter" && argc > 2) return chatter(std::atoi(argv[2]));
  if (mode == "tick" && argc > 3) {
    for (int i = 0; i < std::atoi(argv[2]); ++i) {
      write_str(1, "tick " + std::to_string(i) + "\n");
      ::usleep(static_cast<useconds_t>(std::atoi(argv[3]) * 1000));
    }
    return 0;
  }
  if (mode == "fds") {  // the open descriptors, e.g. "fds 0 1 2"
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) return 65;
    std::vector<int> fds;
    while (dirent* e = ::readdir(dir)) {
      if (e->d_name[0] != '.' && std::atoi(e->d_name) != ::dirfd(dir))
        fds.push_back(std::atoi(e->d_name));
    }
    ::closedir(dir);
    std::sort(fds.begin(), fds.end());
    std::printf("fds");
    for (int fd : fds) std::printf(" %d", fd);
    std::printf("\n");
    return 0;
  }
  if (mode == "args") {
    for (int i = 2; i < argc; ++i) std::printf("%s\n", argv[i]);
    return 0;
  }
  if (mode == "lines") {
    for (int i = 2; i < argc; ++i) {
      std::printf("%s\n", argv[i]);
      std::fflush(stdout);
      std::fprintf(stderr, "err:%s\n", argv[i]);
    }
    return 0;
  }
  return 64;
}
