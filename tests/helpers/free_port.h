#pragma once

namespace ddprun::test {

/// A TCP port that was free on 127.0.0.1 a moment ago (for a node 0 or endpoint to bind).
int free_port();

}  // namespace ddprun::test
