#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace ddprun::net {

/// A credential service of the cluster (MUNGE: os/munge.h): a credential proves to any
/// host of the cluster which user made it, and carries a payload only the service can
/// read. What lets the nodes of a Slurm step agree on a job token nobody gave them.
class Credentials {
 public:
  virtual ~Credentials() = default;

  /// A credential carrying `payload`; with `only_uid`, only that user can decode it.
  /// Throws Error naming the service and why it failed.
  virtual std::string encode(const std::string& payload, std::optional<uid_t> only_uid) = 0;

  struct Decoded {
    std::string payload;
    uid_t uid = 0;  // who made it
  };
  /// Throws Error naming why the credential is not valid (expired, replayed, forged).
  virtual Decoded decode(const std::string& credential) = 0;
};

}  // namespace ddprun::net
