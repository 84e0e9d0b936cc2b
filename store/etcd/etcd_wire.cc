#include "store/etcd/etcd_wire.h"

#include <charconv>

namespace ddprun::store::etcd_wire {

namespace {

const char* kBase64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

[[noreturn]] void malformed(const std::string& what) {
  throw StoreError("malformed etcd reply: " + what);
}

const nlohmann::json& object(const nlohmann::json& j, const char* what) {
  if (!j.is_object()) malformed(std::string(what) + " is not an object");
  return j;
}

// A string field ("" when left out).
std::string string_field(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return "";
  if (!it->is_string()) malformed(std::string("'") + name + "' is not a string");
  return it->get<std::string>();
}

}  // namespace

std::string b64(const std::string& in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kBase64[(v >> s) & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    out += kBase64[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::string unb64(const std::string& in) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    const char* p = c ? std::strchr(kBase64, c) : nullptr;
    if (p == nullptr) continue;  // '=' padding
    acc = (acc << 6) | static_cast<uint32_t>(p - kBase64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

// etcd's gateway writes 64-bit integers as JSON strings, and leaves zero values out.
int64_t int_field(const nlohmann::json& j, const char* name) {
  auto it = object(j, "a reply").find(name);
  if (it == j.end() || it->is_null()) return 0;
  if (it->is_string()) {
    const std::string& text = it->get_ref<const std::string&>();
    int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
      malformed(std::string("'") + name + "' is not an integer: '" + text.substr(0, 40) + "'");
    }
    return value;
  }
  if (it->is_number_integer()) return it->get<int64_t>();
  malformed(std::string("'") + name + "' is not an integer");
}

EtcdKv to_kv(const nlohmann::json& j) {
  EtcdKv kv;
  object(j, "a key-value");
  kv.key = unb64(string_field(j, "key"));
  kv.value = unb64(string_field(j, "value"));
  kv.create_revision = int_field(j, "create_revision");
  kv.mod_revision = int_field(j, "mod_revision");
  return kv;
}

EtcdClient::Range to_range(const nlohmann::json& j) {
  EtcdClient::Range r;
  object(j, "a range");
  if (auto h = j.find("header"); h != j.end()) r.revision = int_field(*h, "revision");
  if (auto kvs = j.find("kvs"); kvs != j.end() && !kvs->is_null()) {
    if (!kvs->is_array()) malformed("'kvs' is not an array");
    for (const auto& kv : *kvs) r.kvs.push_back(to_kv(kv));
  }
  r.count = int_field(j, "count");
  return r;
}

size_t json_object_end(const std::string& s, JsonScan& scan) {
  for (; scan.at < s.size(); ++scan.at) {
    char c = s[scan.at];
    if (scan.escaped) {
      scan.escaped = false;
    } else if (scan.in_string) {
      if (c == '\\')
        scan.escaped = true;
      else if (c == '"')
        scan.in_string = false;
    } else if (c == '"') {
      scan.in_string = true;
    } else if (c == '{') {
      ++scan.depth;
    } else if (c == '}' && --scan.depth == 0) {
      return ++scan.at;
    }
  }
  return std::string::npos;
}

nlohmann::json txn_ops(const std::vector<EtcdOp>& ops) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& op : ops) {
    nlohmann::json body{{"key", b64(op.key)}};
    if (!op.range_end.empty()) body["range_end"] = b64(op.range_end);
    switch (op.kind) {
      case EtcdOp::Kind::kRange:
        if (op.keys_only) body["keys_only"] = true;
        if (op.count_only) body["count_only"] = true;
        out.push_back({{"request_range", body}});
        break;
      case EtcdOp::Kind::kPut:
        body["value"] = b64(op.value);
        if (op.lease != 0) body["lease"] = std::to_string(op.lease);
        out.push_back({{"request_put", body}});
        break;
    }
  }
  return out;
}

nlohmann::json txn_request(const std::optional<EtcdCompare>& compare,
                           const std::vector<EtcdOp>& success, const std::vector<EtcdOp>& failure) {
  nlohmann::json body{{"success", txn_ops(success)}};
  if (compare) {
    nlohmann::json c{{"key", b64(compare->key)}, {"result", "EQUAL"}};
    if (compare->mod_revision == 0) {
      c["target"] = "CREATE";
      c["create_revision"] = "0";
    } else {
      c["target"] = "MOD";
      c["mod_revision"] = std::to_string(compare->mod_revision);
    }
    body["compare"] = nlohmann::json::array({c});
    body["failure"] = txn_ops(failure);
  }
  return body;
}

EtcdClient::TxnResult txn_result(const std::string& where, const nlohmann::json& reply,
                                 bool conditional, const std::vector<EtcdOp>& success,
                                 const std::vector<EtcdOp>& failure) {
  return read_reply(where, [&] {
    EtcdClient::TxnResult r;
    r.succeeded = !conditional || reply.value("succeeded", false);
    r.revision = int_field(reply.value("header", nlohmann::json::object()), "revision");
    const auto& taken = r.succeeded ? success : failure;
    auto responses = reply.value("responses", nlohmann::json::array());
    if (!responses.is_array())
      throw StoreError("malformed etcd reply: 'responses' is not an array");
    for (size_t i = 0; i < taken.size() && i < responses.size(); ++i) {
      if (taken[i].kind == EtcdOp::Kind::kRange) {
        r.ranges.push_back(
            to_range(responses[i].value("response_range", nlohmann::json::object())));
      }
    }
    return r;
  });
}

std::string watch_request(const std::string& key, const std::string& range_end, int64_t next) {
  nlohmann::json create{{"key", b64(key)}, {"start_revision", std::to_string(next)}};
  if (!range_end.empty()) create["range_end"] = b64(range_end);
  return nlohmann::json{{"create_request", create}}.dump();
}

nlohmann::json range_request(const std::string& key, const std::string& range_end,
                             bool count_only) {
  nlohmann::json body{{"key", b64(key)}};
  if (!range_end.empty()) body["range_end"] = b64(range_end);
  if (count_only) body["count_only"] = true;
  return body;
}

std::vector<std::vector<EtcdOp>> range_batches(const std::vector<std::string>& keys) {
  constexpr size_t kBatch = 128;  // etcd's default limit of operations per transaction
  std::vector<std::vector<EtcdOp>> batches;
  for (size_t first = 0; first < keys.size(); first += kBatch) {
    auto& ops = batches.emplace_back();
    for (size_t i = first; i < std::min(keys.size(), first + kBatch); ++i) {
      ops.push_back(EtcdOp::range(keys[i]));
    }
  }
  return batches;
}

std::vector<EtcdClient::Range> joined_ranges(std::vector<EtcdClient::TxnResult> results,
                                             size_t keys, const std::string& where) {
  std::vector<EtcdClient::Range> out;
  int64_t oldest = 0;
  for (auto& r : results) {
    oldest = oldest == 0 ? r.revision : std::min(oldest, r.revision);
    for (auto& range : r.ranges) out.push_back(std::move(range));
  }
  if (out.size() != keys) throw StoreError(where + ": short txn reply");
  for (auto& r : out) r.revision = oldest;
  return out;
}

std::optional<EtcdKv> key_after_put(const EtcdClient::TxnResult& r, const std::string& key,
                                    const std::string& value) {
  // The put's revision is the transaction's: the key as it is now.
  if (r.succeeded) return EtcdKv{key, value, 0, r.revision};
  if (!r.ranges.empty() && !r.ranges[0].kvs.empty()) return r.ranges[0].kvs[0];
  return std::nullopt;
}

}  // namespace ddprun::store::etcd_wire

namespace ddprun::store {

EtcdOp EtcdOp::range(std::string key, std::string range_end, bool keys_only) {
  return {Kind::kRange, std::move(key), std::move(range_end), "", 0, keys_only, false};
}

EtcdOp EtcdOp::count(std::string key, std::string range_end) {
  return {Kind::kRange, std::move(key), std::move(range_end), "", 0, false, true};
}

EtcdOp EtcdOp::put(std::string key, std::string value, int64_t lease) {
  return {Kind::kPut, std::move(key), "", std::move(value), lease, false, false};
}

}  // namespace ddprun::store
