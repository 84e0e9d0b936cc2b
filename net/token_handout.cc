#include "net/token_handout.h"

#include <unistd.h>

#include "common/error.h"

namespace ddprun::net::token_handout {
namespace {

std::string asking_for(const std::string& job) { return "ddprun job token for " + job; }

}  // namespace

std::string ask_line(Credentials& credentials, const std::string& job) {
  return kAsk + credentials.encode(asking_for(job), std::nullopt) + "\n";
}

std::string answer(const TokenHandout& handout, const std::string& token,
                   const std::string& credential) {
  auto refuse = [](const std::string& why) { return kRefused + why + "\n"; };
  if (!handout.credentials || token.empty()) return refuse("this node hands out no job token");
  try {
    Credentials::Decoded asked = handout.credentials->decode(credential);
    uid_t self = ::geteuid();
    if (asked.uid != self) {
      return refuse("the credential is user " + std::to_string(asked.uid) + "'s; the job runs as " +
                    std::to_string(self));
    }
    if (asked.payload != asking_for(handout.job)) {
      return refuse("the credential asks for another job's token (this is " + handout.job + ")");
    }
    return kHand + handout.credentials->encode(token, asked.uid) + "\n";
  } catch (const std::exception& e) {
    return refuse(std::string("the credential is not valid: ") + e.what());
  }
}

std::optional<std::string> fetch(Credentials& credentials, const std::string& host, int port,
                                 const std::string& job, Socket::Deadline deadline) {
  std::string where = "the job's first node at " + host + ":" + std::to_string(port);
  std::string ask = ask_line(credentials, job);
  Socket socket = Socket::connect(host, port, deadline);
  socket.send_all(ask.data(), ask.size(), deadline);
  std::string line;
  char buf[512];
  try {
    while (line.find('\n') == std::string::npos) {
      if (line.size() > kMaxLine) {
        throw StoreError(where + " answered the job-token request with a line over " +
                         std::to_string(kMaxLine) + " bytes");
      }
      line.append(buf, socket.recv_some(buf, sizeof(buf), deadline));
    }
  } catch (const StoreError&) {
    if (line.empty() && !socket.is_open()) return std::nullopt;  // it hands out none
    throw;
  }
  line.resize(line.find('\n'));
  if (line.starts_with(kRefused)) {
    throw StoreError(
        where + " refused to hand out the job token: " + line.substr(std::string(kRefused).size()));
  }
  if (!line.starts_with(kHand)) {
    throw StoreError(where + " answered the job-token request with something else (not ddprun?)");
  }
  Credentials::Decoded handed = credentials.decode(line.substr(std::string(kHand).size()));
  if (handed.uid != ::geteuid()) {
    throw StoreError(where + " handed out a token made by user " + std::to_string(handed.uid) +
                     ", not this job's user");
  }
  if (handed.payload.empty()) throw StoreError(where + " handed out an empty job token");
  return handed.payload;
}

}  // namespace ddprun::net::token_handout
