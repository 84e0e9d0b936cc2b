// A Slurm step's nodes agreeing on a job token through the cluster's credentials
// (net/token_handout.h, launcher/slurm_token.h), with MUNGE faked and a real store.
#include <gtest/gtest.h>

#include <chrono>

#include "common/error.h"
#include "launcher/slurm_token.h"
#include "net/token_handout.h"
#include "os/munge.h"
#include "store/tcpstore/tcp_store_client.h"
#include "store/tcpstore/tcp_store_server.h"
#include "tests/fakes/fake_credentials.h"

namespace ddprun {
namespace {

using namespace std::chrono_literals;
using store::TcpStoreClient;
using store::TcpStoreServer;

auto soon() { return std::chrono::steady_clock::now() + 10s; }

// Node 0's store of a static step, handing out `token` for job "42.3".
std::unique_ptr<TcpStoreServer> first_node(const std::string& token,
                                           std::shared_ptr<net::Credentials> credentials) {
  return std::make_unique<TcpStoreServer>("127.0.0.1", 0, token, TcpStoreServer::Guests::kMembers,
                                          net::TokenHandout{std::move(credentials), "42.3"});
}

TEST(TokenHandout, AnotherNodeGetsTheTokenAndProvesItAsAnyNode) {
  auto munge = std::make_shared<test::FakeCredentials>();
  auto store = first_node("the token", munge);
  auto got = net::token_handout::fetch(*munge, "127.0.0.1", store->port(), "42.3", soon());
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, "the token");
  TcpStoreClient::Options o;
  o.token = *got;
  TcpStoreClient member("127.0.0.1", store->port(), o);
  member.set("k", "v");
  EXPECT_EQ(member.get("k", 5s), "v");
}

TEST(TokenHandout, TheTokenTravelsOnlyInACredentialForTheAskingUser) {
  auto munge = std::make_shared<test::FakeCredentials>();
  std::string credential =
      net::token_handout::ask_line(*munge, "42.3").substr(std::string("DDPRUN-MUNGE1 ").size());
  credential.pop_back();
  std::string reply =
      net::token_handout::answer(net::TokenHandout{munge, "42.3"}, "the token", credential);
  ASSERT_EQ(reply.rfind("DDPRUN-TOKEN1 ", 0), 0u) << reply;
  EXPECT_EQ(reply.find("the token"), std::string::npos) << "never in clear: " << reply;
  std::string handed = reply.substr(std::string("DDPRUN-TOKEN1 ").size());
  handed.pop_back();
  munge->decoder = ::geteuid() + 1;  // another user cannot read it
  EXPECT_THROW(munge->decode(handed), Error);
}

TEST(TokenHandout, RequestsOfAnotherUserOrJobOrReplayedAreRefusedSayingWhy) {
  auto munge = std::make_shared<test::FakeCredentials>();
  auto store = first_node("the token", munge);
  auto ask = [&](const std::string& job) {
    try {
      net::token_handout::fetch(*munge, "127.0.0.1", store->port(), job, soon());
      return std::string("handed out");
    } catch (const StoreError& e) {
      return std::string(e.what());
    }
  };
  EXPECT_NE(ask("42.4").find("refused to hand out the job token: the credential asks for "
                             "another job's token (this is 42.3)"),
            std::string::npos)
      << ask("42.4");
  munge->maker = ::geteuid() + 1;
  std::string other_user = ask("42.3");
  EXPECT_NE(other_user.find("the credential is user " + std::to_string(::geteuid() + 1)),
            std::string::npos)
      << other_user;
  munge->maker = ::geteuid();

  // A credential seen on the wire is worth nothing a second time.
  std::string line = net::token_handout::ask_line(*munge, "42.3");
  std::string credential = line.substr(std::string("DDPRUN-MUNGE1 ").size());
  credential.pop_back();
  net::TokenHandout handout{munge, "42.3"};
  EXPECT_EQ(net::token_handout::answer(handout, "t", credential).rfind("DDPRUN-TOKEN1 ", 0), 0u);
  EXPECT_EQ(net::token_handout::answer(handout, "t", credential),
            "DDPRUN-REFUSED1 the credential is not valid: MUNGE: Invalid credential\n");
}

TEST(TokenHandout, AStoreWithATokenButNoHandoutSaysSoAndOneWithoutHandsOutNothing) {
  auto munge = std::make_shared<test::FakeCredentials>();
  TcpStoreServer given("127.0.0.1", 0, "given by hand", TcpStoreServer::Guests::kMembers);
  try {
    net::token_handout::fetch(*munge, "127.0.0.1", given.port(), "42.3", soon());
    ADD_FAILURE() << "a token was handed out";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("this node hands out no job token"), std::string::npos)
        << e.what();
  }
  TcpStoreServer open("127.0.0.1", 0);
  EXPECT_EQ(net::token_handout::fetch(*munge, "127.0.0.1", open.port(), "42.3", soon()),
            std::nullopt);
}

