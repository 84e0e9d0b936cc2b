// How an operator reads an agent's id: its host, its pid only where a host has two.
#include "common/node_names.h"

#include <gtest/gtest.h>

namespace ddprun {
namespace {

TEST(NodeNames, AnAgentIsItsHostWhereItIsAloneThere) {
  EXPECT_EQ(node_name("vm2/0000020393/45461", {"vm1/0000000007/1", "vm2/0000020393/45461"}), "vm2");
  EXPECT_EQ(node_name("10.0.0.2/42/2345", {}), "10.0.0.2");
}

TEST(NodeNames, AgentsSharingAHostAreToldApartByPid) {
  std::vector<std::string> round{"127.0.0.1/0000000042/1", "127.0.0.1/0000000043/2"};
  EXPECT_EQ(node_name(round[0], round), "127.0.0.1 (pid 42)");
  EXPECT_EQ(node_names(round, {}), "127.0.0.1 (pid 42), 127.0.0.1 (pid 43)");
  EXPECT_EQ(node_names({"10.0.0.2/7/1"}, {"10.0.0.3/8/1"}), "10.0.0.2");
}

TEST(NodeNames, WhatIsNoAgentsIdIsItsOwnName) {
  for (std::string other : {"0", "10.0.0.3", "a/b/c", "/1/2", "host/x1/2"}) {
    EXPECT_EQ(node_name(other, {other, "a/1/2"}), other);
  }
  EXPECT_EQ(node_name("fe80::1/0/5", {}), "fe80::1") << "pid 0 stays a pid";
}

}  // namespace
}  // namespace ddprun
