#include "tracking/record_forwarder.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "net/job_token.h"
#include "tracking/record_link.h"

namespace ddprun::tracking {
namespace {

constexpr auto kConnectTimeout = std::chrono::seconds(2);
constexpr auto kReplyTimeout = std::chrono::seconds(30);
// A final pass (an attempt's end, the agent's exit) and the goodbye: a primary cut off
// from this node must not hold it half a minute (what is not taken stays in the node's
// part, and a later pass sends it).
constexpr auto kLastReplyTimeout = std::chrono::seconds(5);
// After losing the primary, passes do not try to reach it again before this.
constexpr auto kRetryAfter = std::chrono::seconds(5);

// An eventfd's counter, set to wake a wait and cleared once seen (a failure only means
// it was set, or clear, already).
void poke(int fd) {
  uint64_t one = 1;
  if (fd >= 0) {
    [[maybe_unused]] ssize_t n = ::write(fd, &one, sizeof(one));
  }
}
void clear(int fd) {
  uint64_t count = 0;
  if (fd >= 0) {
    [[maybe_unused]] ssize_t n = ::read(fd, &count, sizeof(count));
  }
}

}  // namespace

RecordForwarder::RecordForwarder(std::string dir, std::string agent_id, std::string token)
    : dir_(std::move(dir)),
      agent_id_(std::move(agent_id)),
      token_(std::move(token)),
      hurry_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

RecordForwarder::~RecordForwarder() {
  if (hurry_fd_ >= 0) ::close(hurry_fd_);
}

void RecordForwarder::hurry() {
  hurried_ = true;
  poke(hurry_fd_);
}

void RecordForwarder::set_endpoint(const std::string& host, int port) {
  std::lock_guard lock(mutex_);
  host_ = host;
  port_ = port;
}

std::string RecordForwarder::endpoint() {
  std::lock_guard lock(mutex_);
  return port_ ? "at " + host_ + ":" + std::to_string(port_)
               : std::string("whose address was never published");
}

void RecordForwarder::lost(const std::string& why) {
  socket_.close();
  retry_after_ = std::chrono::steady_clock::now() + kRetryAfter;
  if (!warned_) {
    spdlog::warn("tracking: cannot forward records to the primary agent {}: {}; they stay in {}",
                 endpoint(), why, dir_);
  }
  warned_ = true;
}

bool RecordForwarder::connected() {
  if (socket_.is_open()) return true;
  std::string host;
  int port = 0;
  {
    std::lock_guard lock(mutex_);
    host = host_;
    port = port_;
  }
  if (port == 0 || std::chrono::steady_clock::now() < retry_after_) return false;
  try {
    auto deadline = std::chrono::steady_clock::now() + kConnectTimeout;
    net::Socket socket = net::Socket::connect(host, port, deadline);
    if (!token_.empty()) {
      net::job_token::answer_challenge(
          socket, token_, "the run's primary at " + host + ":" + std::to_string(port), deadline);
    }
    socket_ = std::move(socket);  // only a connection that was let in counts
    return true;
  } catch (const std::exception& e) {
    lost(e.what());
    return false;
  }
}

std::string RecordForwarder::request(const std::string& header, std::string_view data,
                                     std::chrono::milliseconds timeout) {
  if (hurried_) timeout = std::min<std::chrono::milliseconds>(timeout, kLastReplyTimeout);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string head = frame_length(header.size() + 1 + data.size()) + header + "\n";
  socket_.send_all(head.data(), head.size(), deadline);
  socket_.send_all(data.data(), data.size(), deadline);
  deadline = await_reply(deadline);
  unsigned char len[4];
  socket_.recv_exact(len, 4, deadline);
  size_t n = read_frame_length(len);
  if (n > kMaxFrame)
    throw TrackingError("the primary sent a frame of " + std::to_string(n) + " bytes");
  std::string reply(n, '\0');
  socket_.recv_exact(reply.data(), n, deadline);
  return reply;
}

// Returns the reply's deadline when the reply starts, the deadline passed (the read
// then says so) or the connection failed; a hurry() meanwhile brings it in.
std::chrono::steady_clock::time_point RecordForwarder::await_reply(
    std::chrono::steady_clock::time_point deadline) {
  using std::chrono::steady_clock;
  while (true) {
    auto now = steady_clock::now();
    if (now >= deadline) return deadline;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    pollfd p[2] = {{socket_.fd(), POLLIN, 0}, {hurry_fd_, POLLIN, 0}};
    int n = ::poll(p, hurry_fd_ >= 0 ? 2 : 1, static_cast<int>(std::min<int64_t>(left, 60000)));
    if (n < 0 && errno != EINTR) return deadline;
    if (n > 0 && p[0].revents != 0) return deadline;
    if (n > 0 && (p[1].revents & POLLIN) != 0) {
      clear(hurry_fd_);
      deadline = std::min(deadline, steady_clock::now() + kLastReplyTimeout);
    }
  }
}

int64_t RecordForwarder::send_chunk(const std::string& stream, int64_t offset,
                                    std::string_view data, std::chrono::milliseconds timeout) {
  nlohmann::json header{{"agent", agent_id_}, {"stream", stream}, {"offset", offset}};
  auto reply = nlohmann::json::parse(request(header.dump(), data, timeout), nullptr, false);
  if (reply.contains("error"))
    throw TrackingError("the primary could not store them: " + reply["error"].dump());
  if (!reply.contains("offset") || !reply["offset"].is_number_unsigned()) {
    throw TrackingError("the primary's reply is malformed");
  }
  return reply["offset"].get<int64_t>();
}

IngestStats RecordForwarder::pass(bool final) {
  IngestStats stats;
  unsent_ = false;
  if (final) {  // the pass hurry() asked for: the ones after it take their time again
    hurried_ = false;
    clear(hurry_fd_);
  }
  for (const auto& [name, path] : stream_files(dir_)) {
    int64_t& sent = sent_[name];
    // About a chunk at a time, cut after its last whole line (all of a longer line);
    // each byte is read once per pass.
    while (true) {
      std::string data = read_from(path, sent, kChunk);
      size_t cut = data.rfind('\n');
      if (cut == std::string::npos && data.size() == kChunk) {
        data = read_from(path, sent);
        cut = data.find('\n');
      }
      if (cut == std::string::npos) {  // nothing new, or a line still being written
        if (final && !data.empty() && !torn_seen_[name]) {
          torn_seen_[name] = true;  // its writer is gone: it never ends
          ++stats.torn_records;
        }
        break;
      }
      if (!connected()) {
        unsent_ = true;
        break;
      }
      try {
        int64_t held = send_chunk(name, sent, std::string_view(data).substr(0, cut + 1),
                                  final ? kLastReplyTimeout : kReplyTimeout);
        if (held == sent) {  // nothing taken: try again next pass
          unsent_ = true;
          break;
        }
        // The records the primary took: the whole lines up to where it holds.
        auto taken = std::string_view(data).substr(0, static_cast<size_t>(std::max<int64_t>(held - sent, 0)));
        stats.records += std::count(taken.begin(), taken.end(), '\n');
        sent = held;
      } catch (const std::exception& e) {
        lost(e.what());
        unsent_ = true;
        break;
      }
    }
  }
  return stats;
}

bool RecordForwarder::bye() {
  if (!connected()) return false;
  try {
    request(nlohmann::json{{"agent", agent_id_}, {"bye", true}}.dump(), {}, kLastReplyTimeout);
    socket_.close();
    return true;
  } catch (const std::exception& e) {
    lost(e.what());
    return false;
  }
}

}  // namespace ddprun::tracking
