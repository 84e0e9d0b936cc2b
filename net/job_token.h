#pragma once

#include <string>

#include "net/socket.h"

namespace ddprun::net {

/// The secret the agents of one job share (--rdzv_conf=token_file=PATH or
/// DDPRUN_JOB_TOKEN). On a channel that requires it the client says "DDPRUN-HELLO1\n";
/// the server sends "DDPRUN-AUTH1 <challenge>\n" (32 random bytes, hex); the client
/// answers "<HMAC-SHA256(token, challenge), hex>\n"; the server answers "ok\n" and the
/// channel's own protocol begins, or closes. The token itself never crosses the network.
/// The hello's first byte is no TCPStore request type: a store that agents and PyTorch
/// clients share tells them apart by it without reading it (a static job's store).
namespace job_token {

constexpr const char* kHello = "DDPRUN-HELLO1\n";
constexpr const char* kChallengePrefix = "DDPRUN-AUTH1 ";
/// The longest line either side may send in the handshake.
constexpr size_t kMaxLine = 128;

/// A fresh challenge: 32 random bytes from the kernel, in hex.
std::string new_challenge();
/// HMAC-SHA256(token, challenge) in lowercase hex.
std::string proof(const std::string& token, const std::string& challenge);
/// Whether `answer` proves `token` for `challenge` (compared in constant time).
bool proves(const std::string& token, const std::string& challenge, const std::string& answer);

/// The client's side over a connected socket: says hello, reads the challenge, answers
/// it, reads "ok". Throws StoreError naming `where` when the server refuses or speaks no
/// challenge (a server without a token, or not ddprun's), TimeoutError past `deadline`.
void answer_challenge(Socket& socket, const std::string& token, const std::string& where,
                      Socket::Deadline deadline);
/// answer_challenge() in three steps, for an event loop that waits in between until
/// the socket is readable (the server answers each at once): the hello; the challenge
/// read and answered; the verdict read.
void send_hello(Socket& socket, Socket::Deadline deadline);
void send_proof(Socket& socket, const std::string& token, const std::string& where,
                Socket::Deadline deadline);
void read_verdict(Socket& socket, const std::string& where, Socket::Deadline deadline);

/// Reads a token file: its content without surrounding whitespace. Throws UsageError
/// naming `source` when the file cannot be read or holds nothing.
std::string read_token_file(const std::string& source, const std::string& path);
/// Reads the first line of `fd` (token_file=-: how the controller of --hosts hands it
/// over, never on a command line), a byte at a time so that nothing after it is taken.
/// Throws UsageError naming `source` when there is no such line.
std::string read_token_line(const std::string& source, int fd);

}  // namespace job_token
}  // namespace ddprun::net
