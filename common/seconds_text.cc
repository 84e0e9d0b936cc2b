#include "common/seconds_text.h"

#include <cstdio>

namespace ddprun {

std::string seconds_text(double seconds) {
  char text[48];
  std::snprintf(text, sizeof(text), "%.1f s", seconds);
  return text;
}

}  // namespace ddprun
