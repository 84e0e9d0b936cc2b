// Drives a TCPStore server (ddprun's or PyTorch's) with ddprun's C++ client through
// every operation of the chosen numbering and checks the answers.
// Usage: ddprun_store_probe HOST PORT v113|v2. Keys carry the leading '/' that torch's
// client puts on the wire, so Python sees them as "/probe/...": leaves "/probe/set" =
// "from c++" and "/probe/counter" = 42 for the caller to verify. With PROBE_WAIT_FOR set,
// also waits for that wire key to hold "from python". Exits 0 when all checks pass.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "store/tcpstore/tcp_store_client.h"

using namespace ddprun;
using namespace std::chrono_literals;

namespace {

int failures = 0;

template <typename A, typename B>
void expect(const char* what, const A& got, const B& want) {
  if (!(got == want)) {
    std::fprintf(stderr, "probe: %s: unexpected answer\n", what);
    ++failures;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return 64;
  store::TcpStoreClient::Options o;
  o.timeout = 10s;
  o.numbering =
      std::string(argv[3]) == "v2" ? store::tcpstore::Numbering::kV2 : store::tcpstore::Numbering::kV113;
  try {
    store::TcpStoreClient c(argv[1], std::atoi(argv[2]), o);
    c.set("/probe/set", "from c++");
    expect("get", c.get("/probe/set", 5s), std::string("from c++"));
    expect("add", c.add("/probe/counter", 40), 40);
    expect("add", c.add("/probe/counter", 2), 42);
    expect("compare_set new", c.compare_set("/probe/cas", "", "one"), std::string("one"));
    expect("compare_set wrong", c.compare_set("/probe/cas", "zzz", "two"), std::string("one"));
    expect("compare_set swap", c.compare_set("/probe/cas", "one", "two"), std::string("two"));
    expect("check", c.check({"/probe/set", "/probe/cas"}), true);
    expect("check missing", c.check({"/probe/none"}), false);
    c.set("/probe/tmp", "x");
    expect("delete", c.delete_key("/probe/tmp"), true);
    expect("delete again", c.delete_key("/probe/tmp"), false);
    bool timed_out = false;
    try {
      c.wait({"/probe/never"}, 200ms);
    } catch (const ddprun::TimeoutError&) {
      timed_out = true;
    }
    expect("wait timeout", timed_out, true);
    expect("usable after timeout", c.add("/probe/counter", 0), 42);
    if (std::getenv("PROBE_WAIT_FOR")) {
      expect("wait for peer", c.get(std::getenv("PROBE_WAIT_FOR"), 10s),
             std::string("from python"));
    }
    std::printf("num_keys %lld\n", static_cast<long long>(c.num_keys()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "probe: %s\n", e.what());
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
