#pragma once

#include <string>

namespace ddprun {

/// A duration as every message of ddprun writes it: tenths of a second ("12.3 s").
std::string seconds_text(double seconds);

}  // namespace ddprun
