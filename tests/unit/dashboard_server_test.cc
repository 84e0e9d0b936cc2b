// The dashboard's HTTP server on a real socket: it answers, refuses other hosts'
// names on loopback, survives garbage and many idle connections, and keeps
// connections alive.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "dashboard/http_server.h"
#include "dashboard/routes.h"
#include "tests/helpers/scratch.h"

namespace ddprun::dashboard {
namespace {

int connect_to(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{10, 0};  // a test never waits forever on a broken server
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

void send_all(int fd, const std::string& text) {
  size_t sent = 0;
  while (sent < text.size()) {
    ssize_t n = ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

// Everything until the server closes the connection.
std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

// One response, read up to its Content-Length.
std::string read_response(int fd) {
  std::string out;
  char buf[4096];
  while (true) {
    size_t head_end = out.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      size_t cl = out.find("Content-Length: ");
      size_t length = cl == std::string::npos ? 0 : std::stoul(out.substr(cl + 16));
      if (out.size() >= head_end + 4 + length) return out;
    }
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

std::string request(uint16_t port, const std::string& text) {
  int fd = connect_to(port);
  if (fd < 0) return "";
  send_all(fd, text);
  std::string reply = read_all(fd);
  ::close(fd);
  return reply;
}

class DashboardServer : public ::testing::Test {
 protected:
  void SetUp() override {
    routes_ = std::make_unique<Routes>(test::scratch_dir("ddprun_dash_"));
    server_ = std::make_unique<HttpServer>(*routes_, "127.0.0.1", 0);
    thread_ = std::thread([this] { server_->run(); });
  }
  void TearDown() override {
    server_->stop();
    thread_.join();
  }
  uint16_t port() const { return server_->port(); }

  std::unique_ptr<Routes> routes_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

TEST_F(DashboardServer, AnswersTheApiAndRefusesOtherHostNames) {
  std::string ok = request(port(), "GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200", 0), 0u) << ok;
  EXPECT_NE(ok.find("\r\n\r\n[]"), std::string::npos) << ok;
  EXPECT_NE(ok.find("Content-Security-Policy: default-src 'self'"), std::string::npos);
  std::string local = request(port(), "GET / HTTP/1.1\r\nHost: localhost:8080\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(local.rfind("HTTP/1.1 200", 0), 0u) << local;
  // A page on another site that rebinds its name to 127.0.0.1 sends its own name.
  std::string rebound = request(port(), "GET /api/runs HTTP/1.1\r\nHost: evil.example\r\n\r\n");
  EXPECT_EQ(rebound.rfind("HTTP/1.1 403", 0), 0u) << rebound;
}

TEST_F(DashboardServer, GarbageGets400AndTheServerGoesOn) {
  for (const char* junk : {"garbage\r\n\r\n", "GET / HTTP/9.9\r\n\r\n", "\x16\x03\x01\x02\x00\x01",
                           "GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\nhello"}) {
    std::string reply = request(port(), junk);
    EXPECT_EQ(reply.rfind("HTTP/1.1 400", 0), 0u) << "for " << junk << ": " << reply;
  }
  std::string huge = "GET /" + std::string(20000, 'a') + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  EXPECT_EQ(request(port(), huge).rfind("HTTP/1.1 400", 0), 0u) << "an 8 KiB header limit";
  std::string ok = request(port(), "GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200", 0), 0u) << ok;
}

TEST_F(DashboardServer, ManyIdleConnectionsDoNotStopTheNextRequest) {
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) {
    int fd = connect_to(port());
    ASSERT_GE(fd, 0) << "connection " << i;
    send_all(fd, "GET / HTTP/1.1\r\n");  // half a request, never finished
    idle.push_back(fd);
  }
  std::string ok = request(port(), "GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200", 0), 0u) << ok;
  for (int fd : idle) ::close(fd);
}

TEST_F(DashboardServer, KeepsConnectionsAliveAndAnswersHeadWithoutABody) {
  int fd = connect_to(port());
  ASSERT_GE(fd, 0);
  for (int i = 0; i < 3; ++i) {
    send_all(fd, "GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    std::string reply = read_response(fd);
    EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << "request " << i << ": " << reply;
  }
  ::close(fd);
  std::string head = request(port(), "HEAD /static/app.js HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
  EXPECT_EQ(head.find("Content-Length: 0\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.size(), head.find("\r\n\r\n") + 4) << "no body after the header";
}

}  // namespace
}  // namespace ddprun::dashboard
