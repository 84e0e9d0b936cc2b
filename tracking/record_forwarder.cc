#include "tracking/record_forwarder.h"

#include <filesystem>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "tracking/record_link.h"

namespace ddprun::tracking {
namespace {

constexpr auto kConnectTimeout = std::chrono::seconds(2);
constexpr auto kReplyTimeout = std::chrono::seconds(30);
// After losing the primary, passes do not try to reach it again before this.
constexpr auto kRetryAfter = std::chrono::seconds(5);

}  // namespace

RecordForwarder::RecordForwarder(std::string dir, std::string agent_id)
    : dir_(std::move(dir)), agent_id_(std::move(agent_id)) {}

void RecordForwarder::set_endpoint(const std::string& host, int port) {
  std::lock_guard lock(mutex_);
  host_ = host;
  port_ = port;
}

std::string RecordForwarder::endpoint() {
  std::lock_guard lock(mutex_);
  return port_ ? host_ + ":" + std::to_string(port_) : std::string("(none published)");
}

void RecordForwarder::lost(const std::string& why) {
  socket_.close();
  retry_after_ = std::chrono::steady_clock::now() + kRetryAfter;
  if (!warned_) {
    spdlog::warn("tracking: cannot forward records to the primary agent at {}: {}; they stay in {}",
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
    socket_ = rendezvous::Socket::connect(host, port,
                                          std::chrono::steady_clock::now() + kConnectTimeout);
    return true;
  } catch (const std::exception& e) {
    lost(e.what());
    return false;
  }
}

std::string RecordForwarder::request(const std::string& header, std::string_view data) {
  auto deadline = std::chrono::steady_clock::now() + kReplyTimeout;
  std::string head = frame_length(header.size() + 1 + data.size()) + header + "\n";
  socket_.send_all(head.data(), head.size(), deadline);
  socket_.send_all(data.data(), data.size(), deadline);
  unsigned char len[4];
  socket_.recv_exact(len, 4, deadline);
  size_t n = read_frame_length(len);
  if (n > kMaxFrame) throw TrackingError("the primary sent a frame of " + std::to_string(n) + " bytes");
  std::string reply(n, '\0');
  socket_.recv_exact(reply.data(), n, deadline);
  return reply;
}

int64_t RecordForwarder::send_chunk(const std::string& stream, int64_t offset,
                                    std::string_view data) {
  nlohmann::json header{{"agent", agent_id_}, {"stream", stream}, {"offset", offset}};
  auto reply = nlohmann::json::parse(request(header.dump(), data), nullptr, false);
  if (reply.contains("error")) throw TrackingError("the primary could not store them: " + reply["error"].dump());
  if (!reply.contains("offset") || !reply["offset"].is_number_unsigned()) {
    throw TrackingError("the primary's reply is malformed");
  }
  return reply["offset"].get<int64_t>();
}

IngestStats RecordForwarder::pass(bool final) {
  IngestStats stats;
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir_ + "/streams", ec)) {
    files.push_back(e.path());
  }
  if (std::filesystem::exists(dir_ + "/" + kAgentStream, ec)) files.push_back(dir_ + "/" + kAgentStream);
  for (const auto& path : files) {
    std::string name = path.filename();
    StreamOrigin origin;
    if (!parse_stream_name(name, origin)) continue;
    int64_t from = lines_[name];
    std::string data = read_from(path, from);
    size_t complete = data.rfind('\n') == std::string::npos ? 0 : data.rfind('\n') + 1;
    lines_[name] = from + static_cast<int64_t>(complete);
    if (final && complete < data.size() && !torn_seen_[name]) {
      torn_seen_[name] = true;
      ++stats.torn_records;
    }
  }
  for (const auto& [name, end] : lines_) {
    int64_t& sent = sent_[name];
    if (sent >= end || !connected()) continue;
    try {
      std::string path = dir_ + (name == kAgentStream ? "/" : "/streams/") + name;
      while (sent < end) {
        // About a chunk, cut after its last whole line (all of one longer line).
        auto left = static_cast<size_t>(end - sent);
        std::string data = read_from(path, sent, std::min(left, kChunk));
        size_t cut = data.rfind('\n');
        if (cut == std::string::npos) {
          data = read_from(path, sent, left);
          cut = data.find('\n');
          if (cut == std::string::npos) break;  // the file changed under us: next pass
        }
        int64_t held = send_chunk(name, sent, std::string_view(data).substr(0, cut + 1));
        if (held == sent) break;  // nothing taken: try again next pass
        sent = held;
      }
    } catch (const std::exception& e) {
      lost(e.what());
      return stats;
    }
  }
  return stats;
}

bool RecordForwarder::bye() {
  if (!connected()) return false;
  try {
    request(nlohmann::json{{"agent", agent_id_}, {"bye", true}}.dump(), {});
    socket_.close();
    return true;
  } catch (const std::exception& e) {
    lost(e.what());
    return false;
  }
}

bool RecordForwarder::all_sent() {
  for (const auto& [name, end] : lines_) {
    if (sent_[name] < end) return false;
  }
  return true;
}

}  // namespace ddprun::tracking
