#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

// ddprun_store_bench's first two tables: requests per second from a few connections,
// and many connections held at once.
namespace ddprun::bench {

struct Measurement {
  double ops_per_second = 0;
  double server_us_per_op = 0;  // busy time of the server's core per operation
};

// One request kind: its bytes (1.13 numbering, so both servers understand it) and
// the size of its reply.
struct OpKind {
  const char* name;
  std::string request;
  size_t reply_size;
};

// The kinds measured: set (with a round trip after it), get, add and wait.
std::vector<OpKind> op_kinds();

// Operations per second from `clients` connections driven by one thread on the
// client core. Each connection sends `depth` requests at once and then reads their
// replies: with depth 1 this is exactly a synchronous client; a larger depth makes
// the client cheap enough that the server, not the client, sets the pace.
Measurement throughput(int port, int clients, const OpKind& op, double seconds, int depth);

// Opens `n` connections from 8 threads, each answering one ADD; returns
// {connections per second, every answer correct}. Connections stay open until the end.
std::pair<double, bool> connections(int port, int n);

}  // namespace ddprun::bench
