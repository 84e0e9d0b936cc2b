#pragma once

#include <string>
#include <vector>

namespace ddprun::agent {

/// One frame of a captured stack. Python frames have a file and line; native frames
/// often only a function name (or none, without symbols).
struct Frame {
  std::string function;
  std::string file;
  int line = 0;
  std::string code;  // the source line, when the file could be read
};

/// One thread's stack, innermost frame first.
struct ThreadStack {
  std::string id;  // as the dump names it
  std::vector<Frame> frames;
};

/// Reads Python's faulthandler dump ("Thread 0x... (most recent call first):" then
/// `  File "f", line N in fn` lines). Text it does not understand is skipped.
std::vector<ThreadStack> parse_python_stacks(const std::string& text);

/// Reads eu-stack's ("TID n:" then "#0  0xADDR fn") or gdb's ("Thread n (...):" then
/// "#0  0xADDR in fn (...) from lib") output.
std::vector<ThreadStack> parse_native_stacks(const std::string& text);

/// The thread that runs the program: the Python thread whose outermost frame is the
/// script's (`<module>`, runpy's), else the first one. Null when there is none.
const ThreadStack* main_thread(const std::vector<ThreadStack>& threads);

/// Fills each Python frame's `code` with its source line, where the file is readable.
void add_source_lines(std::vector<ThreadStack>& threads);

}  // namespace ddprun::agent
