#pragma once

namespace ddprun::test {

/// A TCP port that was free on 127.0.0.1 a moment ago (for a node 0 or endpoint to bind).
int free_port();

/// A socket listening on 127.0.0.1 at a port the kernel picked, for a test's own fake
/// peer (it accepts into its backlog whether or not the test ever calls accept): the
/// descriptor, with `port` set; -1 on failure.
int listen_on_loopback(int& port);

}  // namespace ddprun::test
