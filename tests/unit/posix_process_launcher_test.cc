// The real launcher: a group's children start side by side, each with its own
// arguments and environment, with default signals, and the memory they read until
// their exec is given back once the loop has learned that they all execed.
#include "agent/posix_process_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/helpers/scratch.h"

namespace ddprun::agent {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

SpawnOptions shell(const std::string& script, std::vector<std::string> args = {},
                   std::vector<std::string> env = {}) {
  SpawnOptions o;
  o.executable = "/bin/sh";
  o.argv = {"/bin/sh", "-c", script, "sh"};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.env = std::move(env);
  return o;
}

// Runs the loop until `n` children have exited; their exit codes by pid.
std::map<pid_t, int> run_until_exited(boost::asio::io_context& io, PosixProcessLauncher& launcher,
                                      size_t n) {
  std::map<pid_t, int> exits;
  launcher.on_exit([&](const std::vector<ChildExit>& ended) {
    for (const auto& e : ended) exits[e.pid] = e.exitcode;
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (exits.size() < n && std::chrono::steady_clock::now() < deadline) {
    io.run_one_for(std::chrono::milliseconds(100));
  }
  return exits;
}

TEST(PosixProcessLauncher, StartsAGroupSideBySideEachWithItsOwnArgumentsAndEnvironment) {
  std::string dir = test::scratch_dir("ddprun_spawn_");
  boost::asio::io_context io;
  PosixProcessLauncher launcher(io);
  constexpr int kChildren = 32;
  std::vector<pid_t> pids;
  for (int i = 0; i < kChildren; ++i) {
    std::string n = std::to_string(i);
    pids.push_back(
        launcher.spawn(shell("echo \"$1 $RANK\" > \"$2\"", {n, dir + "/" + n}, {"RANK=" + n})));
  }
  EXPECT_EQ(launcher.starting(), static_cast<size_t>(kChildren))
      << "what the children read until their exec is held until the loop runs";
  auto exits = run_until_exited(io, launcher, kChildren);
  ASSERT_EQ(exits.size(), static_cast<size_t>(kChildren));
  for (int i = 0; i < kChildren; ++i) {
    EXPECT_EQ(exits[pids[static_cast<size_t>(i)]], 0);
    std::string n = std::to_string(i);
    EXPECT_EQ(read_file(dir + "/" + n), n + " " + n + "\n");
  }
  io.run_for(std::chrono::milliseconds(50));  // the batch's end of file, if still pending
  EXPECT_EQ(launcher.starting(), 0u) << "given back once every child had execed";
}

TEST(PosixProcessLauncher, AChildStartsWithDefaultSignalsAndAnEmptyMask) {
  std::string dir = test::scratch_dir("ddprun_spawn_");
  // A handler, an ignored signal and a blocked one in the agent: none of it reaches a
  // worker (an ignored signal would survive the exec if the child did not reset it).
  struct sigaction handler {};
  handler.sa_handler = [](int) {};
  struct sigaction old_usr1 {
  }, old_usr2{};
  ::sigaction(SIGUSR1, &handler, &old_usr1);
  ::signal(SIGUSR2, SIG_IGN);
  ::sigaction(SIGUSR2, nullptr, &old_usr2);
  sigset_t term, old_mask;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &term, &old_mask);

  boost::asio::io_context io;
  PosixProcessLauncher launcher(io);
  SpawnOptions o;
  o.executable = "/bin/cat";  // catches no signal itself
  o.argv = {"/bin/cat", "/proc/self/status"};
  std::string out = dir + "/status";
  int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  o.stdout_fd = fd;
  launcher.spawn(o);
  ::close(fd);
  auto exits = run_until_exited(io, launcher, 1);
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  ::signal(SIGUSR2, SIG_DFL);
  ::sigaction(SIGUSR1, &old_usr1, nullptr);
  ASSERT_EQ(exits.size(), 1u);
  std::string status = read_file(out);
  for (const char* line : {"SigBlk:\t0000000000000000\n", "SigIgn:\t0000000000000000\n",
                           "SigCgt:\t0000000000000000\n"}) {
    EXPECT_NE(status.find(line), std::string::npos) << line << status;
  }
}

TEST(PosixProcessLauncher, ALauncherGoneBeforeItsLoopRanStillLetsItsChildrenExec) {
  std::string dir = test::scratch_dir("ddprun_spawn_");
  std::vector<pid_t> pids;
  {
    boost::asio::io_context io;
    PosixProcessLauncher launcher(io);
    for (int i = 0; i < 8; ++i) {
      std::string path = dir + "/" + std::to_string(i);
      pids.push_back(launcher.spawn(shell("echo ran > \"$1\"", {path})));
    }
  }  // waits for their exec before giving back what they read
  for (size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    ASSERT_EQ(::waitpid(pids[i], &status, 0), pids[i]);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    EXPECT_EQ(read_file(dir + "/" + std::to_string(i)), "ran\n");
  }
}

TEST(PosixProcessLauncher, AProgramThatCannotStartIsNamedAndExits127) {
  std::string dir = test::scratch_dir("ddprun_spawn_");
  boost::asio::io_context io;
  PosixProcessLauncher launcher(io);
  SpawnOptions o;
  o.executable = dir + "/missing";
  o.argv = {o.executable};
  std::string err = dir + "/stderr";
  int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  o.stderr_fd = fd;
  pid_t pid = launcher.spawn(o);
  ::close(fd);
  auto exits = run_until_exited(io, launcher, 1);
  EXPECT_EQ(exits[pid], 127);
  EXPECT_EQ(read_file(err), "ddprun: cannot execute '" + o.executable + "': not found\n");
}

}  // namespace
}  // namespace ddprun::agent
