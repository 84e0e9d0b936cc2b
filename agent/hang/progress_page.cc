#include "agent/hang/progress_page.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "common/error.h"

namespace ddprun::agent {
namespace {

constexpr char kMagic[8] = {'D', 'D', 'P', 'R', 'P', 'G', '0', '1'};

template <typename T>
T load(const unsigned char* at) {
  T v;
  std::memcpy(&v, at, sizeof(v));
  return v;
}

}  // namespace

ProgressPage::ProgressPage(std::string path) : path_(std::move(path)) {
  int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw SystemError("cannot create the progress page " + path_, errno);
  unsigned char init[kSize] = {};
  std::memcpy(init, kMagic, sizeof(kMagic));
  int64_t no_step = std::numeric_limits<int64_t>::min();
  std::memcpy(init + 16, &no_step, sizeof(no_step));
  std::memcpy(init + 152, &no_step, sizeof(no_step));
  bool written = ::pwrite(fd, init, kSize, 0) == static_cast<ssize_t>(kSize);
  void* map = written ? ::mmap(nullptr, kSize, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
  int err = errno;
  ::close(fd);
  if (map == MAP_FAILED) throw SystemError("cannot map the progress page " + path_, err);
  map_ = static_cast<unsigned char*>(map);
}

ProgressPage::~ProgressPage() { ::munmap(map_, kSize); }

ProgressSample ProgressPage::read() const {
  // The worker writes while we read: copy once, then decode the copy.
  unsigned char copy[kSize];
  std::memcpy(copy, map_, kSize);
  ProgressSample s;
  s.beats = load<uint64_t>(copy + 8);
  auto step = load<int64_t>(copy + 16);
  if (step != std::numeric_limits<int64_t>::min()) s.step = step;
  s.timed = {load<uint64_t>(copy + 96), load<uint64_t>(copy + 104), load<uint64_t>(copy + 112)};
  s.marks.first_step_us = load<int64_t>(copy + 128);
  s.marks.last_step_us = load<int64_t>(copy + 136);
  s.marks.checkpoint_us = load<int64_t>(copy + 144);
  if (auto at = load<int64_t>(copy + 152); at != std::numeric_limits<int64_t>::min()) {
    s.marks.checkpoint_step = at;
  }
  auto section_ms = load<uint64_t>(copy + 24);
  s.in_section = section_ms != 0;
  if (s.in_section) {
    if (section_ms != std::numeric_limits<uint64_t>::max()) {
      s.section_timeout = std::chrono::milliseconds(static_cast<int64_t>(section_ms));
    }
    const unsigned char* name = copy + 32;
    const unsigned char* end = name + 64;
    s.section.assign(name, std::find(name, end, 0));
  }
  return s;
}

}  // namespace ddprun::agent
