#include "os/kernel_release.h"

#include <sys/utsname.h>

#include <charconv>
#include <utility>

namespace ddprun::os {

bool release_at_least(std::string_view release, int major, int minor) {
  int have_major = 0;
  int have_minor = 0;
  const char* end = release.data() + release.size();
  auto [after_major, e1] = std::from_chars(release.data(), end, have_major);
  if (e1 != std::errc{} || after_major == end || *after_major != '.') return false;
  auto [after_minor, e2] = std::from_chars(after_major + 1, end, have_minor);
  if (e2 != std::errc{}) return false;
  return std::pair(have_major, have_minor) >= std::pair(major, minor);
}

bool kernel_at_least(int major, int minor) {
  utsname name{};
  return ::uname(&name) == 0 && release_at_least(name.release, major, minor);
}

}  // namespace ddprun::os
