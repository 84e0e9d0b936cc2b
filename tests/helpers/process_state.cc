#include "tests/helpers/process_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace ddprun::test {
namespace {

// The thread's state letter from its /proc stat (with read(2): a thread that exits
// meanwhile ends the text instead of throwing); 0 where there is none.
char state_of(const std::string& stat_path) {
  std::string text;
  int fd = ::open(stat_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) text.append(buf, static_cast<size_t>(n));
  ::close(fd);
  size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() ? text[paren + 2] : 0;
}

}  // namespace

bool process_stopped(pid_t pid) {
  std::error_code ec;
  int threads = 0;
  for (const auto& task : std::filesystem::directory_iterator(
           "/proc/" + std::to_string(pid) + "/task", ec)) {
    if (state_of(task.path().string() + "/stat") != 'T') return false;
    ++threads;
  }
  return threads > 0;
}

}  // namespace ddprun::test
