#include "tracking/tfevents.h"

#include <unistd.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <utility>

#include "common/host.h"

namespace ddprun::tracking {
namespace {

constexpr uint32_t kCastagnoli = 0x82F63B78;  // reflected
constexpr uint32_t kMaskDelta = 0xa282ead8;
constexpr const char* kFileVersion = "brain.Event:2";

std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kCastagnoli : c >> 1;
    t[i] = c;
  }
  return t;
}

uint32_t masked(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

// Protocol buffer fields: (number << 3) | wire type.
void put_double(std::string& out, int field, double v) {
  put_varint(out, static_cast<uint64_t>(field) << 3 | 1);
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(bits));
  put_le(out, bits, 8);
}

void put_float(std::string& out, int field, float v) {
  put_varint(out, static_cast<uint64_t>(field) << 3 | 5);
  uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof(bits));
  put_le(out, bits, 4);
}

void put_int64(std::string& out, int field, int64_t v) {
  put_varint(out, static_cast<uint64_t>(field) << 3);
  put_varint(out, static_cast<uint64_t>(v));
}

void put_bytes(std::string& out, int field, std::string_view bytes) {
  put_varint(out, static_cast<uint64_t>(field) << 3 | 2);
  put_varint(out, bytes.size());
  out += bytes;
}

std::string file_name(double wall_time) {
  return "events.out.tfevents." + std::to_string(static_cast<int64_t>(wall_time)) + "." +
         host_name() + "." + std::to_string(::getpid());
}

}  // namespace

uint32_t crc32c(std::string_view bytes) {
  static const std::array<uint32_t, 256> table = make_table();
  uint32_t c = 0xffffffff;
  for (char ch : bytes) c = table[(c ^ static_cast<uint8_t>(ch)) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffff;
}

TfEventsFile::TfEventsFile(const std::string& path, double wall_time)
    : path_(path), out_(path, std::ios::binary | std::ios::trunc) {
  if (!out_) throw TrackingError("cannot write " + path_);
  std::string event;
  put_double(event, 1, wall_time);
  put_bytes(event, 3, kFileVersion);
  record(event);
}

void TfEventsFile::scalar(double wall_time, int64_t step, const std::string& tag, float value) {
  std::string v;
  put_bytes(v, 1, tag);
  put_float(v, 2, value);
  std::string summary;
  put_bytes(summary, 1, v);
  std::string event;
  put_double(event, 1, wall_time);
  put_int64(event, 2, step);
  put_bytes(event, 5, summary);
  record(event);
}

void TfEventsFile::record(const std::string& data) {
  std::string frame;
  put_le(frame, data.size(), 8);
  put_le(frame, masked(crc32c(frame)), 4);
  frame += data;
  put_le(frame, masked(crc32c(data)), 4);
  out_.write(frame.data(), static_cast<std::streamsize>(frame.size()));
}

void TfEventsFile::close() {
  out_.flush();
  if (!out_) throw TrackingError("cannot write " + path_);
  out_.close();
}

std::vector<std::string> export_tfevents(RunStore& store, const std::string& dir) {
  std::vector<std::string> written;
  // One open file per rank and attempt (points come ordered by node, rank, attempt).
  std::unique_ptr<TfEventsFile> file;
  std::pair<int, int> open_for{-1, -1};
  auto open = [&](const std::string& sub, double wall) {
    if (file) file->close();
    std::string where = dir + "/" + sub;
    std::error_code ec;
    std::filesystem::create_directories(where, ec);
    if (ec) throw TrackingError("cannot create " + where + ": " + ec.message());
    written.push_back(where + "/" + file_name(wall));
    file = std::make_unique<TfEventsFile>(written.back(), wall);
  };
  store.for_each_metric([&](const MetricPoint& p) {
    if (std::make_pair(p.rank, p.attempt) != open_for) {
      open("rank" + std::to_string(p.rank) + "/attempt" + std::to_string(p.attempt), p.wall);
      open_for = {p.rank, p.attempt};
    }
    file->scalar(p.wall, p.step.value_or(p.seq), p.key, static_cast<float>(p.value));
  });
  std::map<int, std::vector<std::tuple<double, std::string, double>>> system;
  for (auto& [node, wall, key, value] : store.node_system_metrics()) {
    system[node].emplace_back(wall, std::move(key), value);
  }
  for (const auto& [node, samples] : system) {
    open("system/node" + std::to_string(node), std::get<0>(samples.front()));
    std::map<std::string, int64_t> count;  // per key: the sample's number
    for (const auto& [wall, key, value] : samples) {
      file->scalar(wall, count[key]++, key, static_cast<float>(value));
    }
  }
  if (file) file->close();
  return written;
}

}  // namespace ddprun::tracking
