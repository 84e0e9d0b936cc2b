#include "common/number_ranges.h"

namespace ddprun {

std::string number_ranges(const std::vector<int>& ascending, bool pairs_as_ranges) {
  std::string out;
  for (size_t i = 0; i < ascending.size();) {
    size_t j = i;
    while (j + 1 < ascending.size() && ascending[j + 1] == ascending[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ascending[i]);
    if (j > i)
      out.append(j > i + 1 || pairs_as_ranges ? "-" : ",").append(std::to_string(ascending[j]));
    i = j + 1;
  }
  return out;
}

}  // namespace ddprun
