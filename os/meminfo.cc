#include "os/meminfo.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace ddprun::os {
namespace {

// The value of `key` ("MemTotal:") in kB, as a byte count; nullopt when absent.
std::optional<uint64_t> field(std::string_view text, std::string_view key) {
  size_t at = text.find(key);
  if (at == std::string_view::npos || (at > 0 && text[at - 1] != '\n')) return std::nullopt;
  const char* begin = text.data() + at + key.size();
  char* end = nullptr;
  unsigned long long kib = std::strtoull(begin, &end, 10);
  if (end == begin) return std::nullopt;
  return static_cast<uint64_t>(kib) * 1024;
}

}  // namespace

std::optional<MemInfo> read_meminfo() {
  int fd = ::open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[4096];  // MemTotal and MemAvailable are in its first lines
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  std::string_view text(buf, static_cast<size_t>(n));
  auto total = field(text, "MemTotal:");
  auto available = field(text, "MemAvailable:");
  if (!total || !available) return std::nullopt;
  return MemInfo{*total, *available};
}

}  // namespace ddprun::os
