#include "agent/log_dir.h"

#include <linux/magic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "common/error.h"

namespace ddprun::agent {
namespace {

constexpr const char* kMemoryDir = "/dev/shm";
constexpr size_t kMostRemembered = 512;  // directories made, for the quick removal

std::string make_temp_dir(const std::string& tmpl) {
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) throw SystemError("cannot create " + tmpl, errno);
  return std::string(buf.data());
}

void make_dirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) throw SystemError("cannot create log directory " + path, ec.value());
}

// Where a temporary log directory goes (see LogDir).
std::string temp_root(bool small) {
  const char* tmp = std::getenv("TMPDIR");
  if (tmp && *tmp) return tmp;
  struct statfs fs {};
  if (small && ::statfs(kMemoryDir, &fs) == 0 && fs.f_type == TMPFS_MAGIC &&
      ::access(kMemoryDir, W_OK | X_OK) == 0) {
    return kMemoryDir;
  }
  return "/tmp";
}

}  // namespace

LogDir::LogDir(const std::string& base, const std::string& run_id, bool small) {
  if (base.empty()) {
    base_ = make_temp_dir(temp_root(small) + "/ddprun_XXXXXX");
    temporary_ = true;
  } else {
    base_ = base;
    make_dirs(base_);
  }
  std::string safe_id = run_id;
  std::replace(safe_id.begin(), safe_id.end(), '/', '_');
  run_dir_ = make_temp_dir(base_ + "/" + safe_id + "_XXXXXX");
}

// One mkdir where it does (its parent is there); anything odd takes the general way,
// which names the path that fails.
void LogDir::make_one(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0777) == 0) {
    if (!made_too_many_) made_.push_back(dir);
  } else if (errno != EEXIST) {
    make_dirs(dir);
  }
}

std::string LogDir::attempt_dir(int attempt) {
  std::string dir = run_dir_ + "/attempt_" + std::to_string(attempt);
  make_one(dir);
  return dir;
}

std::string LogDir::worker_dir(int attempt, int local_rank) {
  std::string dir = attempt_dir(attempt) + "/" + std::to_string(local_rank);
  make_one(dir);
  if (made_.size() > kMostRemembered) {
    made_.clear();
    made_too_many_ = true;
  }
  return dir;
}

bool LogDir::remove_made_while_empty() {
  if (made_too_many_) return false;
  for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
    if (::rmdir(it->c_str()) != 0 && errno != ENOENT) return false;
  }
  made_.clear();
  return ::rmdir(run_dir_.c_str()) == 0 && ::rmdir(base_.c_str()) == 0;
}

void LogDir::remove_if_temporary_and_unread() {
  if (!temporary_) return;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(base_, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    // A worker's progress page is ddprun's own, written whether anything happened or not.
    if (it->path().filename() == kProgressPage) continue;
    std::error_code size_ec;
    if (it->is_regular_file(size_ec) && it->file_size(size_ec) > 0 && !size_ec) {
      temporary_ = false;
      return;
    }
  }
  if (ec) return;  // not read to the end: keep it
  remove_if_temporary();
}

void LogDir::remove_if_temporary() {
  if (!temporary_) return;
  temporary_ = false;
  // Usually nothing was written: one rmdir per directory. Else the general way.
  if (remove_made_while_empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(base_, ec);
}

}  // namespace ddprun::agent
