#include "launcher/python_files.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <sstream>
#include <system_error>

#include <spdlog/spdlog.h>

#include "common/build_info.h"

namespace ddprun::launcher {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTracking = "ddprun_tracking.py";
constexpr std::string_view kHook = "sitecustomize.py";

bool has(const fs::path& dir, std::string_view file) {
  std::error_code ec;
  return fs::exists(dir / file, ec);
}

// $TMPDIR/ddprun-<uid>: made 0700, and used only if it is a directory of ours that
// nobody else may write (another user could have made it first to feed us files).
fs::path private_dir() {
  const char* tmp = std::getenv("TMPDIR");
  fs::path dir = fs::path(tmp && *tmp ? tmp : "/tmp") / ("ddprun-" + std::to_string(::getuid()));
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw std::system_error(errno, std::generic_category(), "cannot make " + dir.string());
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid() ||
      (st.st_mode & 022) != 0) {
    throw std::runtime_error(dir.string() + " is not a directory only this user may write");
  }
  return dir;
}

void write_file(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

// The built-in copies, written once: a fresh directory renamed into place, so that
// concurrent agents never see half a file; its name changes with the content.
fs::path extract() {
  std::string_view tracking = python_file(kTracking);
  std::string_view hook = python_file(kHook);
  std::ostringstream name;
  name << "python-" << std::hex << std::setw(16) << std::setfill('0')
       << (std::hash<std::string_view>{}(tracking) ^
           (std::hash<std::string_view>{}(hook) * 1099511628211ULL));
  fs::path dir = private_dir();
  fs::path final_dir = dir / name.str();
  if (has(final_dir, kTracking) && has(final_dir / "hook", kHook)) return final_dir;
  std::string pattern = (dir / "new.XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "cannot make a directory in " + dir.string());
  }
  fs::path fresh = pattern;
  try {
    write_file(fresh / kTracking, tracking);
    fs::create_directory(fresh / "hook");
    write_file(fresh / "hook" / kHook, hook);
    fs::rename(fresh, final_dir);
  } catch (const std::exception&) {
    std::error_code ec;
    fs::remove_all(fresh, ec);
    if (has(final_dir, kTracking)) return final_dir;  // another agent was first
    throw;
  }
  return final_dir;
}

}  // namespace

PythonDirs python_dirs() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path().parent_path() / "share" / "ddprun" / "python";
    if (has(installed, kTracking) && has(installed / "hook", kHook)) {
      return {installed.string(), (installed / "hook").string()};
    }
  }
  // A portable binary takes its own copies: the tree it was built from is no part of it.
  fs::path source = DDPRUN_SOURCE_DIR;
  if (!portable_build() && has(source / "tracking" / "python", kTracking) &&
      has(source / "agent" / "python", kHook)) {
    return {(source / "tracking" / "python").string(), (source / "agent" / "python").string()};
  }
  try {
    fs::path dir = extract();
    return {dir.string(), (dir / "hook").string()};
  } catch (const std::exception& e) {
    spdlog::warn("cannot write ddprun's Python files for the workers ({}): they cannot import "
                 "ddprun_tracking, and hung Python workers' stacks cannot be taken",
                 e.what());
    return {};
  }
}

}  // namespace ddprun::launcher
