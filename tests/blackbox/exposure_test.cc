// What a job exposes to other machines: a single node's store listens on loopback only,
// so nothing outside this machine can read or write the keys its workers trust.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/blackbox/ddprun_process.h"

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

TEST(Exposure, LoopbackAddressesAreRecognised) {
  EXPECT_TRUE(loopback("0100007F:1F90"));
  EXPECT_TRUE(loopback("00000000000000000000000001000000:1F90"));
  EXPECT_FALSE(loopback("00000000:1F90"));
  EXPECT_FALSE(loopback("00000000000000000000000000000000:1F90"));
}

}  // namespace
}  // namespace ddprun::test
