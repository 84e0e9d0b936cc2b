// A stop signal ends a node promptly while the rendezvous store's host is frozen: the
// quick requests the agent makes between its waits (telling the others why the round
// ended, its last words when it stops) give way to the signal instead of holding it
// for the store's read timeout.
#include <signal.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "tests/blackbox/elastic_job.h"
#include "tests/helpers/process_state.h"

namespace ddprun::test {
namespace {

const std::map<std::string, std::optional<std::string>> kEnv = {{"OMP_NUM_THREADS", "1"}};

// Two nodes; every store request may wait 300 s, far past the waits below: without the
// fix, B would still be waiting on the frozen store when they give up.
struct FrozenHostJob {
  Job job;
  std::string dir = make_temp_dir();

  FrozenHostJob() {
    job.nnodes = "2";
    job.conf =
        "last_call_timeout=0.3,keep_alive_interval=0.5,keep_alive_max_attempt=600,"
        "join_timeout=20,read_timeout=300";
  }
  std::vector<std::string> host() const {
    return job.agent({"--no_tracking"}, {"mark", dir}, true);
  }
  // B's worker writes its pid, then fails once `go` exists.
  std::vector<std::string> other() {
    Job b = job;
    b.local_addr = "127.0.0.2";
    std::string script =
        "echo $$ > " + dir + "/b.up; while [ ! -e " + dir + "/go ]; do sleep 0.02; done; exit 3";
    return b.agent_running({"--no_python", "--no_tracking"}, {"/bin/sh", "-c", script}, false);
  }
  bool running() const { return !read_file(dir + "/b.up").empty() && !markers(dir, 2).empty(); }

  // Starts A (the store's host) and B, and freezes A once every worker runs.
  void start_and_freeze_the_host() {
    a = std::make_unique<DdprunProcess>(host(), kEnv);
    b = std::make_unique<DdprunProcess>(other(), kEnv);
    ASSERT_TRUE(eventually([&] { return running(); })) << a->err_so_far() << b->err_so_far();
    ::kill(a->pid(), SIGSTOP);
    ASSERT_TRUE(eventually([&] { return process_stopped(a->pid()); }));
  }
  // B, Ctrl-C'd, ended with `code` and said it could not tell the others `why`; then
  // A thaws and is stopped.
  void b_ended(int code, const std::string& why) {
    EXPECT_EQ(b->wait(), code) << b->err();
    EXPECT_NE(b->err().find("could not tell the other nodes: " + why), std::string::npos)
        << b->err();
    ::kill(a->pid(), SIGCONT);
    ::kill(a->pid(), SIGTERM);
    EXPECT_NE(a->wait(), -1) << a->err();
  }

  std::unique_ptr<DdprunProcess> a;
  std::unique_ptr<DdprunProcess> b;
};

// B's worker fails while the host is frozen: B is telling the others that the job
// failed when Ctrl-C comes. It gives up telling them within the few seconds a stop
// signal leaves its last words, and ends with the failure that ended its job before
// the signal came.
TEST(FrozenStore, CtrlCEndsANodeThatWaitsOnTheStoreToTellTheOthers) {
  FrozenHostJob j;
  ASSERT_NO_FATAL_FAILURE(j.start_and_freeze_the_host());
  pid_t worker = std::stoi(read_file(j.dir + "/b.up"));
  std::ofstream(j.dir + "/go") << "";
  ASSERT_TRUE(eventually([&] { return !process_alive(worker); }));
  // B reaps it and writes to the frozen store (no sign of that to wait on).
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(j.b->pid(), SIGINT);
  j.b_ended(3, "no answer while stopping");
}

// The host freezes while every worker runs; Ctrl-C on B stops its workers, and its last
// words to the others (why the job ends) wait on the frozen store only a few seconds.
TEST(FrozenStore, CtrlCEndsANodeWhoseLastWordsFindTheStoreFrozen) {
  FrozenHostJob j;
  ASSERT_NO_FATAL_FAILURE(j.start_and_freeze_the_host());
  ::kill(j.b->pid(), SIGINT);
  j.b_ended(128 + SIGINT, "no answer while stopping");
}

}  // namespace
}  // namespace ddprun::test
