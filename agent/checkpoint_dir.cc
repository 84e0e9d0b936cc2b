#include "agent/checkpoint_dir.h"

#include <sys/stat.h>

#include <filesystem>
#include <string_view>

namespace ddprun::agent {
namespace {

constexpr int kMaxDepth = 3;
constexpr int kMaxEntries = 10'000;

bool being_written(std::string_view name) {
  for (std::string_view suffix : {".tmp", ".partial", ".incomplete", "~"}) {
    if (name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix) return true;
  }
  return false;
}

}  // namespace

std::optional<int64_t> newest_checkpoint_us(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  std::optional<int64_t> newest;
  int seen = 0;
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (++seen > kMaxEntries) break;
    if (it.depth() >= kMaxDepth - 1) it.disable_recursion_pending();
    if (!it->is_regular_file(ec) || being_written(it->path().filename().string())) continue;
    struct stat st {};
    if (::stat(it->path().c_str(), &st) != 0) continue;
    int64_t us = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000 + st.st_mtim.tv_nsec / 1000;
    if (!newest || us > *newest) newest = us;
  }
  return newest;
}

}  // namespace ddprun::agent
