#include "store/etcd/etcd_endpoint.h"

#include <cstring>

#include "common/error.h"

namespace ddprun::store {

std::string EtcdEndpoint::text() const {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

std::vector<EtcdEndpoint> parse_etcd_endpoints(const std::string& spec) {
  std::vector<EtcdEndpoint> out;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    std::string item =
        spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? spec.size() + 1 : comma + 1;
    // Tolerate the URL form etcd's own tools print.
    for (const char* scheme : {"http://", "https://"}) {
      if (item.rfind(scheme, 0) == 0) item = item.substr(std::strlen(scheme));
    }
    EtcdEndpoint e;
    std::string port;
    if (!item.empty() && item[0] == '[') {
      size_t close = item.find(']');
      if (close == std::string::npos)
        throw UsageError("--rdzv_endpoint: bad etcd endpoint '" + item + "'");
      e.host = item.substr(1, close - 1);
      if (close + 1 < item.size()) {
        if (item[close + 1] != ':')
          throw UsageError("--rdzv_endpoint: bad etcd endpoint '" + item + "'");
        port = item.substr(close + 2);
      }
    } else {
      size_t colon = item.rfind(':');
      e.host = item.substr(0, colon);
      if (colon != std::string::npos) port = item.substr(colon + 1);
    }
    if (e.host.empty()) throw UsageError("--rdzv_endpoint: empty etcd endpoint in '" + spec + "'");
    if (!port.empty()) {
      size_t used = 0;
      int p = 0;
      try {
        p = std::stoi(port, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != port.size() || p <= 0 || p > 65535) {
        throw UsageError("--rdzv_endpoint: bad port in etcd endpoint '" + item + "'");
      }
      e.port = p;
    }
    out.push_back(e);
  }
  return out;
}

}  // namespace ddprun::store
