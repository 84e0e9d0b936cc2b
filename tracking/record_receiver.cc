#include "tracking/record_receiver.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <nlohmann/json.hpp>

#include "common/thread_name.h"
#include "net/listen.h"
#include "net/token_gate.h"
#include "tracking/record_lines.h"
#include "tracking/record_link.h"
#include "tracking/run_store.h"

namespace asio = boost::asio;
using asio::ip::tcp;

namespace ddprun::tracking {

class RecordReceiver::Impl {
 public:
  Impl(const std::string& run_dir, std::string token, const std::string& host)
      : store_(run_dir, RunStore::Open::kExisting),
        acceptor_(net::open_acceptor(io_, host, 0)),
        gate_(io_, std::move(token), "record receiver") {
    port_ = acceptor_.local_endpoint().port();
    accept();
    thread_ = std::thread([this] {
      name_this_thread("ddprun-records");
      io_.run();
    });
  }

  ~Impl() {
    asio::post(io_, [this] { io_.stop(); });
    thread_.join();
  }

  uint16_t port() const { return port_; }

  void wait_for_agents(std::chrono::milliseconds max) {
    std::unique_lock lock(mutex_);
    idle_.wait_for(lock, max, [this] { return busy_ == 0; });
  }

 private:
  struct Session {
    explicit Session(tcp::socket s) : socket(std::move(s)) {}
    tcp::socket socket;
    unsigned char length[4];
    std::string payload;
    std::string reply;
    bool said_bye = false;
  };

  void accept() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) {
        gate_.admit(std::move(socket), [this](tcp::socket s) {
          auto session = std::make_shared<Session>(std::move(s));
          set_busy(+1);
          read_frame(session);
        });
      }
      accept();
    });
  }

  void set_busy(int delta) {
    std::lock_guard lock(mutex_);
    busy_ += delta;
    if (busy_ == 0) idle_.notify_all();
  }

  void close(const std::shared_ptr<Session>& s) {
    boost::system::error_code ignored;
    s->socket.close(ignored);
    if (!s->said_bye) set_busy(-1);
  }

  void read_frame(const std::shared_ptr<Session>& s) {
    asio::async_read(s->socket, asio::buffer(s->length), [this, s](auto ec, size_t) {
      if (ec) return close(s);
      size_t n = read_frame_length(s->length);
      if (n > kMaxFrame) {
        spdlog::warn("tracking: a forwarded frame of {} bytes is too large; connection closed", n);
        return close(s);
      }
      s->payload.resize(n);
      asio::async_read(s->socket, asio::buffer(s->payload), [this, s](auto ec2, size_t) {
        if (ec2) return close(s);
        std::string reply = handle(*s);
        if (reply.empty()) return close(s);
        s->reply = frame_length(reply.size()) + reply;
        asio::async_write(s->socket, asio::buffer(s->reply), [this, s](auto ec3, size_t) {
          if (ec3) return close(s);
          read_frame(s);
        });
      });
    });
  }

  // The reply to one request; "" closes the connection (a malformed request).
  std::string handle(Session& s) {
    size_t nl = s.payload.find('\n');
    if (nl == std::string::npos) return {};
    nlohmann::json header = nlohmann::json::parse(s.payload.substr(0, nl), nullptr, false);
    if (!header.is_object() || !header.contains("agent") || !header["agent"].is_string()) return {};
    std::string agent = header["agent"];
    if (!valid_agent_id(agent)) return {};
    if (header.value("bye", false)) {
      if (!s.said_bye) set_busy(-1);
      s.said_bye = true;
      return R"({"ok":true})";
    }
    StreamOrigin origin;
    if (!header.contains("stream") || !header["stream"].is_string() ||
        !parse_stream_name(header["stream"].get<std::string>(), origin) ||
        !header.contains("offset") || !header["offset"].is_number_unsigned() ||
        header["offset"].get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return {};
    }
    std::string key = agent + "/" + header["stream"].get<std::string>();
    auto offset = header["offset"].get<int64_t>();
    std::string_view data(s.payload);
    data.remove_prefix(nl + 1);
    try {
      store_.begin();
      int64_t held = store_.stream_offset(key);
      if (offset <= held && held < offset + static_cast<int64_t>(data.size())) {
        IngestStats stats;
        data.remove_prefix(static_cast<size_t>(held - offset));
        held += static_cast<int64_t>(ingest_lines(store_, data, origin, false, stats));
        store_.set_stream_offset(key, held);
      }
      store_.commit();
      return nlohmann::json{{"offset", held}}.dump();
    } catch (const std::exception& e) {
      store_.rollback();
      if (!error_reported_)
        spdlog::error("tracking: storing forwarded records failed: {}", e.what());
      error_reported_ = true;
      return nlohmann::json{{"error", e.what()}}.dump();
    }
  }

  RunStore store_;
  asio::io_context io_{1};
  tcp::acceptor acceptor_;
  net::TokenGate gate_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable idle_;
  int busy_ = 0;  // connections that have not said bye
  bool error_reported_ = false;
};

RecordReceiver::RecordReceiver(const std::string& run_dir, std::string token,
                               const std::string& host)
    : impl_(std::make_unique<Impl>(run_dir, std::move(token), host)) {}
RecordReceiver::~RecordReceiver() = default;
uint16_t RecordReceiver::port() const { return impl_->port(); }
void RecordReceiver::wait_for_agents(std::chrono::milliseconds max) { impl_->wait_for_agents(max); }

}  // namespace ddprun::tracking
