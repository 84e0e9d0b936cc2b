#pragma once

#include <map>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "agent/hang/process_inspector.h"

namespace ddprun::testing {

/// Looks at fake processes: every one is alive in the state the test gives it
/// (`states`, default 'S'), and a capture answers on the loop with a Python dump that
/// names the process and the flight record the test gives it (`flight_records`), and
/// records what it was asked and when (`on_capture`); with `hold`, it answers when the
/// test says.
class FakeProcessInspector : public agent::ProcessInspector {
 public:
  explicit FakeProcessInspector(boost::asio::io_context& io) : io_(io) {}

  agent::ProcessLook look(pid_t pid) override {
    auto it = states.find(pid);
    return {true, it == states.end() ? 'S' : it->second, std::chrono::milliseconds(0),
            it != states.end() && it->second == 'D' ? "fuse_wait" : ""};
  }

  void capture(std::vector<agent::StackRequest> requests, OnStacks done) override {
    captures.push_back(requests);
    if (on_capture) on_capture(requests);
    std::vector<agent::CapturedStacks> out;
    for (const auto& r : requests) {
      auto record = flight_records.find(r.pid);
      out.push_back({"Current thread 0x1 (most recent call first):\n  File \"/job/pid" +
                         std::to_string(r.pid) + ".py\", line 1 in <module>\n",
                     native_stack, "",
                     record == flight_records.end() || r.flight_recorder.pipe.empty()
                         ? agent::FlightRecord{}
                         : record->second});
    }
    if (hold) {  // a capture that takes long (a flight recorder's dump, a stuck tool)
      held.push_back([done = std::move(done), out] { done(out); });
      return;
    }
    boost::asio::post(io_, [done = std::move(done), out] { done(out); });
  }

  std::map<pid_t, char> states;
  std::string native_stack;  // every worker's
  std::map<pid_t, agent::FlightRecord> flight_records;
  std::vector<std::vector<agent::StackRequest>> captures;
  std::function<void(const std::vector<agent::StackRequest>&)> on_capture;
  bool hold = false;                          // captures answer only when the test calls held
  std::vector<std::function<void()>> held;

 private:
  boost::asio::io_context& io_;
};

}  // namespace ddprun::testing
