#pragma once

#include <string>
#include <vector>

namespace ddprun::store {

/// One member of an etcd cluster, reached over plain HTTP.
struct EtcdEndpoint {
  std::string host;
  int port = 2379;
  std::string text() const;
};

/// "h1:2379,h2:2379,[::1]:2379" (port 2379 when left out). Throws UsageError naming
/// the bad entry.
std::vector<EtcdEndpoint> parse_etcd_endpoints(const std::string& spec);

}  // namespace ddprun::store
