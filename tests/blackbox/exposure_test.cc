// What a job exposes to other machines: a single node's store listens on loopback only,
// so nothing outside this machine can read or write the keys its workers trust.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "tests/blackbox/ddprun_process.h"
#include "tests/helpers/free_port.h"

namespace ddprun::test {
namespace {

// The socket inodes `pid` holds.
std::set<std::string> socket_inodes(pid_t pid) {
  std::set<std::string> inodes;
  std::error_code ec;
  for (const auto& fd :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::string target = std::filesystem::read_symlink(fd.path(), ec).string();
    if (target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  return inodes;
}

// The local addresses (hex, as /proc/net/tcp* writes them) of the sockets `pid` listens on.
std::vector<std::string> listening_addresses(pid_t pid) {
  auto inodes = socket_inodes(pid);
  std::vector<std::string> found;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      if (state == "0A" && inodes.count(inode)) found.push_back(local);
    }
  }
  return found;
}

// 127.0.0.1 is 0100007F in /proc/net/tcp; ::1 is 00000000000000000000000001000000.
bool loopback(const std::string& hex_address) {
  std::string host = hex_address.substr(0, hex_address.find(':'));
  if (host.size() == 8) return host.substr(6, 2) == "7F";
  return host == "00000000000000000000000001000000" ||
         (host.rfind("0000000000000000FFFF0000", 0) == 0 && host.substr(30, 2) == "7F");
}

void expect_store_on_loopback_only(const std::vector<std::string>& flags) {
  std::vector<std::string> args = flags;
  for (const char* a : {"--no_python", "/bin/sleep", "30"}) args.emplace_back(a);
  DdprunProcess p(args);
  std::vector<std::string> addresses;
  ASSERT_TRUE(eventually([&] {
    addresses = listening_addresses(p.pid());
    return !addresses.empty();
  })) << "ddprun never listened";
  for (const auto& a : addresses) EXPECT_TRUE(loopback(a)) << "listens on " << a;
  ::kill(p.pid(), SIGTERM);
  EXPECT_EQ(p.wait(), 128 + SIGTERM) << p.err();
}

TEST(Exposure, SingleNodeStoreListensOnLoopbackOnly) { expect_store_on_loopback_only({}); }

TEST(Exposure, StandaloneStoreListensOnLoopbackOnly) {
  expect_store_on_loopback_only({"--standalone"});
}

// The listeners of the first agent of a job whose nodes `nodes` start (each runs
// sleeping workers), once it listens on `count` addresses; SIGTERM ends them.
std::vector<std::string> listeners_of(const std::vector<std::vector<std::string>>& nodes,
                                      size_t count) {
  std::vector<std::unique_ptr<DdprunProcess>> agents;
  for (auto args : nodes) {
    for (const char* a : {"--no_python", "/bin/sleep", "30"}) args.emplace_back(a);
    agents.push_back(std::make_unique<DdprunProcess>(args));
  }
  std::vector<std::string> addresses;
  EXPECT_TRUE(eventually([&] {
    addresses = listening_addresses(agents[0]->pid());
    return addresses.size() >= count;
  })) << "ddprun listened on "
      << addresses.size() << " address(es)\n"
      << agents[0]->err();
  for (auto& a : agents) ::kill(a->pid(), SIGTERM);
  for (auto& a : agents) a->wait();
  return addresses;
}

// Several nodes reach node 0's store (and the run's record receiver) at the master
// address: they listen there alone, unless told to listen everywhere.
TEST(Exposure, AMultiNodeStoreListensOnTheMasterAddressOnly) {
  auto job = [](const std::string& extra) {
    std::string port = std::to_string(free_port());
    std::string runs = make_temp_dir();
    std::vector<std::vector<std::string>> nodes;
    for (const char* rank : {"0", "1"}) {
      nodes.push_back({"--nnodes=2", std::string("--node_rank=") + rank, "--master_addr=127.0.0.2",
                       "--master_port=" + port, "--tracking_dir=" + runs, "--rdzv_conf=" + extra});
    }
    return nodes;
  };
  for (const auto& a : listeners_of(job("join_timeout=20"), 2)) {
    EXPECT_EQ(a.substr(0, a.find(':')), "0200007F") << "listens on " << a;
  }
  auto everywhere = listeners_of(job("listen_all=1"), 2);
  EXPECT_TRUE(std::any_of(everywhere.begin(), everywhere.end(), [](const std::string& a) {
    return a.rfind("00000000:", 0) == 0 || a.rfind("00000000000000000000000000000000:", 0) == 0;
  })) << "listen_all=1 widens them to every interface";
}

// An elastic node's listeners: the c10d store at the endpoint, the workers' store and
// the record receiver at the address it advertises; none on every interface.
TEST(Exposure, AnElasticNodeListensOnTheAddressItAdvertises) {
  std::string port = std::to_string(free_port());
  auto addresses =
      listeners_of({{"--nnodes=1:2", "--rdzv_backend=c10d", "--rdzv_endpoint=127.0.0.1:" + port,
                     "--local_addr=127.0.0.2", "--rdzv_conf=last_call_timeout=0.1",
                     "--tracking_dir=" + make_temp_dir()}},
                   3);
  std::set<std::string> hosts;
  for (const auto& a : addresses) hosts.insert(a.substr(0, a.find(':')));
  EXPECT_EQ(hosts, (std::set<std::string>{"0100007F", "0200007F"}));
}

TEST(Exposure, LoopbackAddressesAreRecognised) {
  EXPECT_TRUE(loopback("0100007F:1F90"));
  EXPECT_TRUE(loopback("00000000000000000000000001000000:1F90"));
  EXPECT_FALSE(loopback("00000000:1F90"));
  EXPECT_FALSE(loopback("00000000000000000000000000000000:1F90"));
}

}  // namespace
}  // namespace ddprun::test
