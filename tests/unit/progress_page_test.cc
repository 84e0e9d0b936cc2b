// The progress page as the C++ tracking client writes it and the agent reads it.
#include "agent/hang/progress_page.h"

#include <stdlib.h>

#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "tracking/ddprun_tracking.hpp"

namespace ddprun::agent {
namespace {

TEST(ProgressPage, WhatTheClientWritesTheAgentReads) {
  auto dir = std::filesystem::temp_directory_path() / ("ddprun_page_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  ProgressPage page((dir / "progress").string());
  ProgressSample fresh = page.read();
  EXPECT_EQ(fresh.beats, 0u);
  EXPECT_FALSE(fresh.step);
  EXPECT_FALSE(fresh.in_section);

  // The client maps the page named in its environment at its first call.
  ::setenv("DDPRUN_PROGRESS_FILE", page.path().c_str(), 1);
  track::heartbeat();
  track::log({{"loss", 0.5}}, 7);
  ProgressSample s = page.read();
  EXPECT_EQ(s.beats, 2u);
  EXPECT_EQ(s.step, 7);
  {
    track::Section outer("checkpoint", std::chrono::seconds(90));
    s = page.read();
    EXPECT_TRUE(s.in_section);
    EXPECT_EQ(s.section, "checkpoint");
    EXPECT_EQ(s.section_timeout, std::chrono::seconds(90));
    {
      track::Section inner("upload");
      s = page.read();
      EXPECT_EQ(s.section, "upload");
      EXPECT_FALSE(s.section_timeout);  // no limit
    }
    EXPECT_EQ(page.read().section, "checkpoint");
  }
  s = page.read();
  EXPECT_FALSE(s.in_section);
  EXPECT_EQ(s.beats, 6u);

  // Steps: the first marks a start; each later one counts its time, less its waits.
  EXPECT_EQ(s.timed.steps, 0u);
  track::step();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  {
    track::Waiting w;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  track::step(8);
  s = page.read();
  EXPECT_EQ(s.step, 8);
  EXPECT_EQ(s.timed.steps, 1u);
  EXPECT_GE(s.timed.step_ns, 22'000'000u);
  EXPECT_GE(s.timed.own_ns, 2'000'000u);
  EXPECT_LE(s.timed.own_ns + 20'000'000u, s.timed.step_ns);
  ::unsetenv("DDPRUN_PROGRESS_FILE");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddprun::agent
