// A store that requires the job token (the agents' own channels): only a client that
// proves it is served; anyone else is closed before a key is read or written, and the
// token never crosses the wire.
#include <gtest/gtest.h>
#include <unistd.h>

#include "common/error.h"
#include "net/job_token.h"
#include "store/tcpstore/tcp_store_client.h"
#include "store/tcpstore/tcp_store_server.h"
#include "tests/store/raw_connection.h"

namespace ddprun::test {
namespace {

using store::TcpStoreClient;
using store::TcpStoreServer;
namespace job_token = net::job_token;

TcpStoreClient::Options with_token(const std::string& token) {
  TcpStoreClient::Options o;
  o.timeout = std::chrono::seconds(5);
  o.token = token;
  return o;
}

TEST(JobToken, ProofIsHmacSha256InHex) {
  // RFC 4231-style check with a well-known vector.
  EXPECT_EQ(job_token::proof("key", "The quick brown fox jumps over the lazy dog"),
            "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8");
  // RFC 4231, test case 6: a key longer than SHA-256's block is hashed first.
  EXPECT_EQ(job_token::proof(std::string(131, '\xaa'),
                             "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  std::string challenge = job_token::new_challenge();
  EXPECT_EQ(challenge.size(), 64u);
  EXPECT_NE(challenge, job_token::new_challenge());
  EXPECT_TRUE(job_token::proves("s3cret", challenge, job_token::proof("s3cret", challenge)));
  EXPECT_FALSE(job_token::proves("s3cret", challenge, job_token::proof("other", challenge)));
  EXPECT_FALSE(job_token::proves("s3cret", challenge, ""));
}

TEST(JobToken, TokenLineTakesNothingAfterIt) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "s3cret\nkeep-alive\n", 18), 18);
  EXPECT_EQ(job_token::read_token_line("token_file", fds[0]), "s3cret");
  char rest[11] = {};
  EXPECT_EQ(::read(fds[0], rest, 11), 11);
  EXPECT_EQ(std::string(rest, 11), "keep-alive\n");
  ::close(fds[1]);
  EXPECT_THROW(job_token::read_token_line("token_file", fds[0]), UsageError);
  ::close(fds[0]);
}

TEST(JobToken, ClientWithTheTokenIsServed) {
  TcpStoreServer server{"127.0.0.1", 0, "s3cret"};
  TcpStoreClient a("127.0.0.1", server.port(), with_token("s3cret"));
  a.set("k", "v");
  TcpStoreClient b("127.0.0.1", server.port(), with_token("s3cret"));
  EXPECT_EQ(b.get_now(std::string("k")), "v");
}

TEST(JobToken, ClientWithAnotherTokenIsRefusedByName) {
  TcpStoreServer server{"127.0.0.1", 0, "s3cret"};
  try {
    TcpStoreClient c("127.0.0.1", server.port(), with_token("wrong"));
    FAIL() << "served";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("refused this node's job token"), std::string::npos)
        << e.what();
  }
}

TEST(JobToken, ClientWithoutATokenReadsAndWritesNothing) {
  TcpStoreServer server{"127.0.0.1", 0, "s3cret"};
  TcpStoreClient owner("127.0.0.1", server.port(), with_token("s3cret"));
  owner.set("secret", "value");
  {
    // A PyTorch-style client: VALIDATE then SET. Closed at its first byte, which is no
    // hello, before anything is read or sent.
    RawConnection raw = RawConnection::v2(server.port());
    raw.send(Wire(Numbering::kV2, Op::kSet).str("secret").str("overwritten").bytes);
    EXPECT_TRUE(raw.closed_by_server());
  }
  EXPECT_EQ(owner.get_now(std::string("secret")), "value") << "the refused client wrote nothing";
  // ddprun's client without a token says what is wrong.
  try {
    TcpStoreClient c("127.0.0.1", server.port(), with_token(""));
    c.get_now(std::string("secret"));
    FAIL() << "served without a token";
  } catch (const StoreError&) {
  }
}

TEST(JobToken, ClientWithATokenRefusesAServerWithout) {
  TcpStoreServer server{"127.0.0.1", 0};
  try {
    auto o = with_token("s3cret");
    o.timeout =
        std::chrono::seconds(1);  // a server without a token takes the hello for a bad request
    TcpStoreClient c("127.0.0.1", server.port(), o);
    FAIL() << "a server without a token was taken for the job's";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("sent no job-token challenge"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ddprun::test
