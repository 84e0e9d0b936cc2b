#pragma once

#include <memory>
#include <string>

#include "net/credentials.h"

namespace ddprun::os {

/// MUNGE, the credential service Slurm authenticates with, loaded at run time (dlopen
/// of libmunge.so.2) so that ddprun needs it only where it is used. Every call asks the
/// local munged over its socket. Not thread-safe.
class Munge : public net::Credentials {
 public:
  /// The library, talking to munged at `socket` ("" = MUNGE's default socket); null
  /// where the library is missing, with `why` saying so.
  static std::unique_ptr<Munge> load(const std::string& socket, std::string* why);
  ~Munge() override;
  Munge(const Munge&) = delete;
  Munge& operator=(const Munge&) = delete;

  std::string encode(const std::string& payload, std::optional<uid_t> only_uid) override;
  Decoded decode(const std::string& credential) override;

 private:
  struct Api;
  Munge(std::unique_ptr<Api> api, std::string socket);
  std::unique_ptr<void, void (*)(void*)> context() const;
  std::unique_ptr<Api> api_;
  std::string socket_;
};

/// Where munged listens for a Slurm cluster: the `socket=` of AuthInfo in `slurm_conf`
/// (slurm.conf's text; Slurm's own override), else "" (MUNGE's default).
std::string munge_socket_of(const std::string& slurm_conf);

}  // namespace ddprun::os
