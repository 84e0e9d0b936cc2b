#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace ddprun::test {

namespace detail {
// What the test's process made; removed when it ends (each test runs in a process of
// its own), whatever the test's outcome.
inline std::vector<std::string>& scratch_made() {
  static struct Made {
    std::vector<std::string> paths;
    ~Made() {
      std::error_code ignored;
      for (const auto& p : paths) std::filesystem::remove_all(p, ignored);
    }
  } made;
  return made.paths;
}

inline std::string scratch_template(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "XXXXXX";
}
}  // namespace detail

/// A fresh directory under $TMPDIR (or /tmp), its name `prefix` and six random
/// characters, removed with everything in it when the test's process ends.
inline std::string scratch_dir(const std::string& prefix) {
  std::string path = detail::scratch_template(prefix);
  if (::mkdtemp(path.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  detail::scratch_made().push_back(path);
  return path;
}

/// A fresh empty file, named and removed alike.
inline std::string scratch_file(const std::string& prefix) {
  std::string path = detail::scratch_template(prefix);
  int fd = ::mkstemp(path.data());
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  ::close(fd);
  detail::scratch_made().push_back(path);
  return path;
}

}  // namespace ddprun::test
