#include "agent/hang/stack_text.h"

#include <fstream>
#include <map>
#include <sstream>

#include "common/value_parsers.h"

namespace ddprun::agent {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// `  File "/x/train.py", line 42 in load_batch`
bool parse_python_frame(const std::string& line, Frame& out) {
  std::string t = trim_text(line);
  if (!starts_with(t, "File \"")) return false;
  size_t close = t.find("\", line ", 6);
  if (close == std::string::npos) return false;
  out.file = t.substr(6, close - 6);
  size_t num = close + 8;
  size_t in = t.find(" in ", num);
  if (in == std::string::npos) return false;
  if (!to_int(t.substr(num, in - num), out.line)) out.line = 0;
  out.function = t.substr(in + 4);
  return true;
}

// `#3  0x000056045ea434af main` (eu-stack) or `#3  0x0000... in main () from /lib/x`
// or `#0  main () at x.c:3` (gdb).
bool parse_native_frame(const std::string& line, Frame& out) {
  std::string t = trim_text(line);
  if (t.size() < 2 || t[0] != '#') return false;
  std::istringstream in(t);
  std::string index, word;
  in >> index;
  if (!(in >> word)) return true;  // a frame with nothing known
  if (starts_with(word, "0x")) {
    if (!(in >> word)) return true;
  }
  if (word == "in" && !(in >> word)) return true;
  size_t at = word.find('@');  // eu-stack's symbol versions: clock_nanosleep@GLIBC_2.2.5
  out.function = word.substr(0, at);
  return true;
}

}  // namespace

std::vector<ThreadStack> parse_python_stacks(const std::string& text) {
  std::vector<ThreadStack> threads;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("(most recent call first):") != std::string::npos) {
      std::string head = trim_text(line.substr(0, line.find(" (most recent")));
      threads.push_back({head, {}});
      continue;
    }
    Frame f;
    if (!threads.empty() && parse_python_frame(line, f)) threads.back().frames.push_back(f);
  }
  return threads;
}

std::vector<ThreadStack> parse_native_stacks(const std::string& text) {
  std::vector<ThreadStack> threads;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (starts_with(line, "TID ") || starts_with(line, "Thread ")) {
      std::string head = line.substr(0, line.find(':'));
      threads.push_back({head, {}});
      continue;
    }
    Frame f;
    if (!threads.empty() && parse_native_frame(line, f)) threads.back().frames.push_back(f);
  }
  return threads;
}

const ThreadStack* main_thread(const std::vector<ThreadStack>& threads) {
  for (const auto& t : threads) {
    if (t.frames.empty()) continue;
    const std::string& outer = t.frames.back().function;
    if (outer == "<module>" || outer == "_run_module_as_main") return &t;
  }
  return threads.empty() ? nullptr : &threads.front();
}

void add_source_lines(std::vector<ThreadStack>& threads) {
  std::map<std::string, std::vector<std::string>> files;
  for (auto& t : threads) {
    for (auto& f : t.frames) {
      if (f.file.empty() || f.line <= 0) continue;
      auto it = files.find(f.file);
      if (it == files.end()) {
        std::vector<std::string> lines;
        std::ifstream src(f.file);
        for (std::string l; std::getline(src, l);) lines.push_back(l);
        it = files.emplace(f.file, std::move(lines)).first;
      }
      if (static_cast<size_t>(f.line) <= it->second.size()) {
        f.code = trim_text(it->second[static_cast<size_t>(f.line) - 1]);
      }
    }
  }
}

}  // namespace ddprun::agent
