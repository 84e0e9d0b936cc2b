#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ddprun::test {

/// Real etcd members (Debian's etcd-server) on free loopback ports, with their data in
/// a temporary directory; all killed when this goes. Throws std::runtime_error when
/// etcd is missing or does not come up.
class EtcdCluster {
 public:
  explicit EtcdCluster(int members = 1);
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  /// "127.0.0.1:p1,127.0.0.1:p2,..." for --rdzv_endpoint.
  std::string endpoints() const;
  int client_port(int member) const { return members_[member].client_port; }
  /// SIGKILLs one member (the others keep the cluster going if a majority is left).
  void kill(int member);
  /// Sends `sig` to one member (SIGSTOP freezes it: its sockets stay open, unanswered).
  void signal(int member, int sig);

 private:
  struct Member {
    int client_port = 0;
    int peer_port = 0;
    pid_t pid = -1;
  };
  std::vector<Member> members_;
  std::string dir_;
};

}  // namespace ddprun::test
