#include "common/build_info.h"

namespace ddprun {

bool portable_build() {
#ifdef DDPRUN_PORTABLE
  return true;
#else
  return false;
#endif
}

}  // namespace ddprun