rendezvous::RendezvousParams step_params(int node_rank, int port) {
  rendezvous::RendezvousParams p;
  p.run_id = "42.3";
  p.max_nodes = p.min_nodes = 2;
  p.node_rank = node_rank;
  p.master_addr = "127.0.0.1";
  p.master_port = port;
  p.join_timeout = 10s;
  p.token_by_munge = true;
  return p;
}

TEST(SlurmToken, TheFirstNodeMakesOneAndTheOthersAskItForIt) {
  auto munge = std::make_shared<test::FakeCredentials>();
  launcher::CredentialsLoader load = [munge](std::string*) { return munge; };
  std::vector<std::string> notices;
  auto first = step_params(0, 0);
  launcher::settle_slurm_token(first, load, notices);
  EXPECT_EQ(first.token.size(), 64u);
  ASSERT_EQ(first.token_handout.credentials, munge);
  EXPECT_EQ(first.token_handout.job, "42.3");
  auto store = first_node(first.token, munge);

  auto second = step_params(1, store->port());
  launcher::settle_slurm_token(second, load, notices);
  EXPECT_EQ(second.token, first.token);
  EXPECT_FALSE(second.token_handout.credentials) << "only the first node hands it out";
  EXPECT_TRUE(notices.empty());
}

TEST(SlurmToken, WithoutMungeTheJobRunsWithoutATokenAndSaysWhy) {
  std::vector<std::string> notices;
  auto p = step_params(0, 0);
  launcher::settle_slurm_token(
      p,
      [](std::string* why) -> std::shared_ptr<net::Credentials> {
        *why = "MUNGE's library (libmunge.so.2, Debian's libmunge2) is not installed";
        return nullptr;
      },
      notices);
  EXPECT_TRUE(p.token.empty());
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].rfind("no job token", 0), 0u) << notices[0];
  EXPECT_NE(notices[0].find("libmunge.so.2"), std::string::npos) << notices[0];

  // munged down on the first node: the same, saying so.
  auto down = std::make_shared<test::FakeCredentials>();
  down->broken = true;
  notices.clear();
  auto q = step_params(0, 0);
  launcher::settle_slurm_token(
      q, [down](std::string*) { return down; }, notices);
  EXPECT_TRUE(q.token.empty());
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("Failed to connect to munged"), std::string::npos) << notices[0];
}

TEST(SlurmToken, AnotherNodeWhoseMungeFailsWhileTheFirstUsesItStopsNamingBoth) {
  auto munge = std::make_shared<test::FakeCredentials>();
  auto store = first_node("the token", munge);
  auto here = std::make_shared<test::FakeCredentials>();
  here->broken = true;
  std::vector<std::string> notices;
  auto p = step_params(1, store->port());
  try {
    launcher::settle_slurm_token(
        p, [here](std::string*) { return here; }, notices);
    ADD_FAILURE() << "went on without the job's token";
  } catch (const StoreError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("cannot get the job token from the Slurm step's first node"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("Failed to connect to munged"), std::string::npos) << what;
    EXPECT_NE(what.find("DDPRUN_JOB_TOKEN"), std::string::npos) << what;
  }
}

TEST(SlurmToken, AGivenTokenIsKept) {
  std::vector<std::string> notices;
  auto p = step_params(1, 1);
  p.token = "given";
  bool asked = false;
  launcher::settle_slurm_token(
      p,
      [&asked](std::string*) -> std::shared_ptr<net::Credentials> {
        asked = true;
        return nullptr;
      },
      notices);
  EXPECT_EQ(p.token, "given");
  EXPECT_FALSE(asked);
}

TEST(MungeSocket, SlurmsAuthInfoNamesIt) {
  EXPECT_EQ(os::munge_socket_of("AuthType=auth/munge\nAuthInfo=socket=/tmp/m/socket\n"),
            "/tmp/m/socket");
  EXPECT_EQ(os::munge_socket_of("  authinfo = ttl=60, socket=/run/m.sock ,cred_expire=5 # x\n"),
            "/run/m.sock");
  EXPECT_EQ(os::munge_socket_of("AuthType=auth/munge\n#AuthInfo=socket=/no\n"), "");
  EXPECT_EQ(os::munge_socket_of("AuthInfoExtra=socket=/no\n"), "");
  EXPECT_EQ(os::munge_socket_of(""), "");
}

}  // namespace
}  // namespace ddprun
