#include "tests/helpers/etcd_cluster.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "store/etcd/etcd_client.h"
#include "tests/helpers/process_state.h"
#include "tests/helpers/free_port.h"

namespace ddprun::test {

EtcdCluster::EtcdCluster(int members) {
  char tmpl[] = "/tmp/ddprun_etcd_XXXXXX";
  dir_ = ::mkdtemp(tmpl);
  members_.resize(members);
  std::string initial;
  for (int i = 0; i < members; ++i) {
    members_[i].client_port = free_port();
    members_[i].peer_port = free_port();
    initial += (i ? "," : "") + std::string("m") + std::to_string(i) + "=http://127.0.0.1:" +
               std::to_string(members_[i].peer_port);
  }
  for (int i = 0; i < members; ++i) {
    std::string name = "m" + std::to_string(i);
    std::string client = "http://127.0.0.1:" + std::to_string(members_[i].client_port);
    std::string peer = "http://127.0.0.1:" + std::to_string(members_[i].peer_port);
    std::vector<std::string> args{"etcd",
                                  "--name=" + name,
                                  "--data-dir=" + dir_ + "/" + name,
                                  "--listen-client-urls=" + client,
                                  "--advertise-client-urls=" + client,
                                  "--listen-peer-urls=" + peer,
                                  "--initial-advertise-peer-urls=" + peer,
                                  "--initial-cluster=" + initial,
                                  "--initial-cluster-token=" + dir_,
                                  "--heartbeat-interval=50",
                                  "--election-timeout=500",
                                  "--logger=zap"};
    std::string log = dir_ + "/" + name + ".log";
    pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives the test
      int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(out, 1);
      ::dup2(out, 2);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execvp("etcd", argv.data());
      ::_exit(127);
    }
    members_[i].pid = pid;
  }
  // Ready when a write goes through (a leader is elected).
  store::EtcdClient client(store::parse_etcd_endpoints(endpoints()),
                                std::chrono::seconds(20));
  try {
    client.put("ddprun-test-ready", "1");
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("etcd did not come up (is etcd-server installed?): ") +
                             e.what());
  }
}

EtcdCluster::~EtcdCluster() {
  for (int i = 0; i < static_cast<int>(members_.size()); ++i) kill(i);
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string EtcdCluster::endpoints() const {
  std::string out;
  for (const auto& m : members_) {
    if (!out.empty()) out += ',';
    out += "127.0.0.1:";
    out += std::to_string(m.client_port);
  }
  return out;
}

void EtcdCluster::kill(int member) {
  pid_t& pid = members_[member].pid;
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  pid = -1;
}

void EtcdCluster::signal(int member, int sig) {
  pid_t pid = members_[member].pid;
  if (pid <= 0) return;
  ::kill(pid, sig);
  // A stop is only pending until each of etcd's threads is scheduled to take it: one
  // still running may answer a request sent after kill() returned.
  for (int i = 0; sig == SIGSTOP && i < 500 && !process_stopped(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace ddprun::test
