#include "agent/device_count.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ddprun::agent
