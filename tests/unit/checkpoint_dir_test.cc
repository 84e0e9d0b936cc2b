// --checkpoint_dir: the newest completed checkpoint file's time.
#include "agent/checkpoint_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace ddprun::agent {
namespace {

namespace fs = std::filesystem;

void file_at(const fs::path& path, int64_t seconds) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << "x";
  struct timespec times[2] = {{static_cast<time_t>(seconds), 0}, {static_cast<time_t>(seconds), 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST(CheckpointDir, TheNewestCompletedFileCountsAndFilesBeingWrittenDoNot) {
  fs::path dir = fs::temp_directory_path() / ("ddprun_ckpt_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  EXPECT_FALSE(newest_checkpoint_us(dir.string()));  // none yet
  fs::create_directories(dir);
  EXPECT_FALSE(newest_checkpoint_us(dir.string()));
  file_at(dir / "step_10.pt", 1'000);
  file_at(dir / "step_20" / ".metadata", 2'000);  // torch.distributed.checkpoint's last file
  file_at(dir / "step_30.pt.tmp", 3'000);
  file_at(dir / "step_30.partial", 3'000);
  EXPECT_EQ(newest_checkpoint_us(dir.string()), 2'000'000'000);
  file_at(dir / "a" / "b" / "c" / "d" / "deep.pt", 4'000);  // below three levels
  EXPECT_EQ(newest_checkpoint_us(dir.string()), 2'000'000'000);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ddprun::agent
