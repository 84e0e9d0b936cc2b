// Where a temporary log directory goes: the user's $TMPDIR, else memory when only
// error files can go there, else /tmp.
#include "agent/log_dir.h"

#include <gtest/gtest.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "tests/helpers/scratch.h"

namespace ddprun::agent {
namespace {

// Sets (or unsets) TMPDIR for one test, as it was afterwards.
class TmpdirAs {
 public:
  explicit TmpdirAs(const char* value) {
    if (const char* old = std::getenv("TMPDIR")) old_ = old;
    if (value)
      ::setenv("TMPDIR", value, 1);
    else
      ::unsetenv("TMPDIR");
  }
  ~TmpdirAs() {
    if (old_)
      ::setenv("TMPDIR", old_->c_str(), 1);
    else
      ::unsetenv("TMPDIR");
  }

 private:
  std::optional<std::string> old_;
};

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// Where /dev/shm is no writable tmpfs there is no memory to put it in: then /tmp.
TEST(LogDir, ATemporaryOneForErrorFilesOnlyIsInMemoryWhereThereIsSome) {
  struct statfs fs {};
  bool memory = ::statfs("/dev/shm", &fs) == 0 && fs.f_type == TMPFS_MAGIC &&
                ::access("/dev/shm", W_OK | X_OK) == 0;
  TmpdirAs unset(nullptr);
  LogDir small("", "job", true);
  std::string expected = memory ? "/dev/shm/ddprun_" : "/tmp/ddprun_";
  EXPECT_TRUE(starts_with(small.run_dir(), expected)) << small.run_dir();
  std::string worker = small.worker_dir(0, 1);
  EXPECT_TRUE(std::filesystem::is_directory(worker)) << worker;
  small.remove_if_temporary();
  EXPECT_FALSE(std::filesystem::exists(worker));
}

// Logs, hang reports and dumps may be large: they go to the disk.
TEST(LogDir, ATemporaryOneForLargerFilesIsOnDisk) {
  TmpdirAs unset(nullptr);
  LogDir large("", "job", false);
  EXPECT_TRUE(starts_with(large.run_dir(), "/tmp/ddprun_")) << large.run_dir();
  large.remove_if_temporary();
}

TEST(LogDir, TheUsersTmpdirComesFirst) {
  std::string tmp = test::scratch_dir("ddprun_logdir_");
  TmpdirAs set(tmp.c_str());
  LogDir small("", "job", true);
  EXPECT_TRUE(starts_with(small.run_dir(), tmp + "/ddprun_")) << small.run_dir();
  small.remove_if_temporary();
  std::filesystem::remove_all(tmp);
}

// A temporary one goes whole at the end, empty (one rmdir per directory) or holding
// what workers wrote; one the user named stays.
TEST(LogDir, ATemporaryOneGoesWholeWhateverItHolds) {
  std::string tmp = test::scratch_dir("ddprun_logdir_");
  TmpdirAs set(tmp.c_str());
  for (bool written : {false, true}) {
    LogDir dir("", "job", true);
    std::string base = std::filesystem::path(dir.run_dir()).parent_path();
    for (int attempt = 0; attempt < 2; ++attempt) {
      for (int rank = 0; rank < 3; ++rank) {
        std::string worker = dir.worker_dir(attempt, rank);
        ASSERT_TRUE(std::filesystem::is_directory(worker)) << worker;
        EXPECT_EQ(dir.worker_dir(attempt, rank), worker) << "asked again: the same";
      }
    }
    if (written) std::ofstream(dir.worker_dir(1, 2) + "/error.json") << "{}";
    dir.remove_if_temporary();
    EXPECT_FALSE(std::filesystem::exists(base)) << base << (written ? " with a file" : "");
  }
  {
    LogDir many("", "job", true);  // more directories than it remembers
    std::string base = std::filesystem::path(many.run_dir()).parent_path();
    for (int attempt = 0; attempt < 300; ++attempt) many.worker_dir(attempt, 0);
    many.remove_if_temporary();
    EXPECT_FALSE(std::filesystem::exists(base)) << base << " after many attempts";
  }
  std::string named = tmp + "/named";
  {
    LogDir dir(named, "job");
    dir.worker_dir(0, 0);
    dir.remove_if_temporary();
  }
  EXPECT_TRUE(std::filesystem::is_directory(named));
  std::filesystem::remove_all(tmp);
}

}  // namespace
}  // namespace ddprun::agent
