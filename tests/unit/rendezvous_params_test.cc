// The rendezvous flags parsed once into one typed value.
#include "rendezvous/rendezvous_params.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace ddprun::rendezvous {
namespace {

using namespace std::chrono_literals;

// torchrun's defaults, overridden by `set` ("name=value" entries: flags as given).
RendezvousParams parse(std::map<std::string, std::string> set, bool standalone = false) {
  std::map<std::string, std::string> v = {{"nnodes", "1"},
                                          {"rdzv_backend", "static"},
                                          {"rdzv_endpoint", ""},
                                          {"rdzv_id", "none"},
                                          {"rdzv_conf", ""},
                                          {"node_rank", "0"},
                                          {"master_addr", "127.0.0.1"},
                                          {"master_port", "29500"},
                                          {"local_addr", ""}};
  for (const auto& [k, x] : set) v[k] = x;
  auto flag = [&](const char* name) {
    return FlagValue{v[name], "--" + std::string(name), set.count(name) > 0};
  };
  RendezvousFlags f{flag("nnodes"),      flag("rdzv_backend"), flag("rdzv_endpoint"),
                    flag("rdzv_id"),     flag("rdzv_conf"),    flag("node_rank"),
                    flag("master_addr"), flag("master_port"),  flag("local_addr"),
                    standalone};
  return parse_rendezvous(f);
}

TEST(RendezvousParams, OneNodeHostsItsStoreOnAFreePort) {
  auto p = parse({});
  EXPECT_EQ(p.backend, Backend::kStatic);
  EXPECT_EQ(p.master_port, 0);
  EXPECT_FALSE(p.elastic());
  EXPECT_EQ(parse({{"master_port", "1234"}}).master_port, 1234);
}

TEST(RendezvousParams, C10dWithSeveralNodesIsElasticWithItsEndpointParsed) {
  auto p = parse({{"nnodes", "1:4"},
                  {"rdzv_backend", "c10d"},
                  {"rdzv_endpoint", "[::1]:1234"},
                  {"rdzv_conf",
                   "join_timeout=7,last_call_timeout=0.5,keep_alive_interval=2,"
                   "keep_alive_max_attempt=4,is_host=0,read_timeout=9"}});
  EXPECT_TRUE(p.elastic());
  EXPECT_EQ(p.c10d_host, "::1");
  EXPECT_EQ(p.c10d_port, 1234);
  EXPECT_EQ(p.min_nodes, 1);
  EXPECT_EQ(p.max_nodes, 4);
  EXPECT_EQ(p.join_timeout, 7s);
  EXPECT_EQ(p.last_call_timeout, 500ms);
  EXPECT_EQ(p.heartbeat_interval, 2s);
  EXPECT_EQ(p.heartbeat_misses, 4);
  EXPECT_EQ(p.read_timeout, 9s);
  EXPECT_EQ(p.c10d_is_host, false);
  EXPECT_EQ(parse({{"nnodes", "2"}, {"rdzv_backend", "c10d"}, {"rdzv_endpoint", "h"}}).c10d_port,
            29400);
}

TEST(RendezvousParams, C10dOnOneNodeIsNotElastic) {
  auto p = parse({{"rdzv_backend", "c10d"}});
  EXPECT_EQ(p.backend, Backend::kC10d);
  EXPECT_FALSE(p.elastic());
  EXPECT_EQ(p.master_addr, "127.0.0.1");  // its store listens on loopback only
}

TEST(RendezvousParams, EtcdEndpointsAndPrefix) {
  auto p = parse({{"rdzv_backend", "etcd-v2"},
                  {"rdzv_endpoint", "a:1,http://b,[::1]:3"},
                  {"rdzv_conf", "etcd_prefix=/x/y/"}});
  EXPECT_EQ(p.backend, Backend::kEtcd);
  EXPECT_TRUE(p.elastic()) << "etcd is elastic even for one node";
  ASSERT_EQ(p.etcd_endpoints.size(), 3u);
  EXPECT_EQ(p.etcd_endpoints[1].host, "b");
  EXPECT_EQ(p.etcd_endpoints[1].port, 2379);
  EXPECT_EQ(p.etcd_endpoints[2].text(), "[::1]:3");
  EXPECT_EQ(p.etcd_prefix, "/x/y");
  EXPECT_STREQ(backend_name(p.backend), "etcd");
}

TEST(RendezvousParams, StandaloneIsOneC10dNode) {
  auto p = parse({{"nnodes", "3"}, {"node_rank", "2"}, {"master_port", "99"}}, true);
  EXPECT_EQ(p.backend, Backend::kC10d);
  EXPECT_EQ(p.max_nodes, 1);
  EXPECT_EQ(p.node_rank, 0);
  EXPECT_EQ(p.master_port, 0);
}

TEST(RendezvousParams, TimeoutIsTheJoinTimeoutOnlyForElasticJobs) {
  EXPECT_EQ(parse({{"rdzv_conf", "timeout=3"}}).join_timeout, 600s) << "static: ignored";
  EXPECT_EQ(parse({{"rdzv_backend", "etcd"}, {"rdzv_endpoint", "e"}, {"rdzv_conf", "timeout=3"}})
                .join_timeout,
            3s);
}

TEST(RendezvousParams, BadValuesNameTheirFlag) {
  auto message = [](std::map<std::string, std::string> set) {
    try {
      parse(std::move(set));
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({{"rdzv_backend", "zk"}}), "--rdzv_backend=zk: expected static, c10d or etcd");
  EXPECT_NE(message({{"rdzv_conf", "heartbeat=-1"}}).find("--rdzv_conf heartbeat"),
            std::string::npos);
  // A key no handler reads is a typo, said with the keys there are; torchrun's own keys
  // that ddprun needs not (rank, use_libuv) are accepted.
  EXPECT_EQ(message({{"rdzv_conf", "join_timout=5"}}).rfind(
                "--rdzv_conf join_timout=5: not an rdzv_conf key (they are: join_timeout, ", 0),
            0u);
  EXPECT_EQ(message({{"rdzv_conf", "rank=0,use_libuv=0,close_timeout=1"}}), "no error");
  EXPECT_NE(message({{"nnodes", "2"}, {"rdzv_backend", "c10d"}, {"rdzv_endpoint", "h:0"}})
                .find("bad port"),
            std::string::npos);
  EXPECT_NE(message({{"rdzv_backend", "etcd"}}).find("needs --rdzv_endpoint"), std::string::npos);
  EXPECT_NE(message({{"rdzv_backend", "etcd"}, {"rdzv_endpoint", "e"}, {"rdzv_conf", "cert=x"}})
                .find("TLS"),
            std::string::npos);
  EXPECT_NE(message({{"nnodes", "2"}, {"node_rank", "2"}}).find("--node_rank=2"),
            std::string::npos);
  EXPECT_NE(message({{"nnodes", "1:2"}}).find("fixed number of nodes"), std::string::npos);
  EXPECT_NE(message({{"master_port", "70000"}}).find("--master_port=70000"), std::string::npos);
}

}  // namespace
}  // namespace ddprun::rendezvous
