// How ddprun reads etcd's watch stream, one long HTTP reply of JSON messages: a message
// that arrives in pieces is found whole once its last byte came, and a stream lasts
// however many bytes it carries over its life (each message is limited, not the stream).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "store/etcd/etcd_client.h"
#include "store/etcd/etcd_wire.h"
#include "tests/helpers/free_port.h"

namespace ddprun::store {
namespace {

using namespace std::chrono_literals;
using etcd_wire::JsonScan;

// Two messages, the first with a quote, a backslash and braces inside its strings, fed a
// byte at a time as a stream's pieces may come: each end is found at its last byte, and
// only then (an escape split from what it escapes included).
TEST(EtcdWatchStream, AMessageInPiecesEndsAtItsLastByte) {
  const std::string first = R"({"a":"x\"}{\\","b":{"c":"}"}})";
  const std::string second = R"({"d":2})";
  const std::string stream = first + "\n" + second;
  std::string arrived;
  JsonScan scan;
  std::vector<size_t> ends;
  for (char c : stream) {
    arrived += c;
    size_t end = etcd_wire::json_object_end(arrived, scan);
    if (end == std::string::npos) continue;
    ends.push_back(end);
    arrived.erase(0, end);  // handed on, as the watch does
    scan = {};
  }
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0], first.size());
  EXPECT_EQ(ends[1], 1 + second.size());  // after the newline between them
  EXPECT_TRUE(arrived.empty());
}

std::string chunk(const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  return size + data + "\r\n";
}

std::string event_message(const std::string& key, const std::string& value, int64_t revision) {
  return R"({"result":{"header":{"revision":")" + std::to_string(revision) +
         R"("},"events":[{"kv":{"key":")" + etcd_wire::b64(key) + R"(","value":")" +
         etcd_wire::b64(value) + R"(","mod_revision":")" + std::to_string(revision) + R"("}}]}})";
}

bool send_all(int fd, const std::string& bytes) {
  for (size_t sent = 0; sent < bytes.size();) {
    ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// A gateway whose one watch stream carries more than the per-message limit in all
// (80 messages of 1 MiB of value, ~110 MiB of JSON) before the event waited for: the
// watch takes every event on that one stream, asking for no second.
TEST(EtcdWatchStream, OneStreamCarriesMoreThanAMessagesLimit) {
  int port = 0;
  int fd = ddprun::test::listen_on_loopback(port);
  ASSERT_GE(fd, 0);
  constexpr int kBig = 80;
  static_assert(kBig * (1u << 20) > etcd_wire::kMaxBody);
  std::atomic<int> streams{0};
  std::thread gateway([fd, &streams] {
    int c;
    while ((c = ::accept(fd, nullptr, nullptr)) >= 0) {
      if (++streams > 1) {  // the stream broke: say so by answering no more
        ::close(c);
        continue;
      }
      char buf[4096];
      (void)!::read(c, buf, sizeof(buf));
      bool sent = send_all(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                              "Transfer-Encoding: chunked\r\n\r\n");
      const std::string value(1u << 20, 'v');
      for (int i = 0; sent && i < kBig; ++i) {
        sent = send_all(c, chunk(event_message("/w/big", value, 10 + i)));
      }
      if (sent) sent = send_all(c, chunk(event_message("/w/last", "done", 10 + kBig)));
      char end;
      (void)!::read(c, &end, 1);  // until the client is through
      ::close(c);
    }
  });
  EtcdClient client(parse_etcd_endpoints("127.0.0.1:" + std::to_string(port)), 20s);
  int big = 0;
  std::string last;
  bool came = false;
  std::string error;
  try {
    came = client.watch("/w/", etcd_prefix_end("/w/"), 10, EtcdClient::Clock::now() + 20s,
                        [&](const EtcdEvent& e) {
                          if (e.kv.key == "/w/big") ++big;
                          if (e.kv.key != "/w/last") return true;
                          last = e.kv.value;
                          return false;
                        });
  } catch (const StoreError& e) {
    error = e.what();
  }
  ::shutdown(fd, SHUT_RDWR);
  gateway.join();
  ::close(fd);
  EXPECT_EQ(error, "");
  EXPECT_TRUE(came);
  EXPECT_EQ(big, kBig);
  EXPECT_EQ(last, "done");
  EXPECT_EQ(streams.load(), 1);
}

}  // namespace
}  // namespace ddprun::store
