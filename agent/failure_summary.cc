#include "agent/failure_summary.h"

#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace ddprun::agent {
namespace {

constexpr const char* kNoTraceback =
    "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html";

std::string format_time(std::time_t t) {
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d_%H:%M:%S", &tm);
  return buf;
}

std::string indent_continuation(const std::string& text) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += "  ";
  }
  return out;
}

std::time_t to_time(const nlohmann::json& j, std::time_t fallback) {
  try {
    if (j.is_number()) return static_cast<std::time_t>(j.get<double>());
    if (j.is_string()) return static_cast<std::time_t>(std::stoll(j.get<std::string>()));
  } catch (const std::exception&) {
  }
  return fallback;
}

// Fills traceback and time from a parsed error file.
void read_error_json(const nlohmann::json& data, FailureRecord& r) {
  const auto& message = data.at("message");
  if (message.is_string()) {
    r.traceback = message.get<std::string>();
    if (data.contains("timestamp")) r.time = to_time(data["timestamp"], r.time);
    return;
  }
  const auto extra = message.value("extraInfo", nlohmann::json::object());
  if (extra.contains("py_callstack") && extra["py_callstack"].is_string()) {
    r.traceback = extra["py_callstack"].get<std::string>();
  } else if (message.contains("message") && message["message"].is_string()) {
    r.traceback = message["message"].get<std::string>();
  } else {
    r.traceback = "<N/A>";
  }
  if (extra.contains("timestamp")) r.time = to_time(extra["timestamp"], r.time);
}

}  // namespace

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

FailureRecord describe_failure(int global_rank, int local_rank, pid_t pid, int exitcode,
                               std::time_t observed, const std::string& error_file_path) {
  FailureRecord r{global_rank, local_rank, pid, exitcode, observed, "", "", {}};
  struct stat st {};
  if (!error_file_path.empty() && ::stat(error_file_path.c_str(), &st) == 0 &&
      S_ISREG(st.st_mode)) {
    r.error_file = error_file_path;
    try {
      std::ifstream in(error_file_path);
      read_error_json(nlohmann::json::parse(in), r);
    } catch (const std::exception& e) {
      r.traceback = std::string("<the error file could not be read: ") + e.what() + ">";
    }
  }
  if (r.traceback.empty()) {
    if (exitcode < 0) {
      r.traceback = "Signal " + std::to_string(-exitcode) + " (" + signal_name(-exitcode) +
                    ") received by PID " + std::to_string(pid);
    } else {
      r.traceback = kNoTraceback;
    }
  }
  return r;
}

namespace {

// The output files a failed worker left, one line each as torchrun's fields are laid out.
std::string logs_text(const std::vector<std::pair<std::string, std::string>>& logs) {
  std::string text;
  for (const auto& [stream, path] : logs) {
    text += "  ";
    text += stream;
    text.append(10 - stream.size(), ' ');
    text += ": ";
    text += path;
    text += '\n';
  }
  return text;
}

}  // namespace

std::string format_failure_summary(const std::string& name, const std::string& host,
                                   std::vector<FailureRecord> failures) {
  if (failures.empty()) return "";
  int root_rank = failures.front().global_rank;
  std::sort(failures.begin(), failures.end(),
            [](const auto& a, const auto& b) { return a.global_rank < b.global_rank; });
  std::string title = name + " FAILED";
  std::string root;
  std::vector<std::string> others;
  size_t width = title.size();
  for (size_t idx = 0; idx < failures.size(); ++idx) {
    const FailureRecord& f = failures[idx];
    std::ostringstream out;
    out << "[" << idx << "]:\n"
        << "  time      : " << format_time(f.time) << "\n"
        << "  host      : " << host << "\n"
        << "  rank      : " << f.global_rank << " (local_rank: " << f.local_rank << ")\n"
        << "  exitcode  : " << f.exitcode << " (pid: " << f.pid << ")\n"
        << "  error_file: " << (f.error_file.empty() ? "<N/A>" : f.error_file) << "\n"
        << logs_text(f.logs)
        << "  traceback : " << indent_continuation(f.traceback);
    std::string text = out.str();
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) width = std::max(width, line.size());
    (f.global_rank == root_rank ? root : others.emplace_back()) = text;
  }
  width = std::min<size_t>(width, 60);
  std::string border(width, '=');
  std::string section(width, '-');
  std::ostringstream out;
  out << border << "\n" << title << "\n" << section << "\nFailures:\n";
  if (others.empty()) out << "  <NO_OTHER_FAILURES>\n";
  for (const auto& o : others) out << o << "\n";
  out << section << "\nRoot Cause (first observed failure):\n" << root << "\n" << border << "\n";
  return out.str();
}

}  // namespace ddprun::agent
