#include "net/job_token.h"

#include <sodium.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace ddprun::net::job_token {
namespace {

using Clock = std::chrono::steady_clock;

std::string hex(const unsigned char* data, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 15];
  }
  return out;
}

// One line, without its '\n', read a byte at a time: nothing after it is consumed.
std::string read_line(Socket& socket, const std::string& where, Socket::Deadline deadline) {
  std::string line;
  while (line.size() <= kMaxLine) {
    char c = 0;
    socket.recv_exact(&c, 1, deadline);
    if (c == '\n') return line;
    line += c;
  }
  throw StoreError(where + " sent a handshake line longer than " + std::to_string(kMaxLine) +
                   " bytes");
}

}  // namespace

std::string new_challenge() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    ssize_t n = ::getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0 && errno != EINTR) throw SystemError("getrandom", errno);
    if (n > 0) got += static_cast<size_t>(n);
  }
  return hex(bytes, sizeof(bytes));
}

std::string proof(const std::string& token, const std::string& challenge) {
  // Once per process (libsodium asks for it before any use); it is thread-safe.
  static const int initialized = sodium_init();
  if (initialized < 0) throw Error("libsodium could not be initialized for the job token");
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char*>(token.data()),
                              token.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(challenge.data()),
                                challenge.size());
  unsigned char mac[crypto_auth_hmacsha256_BYTES];
  crypto_auth_hmacsha256_final(&state, mac);
  return hex(mac, sizeof(mac));
}

bool proves(const std::string& token, const std::string& challenge, const std::string& answer) {
  std::string expected = proof(token, challenge);
  return answer.size() == expected.size() &&
         sodium_memcmp(answer.data(), expected.data(), expected.size()) == 0;
}

void answer_challenge(Socket& socket, const std::string& token, const std::string& where,
                      Socket::Deadline deadline) {
  send_hello(socket, deadline);
  send_proof(socket, token, where, deadline);
  read_verdict(socket, where, deadline);
}

void send_hello(Socket& socket, Socket::Deadline deadline) {
  std::string hello = kHello;
  socket.send_all(hello.data(), hello.size(), deadline);
}

void send_proof(Socket& socket, const std::string& token, const std::string& where,
                Socket::Deadline deadline) {
  std::string challenge;
  try {
    // A server that wants the token answers the hello at once; one that does not
    // takes it for the start of a request and never will.
    challenge =
        read_line(socket, where, std::min(deadline, Clock::now() + std::chrono::seconds(10)));
  } catch (const Error&) {  // silence, or closed on a hello it took for a bad request
    throw StoreError(where +
                     " sent no job-token challenge: it runs without a token (give "
                     "every node the same token) or is not ddprun's");
  }
  std::string prefix = kChallengePrefix;
  if (challenge.rfind(prefix, 0) != 0) {
    throw StoreError(where + " sent no job-token challenge: it is not ddprun's");
  }
  std::string answer = proof(token, challenge.substr(prefix.size())) + "\n";
  socket.send_all(answer.data(), answer.size(), deadline);
}

void read_verdict(Socket& socket, const std::string& where, Socket::Deadline deadline) {
  std::string verdict;
  try {
    verdict = read_line(socket, where, deadline);
  } catch (const StoreError&) {
    verdict.clear();
  }
  if (verdict != "ok") {
    throw StoreError(where +
                     " refused this node's job token: every node of a job needs the "
                     "same one (--rdzv_conf=token_file=PATH or DDPRUN_JOB_TOKEN)");
  }
}

std::string read_token_file(const std::string& source, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(source + "=" + path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  std::string token = text.str();
  size_t first = token.find_first_not_of(" \t\r\n");
  size_t last = token.find_last_not_of(" \t\r\n");
  if (first == std::string::npos) throw UsageError(source + "=" + path + ": the file is empty");
  return token.substr(first, last - first + 1);
}

std::string read_token_line(const std::string& source, int fd) {
  std::string line;
  char c = 0;
  while (line.size() < 4096) {
    ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == '\n') break;
    line += c;
  }
  if (line.empty()) throw UsageError(source + "=-: standard input holds no token line");
  return line;
}

}  // namespace ddprun::net::job_token
