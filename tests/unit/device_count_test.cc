#include "agent/device_count.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "os/nvml.h"
#include "tests/helpers/scratch.h"

namespace ddprun::agent {
namespace {

TEST(CudaVisibleDevices, FollowsCudaRules) {
  EXPECT_EQ(apply_cuda_visible_devices(std::nullopt, 4), 4);
  EXPECT_EQ(apply_cuda_visible_devices("", 4), 0);
  EXPECT_EQ(apply_cuda_visible_devices("0,2", 4), 2);
  EXPECT_EQ(apply_cuda_visible_devices("1,7,2", 4), 1) << "stops at the first invalid entry";
  EXPECT_EQ(apply_cuda_visible_devices("-1", 4), 0);
  EXPECT_EQ(apply_cuda_visible_devices("0,0", 4), 1) << "a repeated device ends the list";
  EXPECT_EQ(apply_cuda_visible_devices("GPU-abc,GPU-def", 2), 2);
  EXPECT_EQ(apply_cuda_visible_devices("0,1", 0), 0);
}

TEST(CountCpus, AtLeastOne) { EXPECT_GE(count_cpus(), 1); }

// NVML is looked for only where a driver is: any of its three marks will do.
TEST(NvidiaDriver, IsPresentWhereItsDeviceOrProcEntryIs) {
  std::string root = test::scratch_dir("ddprun_driver_");
  EXPECT_FALSE(os::driver_present(root));
  for (const char* mark : {"dev/nvidiactl", "proc/driver/nvidia", "dev/dxg"}) {
    std::string path = root + "/" + mark;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream{path};
    EXPECT_TRUE(os::driver_present(root)) << mark;
    EXPECT_TRUE(os::driver_present(root + "/")) << mark;
    std::filesystem::remove(path);
  }
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace ddprun::agent
