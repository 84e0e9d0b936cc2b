#pragma once

#include <boost/asio/io_context.hpp>

#include "agent/hang/process_inspector.h"
#include "common/clock.h"

namespace ddprun::agent {

class ProcessLauncher;

/// Reads /proc, signals Python workers whose dump handler is installed, runs eu-stack
/// (or gdb) through the launcher for native stacks and asks torch workers' NCCL flight
/// recorders for a dump, all at once.
class PosixProcessInspector : public ProcessInspector {
 public:
  PosixProcessInspector(boost::asio::io_context& io, ProcessLauncher& launcher, Clock& clock);
  ~PosixProcessInspector() override;

  ProcessLook look(pid_t pid) override;
  void capture(std::vector<StackRequest> requests, OnStacks done) override;

 private:
  struct Capture;
  void capture_python(const std::shared_ptr<Capture>& c, size_t i);
  void capture_native(const std::shared_ptr<Capture>& c, size_t i);
  void poll_dump(const std::shared_ptr<Capture>& c, size_t i, int64_t last_size, int stable,
                 int polls);
  void capture_flight_record(const std::shared_ptr<Capture>& c, size_t i);
  void poll_flight_record(const std::shared_ptr<Capture>& c, size_t i, int polls);

  boost::asio::io_context& io_;
  ProcessLauncher& launcher_;
  Clock& clock_;
};

}  // namespace ddprun::agent
