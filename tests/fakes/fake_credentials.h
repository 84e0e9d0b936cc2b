#pragma once

#include <unistd.h>

#include <map>
#include <mutex>
#include <string>

#include "common/error.h"
#include "net/credentials.h"

namespace ddprun::test {

/// MUNGE as its users see it, in memory: a credential names its maker, carries its
/// payload, may be restricted to one user's decoding, and decodes once (a replay is
/// refused). Shared by a test's "nodes". Thread-safe (a store decodes on its thread).
class FakeCredentials : public net::Credentials {
 public:
  uid_t maker = ::geteuid();    // who encode() says made a credential
  uid_t decoder = ::geteuid();  // who decode() runs as
  bool broken = false;          // munged does not answer

  std::string encode(const std::string& payload, std::optional<uid_t> only_uid) override {
    std::lock_guard lock(mutex_);
    if (broken) throw Error("MUNGE could not make a credential: Failed to connect to munged");
    std::string id = "MUNGE:fake" + std::to_string(next_++) + ":";
    issued_[id] = {payload, maker, only_uid};
    return id;
  }

  Decoded decode(const std::string& credential) override {
    std::lock_guard lock(mutex_);
    if (broken) throw Error("MUNGE: Failed to connect to munged");
    auto it = issued_.find(credential);
    if (it == issued_.end()) throw Error("MUNGE: Invalid credential");
    Issued i = it->second;
    if (i.only && *i.only != decoder) throw Error("MUNGE: Unauthorized credential");
    issued_.erase(it);
    return {i.payload, i.maker};
  }

 private:
  struct Issued {
    std::string payload;
    uid_t maker;
    std::optional<uid_t> only;
  };
  std::mutex mutex_;
  int next_ = 0;
  std::map<std::string, Issued> issued_;
};

}  // namespace ddprun::test
