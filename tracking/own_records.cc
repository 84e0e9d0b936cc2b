#include "tracking/own_records.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ddprun::tracking {

OwnRecords::~OwnRecords() {
  if (fd_ >= 0) ::close(fd_);
}

void OwnRecords::open_now() {
  if (fd_ < 0) fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw TrackingError("cannot write " + path_ + ": " + std::strerror(errno));
}

void OwnRecords::add(const nlohmann::json& record) {
  lines_ += record.dump();
  lines_ += '\n';
}

void OwnRecords::add_event(const Event& e) {
  if (e.data_json.find('\n') != std::string::npos) {  // not one line: written again
    return add({{"k", "event"},
                {"t", e.wall},
                {"kind", e.kind},
                {"node", e.node},
                {"rank", e.rank},
                {"attempt", e.attempt},
                {"d", nlohmann::json::parse(e.data_json)}});
  }
  lines_ += R"({"k":"event","t":)";
  lines_ += nlohmann::json(e.wall).dump();
  lines_ += R"(,"kind":)";
  lines_ += nlohmann::json(e.kind).dump();
  lines_ += ",\"node\":" + std::to_string(e.node) + ",\"rank\":" + std::to_string(e.rank) +
            ",\"attempt\":" + std::to_string(e.attempt) + ",\"d\":" + e.data_json + "}\n";
}

void OwnRecords::add_system(int node, double wall,
                            const std::vector<std::pair<std::string, double>>& v) {
  nlohmann::json d = nlohmann::json::object();
  for (const auto& [k, value] : v) d[k] = value;
  add({{"k", "sys"}, {"t", wall}, {"node", node}, {"d", d}});
}

void OwnRecords::flush() {
  if (lines_.empty()) return;
  std::string text = std::exchange(lines_, {});
  if (path_.empty()) return;  // neither primary nor forwarding yet
  open_now();
  if (::write(fd_, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    throw TrackingError("cannot write " + path_ + ": " + std::strerror(errno));
  }
}

}  // namespace ddprun::tracking
