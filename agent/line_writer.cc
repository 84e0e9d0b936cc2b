#include "agent/line_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "common/error.h"
#include "common/write_fully.h"

namespace ddprun::agent {

std::string expand_prefix(const std::string& tmpl, const PrefixVars& v) {
  std::string out;
  for (size_t i = 0; i < tmpl.size();) {
    if (tmpl.compare(i, 2, "${") == 0) {
      size_t end = tmpl.find('}', i);
      if (end != std::string::npos) {
        std::string name = tmpl.substr(i + 2, end - i - 2);
        bool known = true;
        if (name == "role_name")
          out += v.role_name;
        else if (name == "local_rank")
          out += std::to_string(v.local_rank);
        else if (name == "rank")
          out += std::to_string(v.rank);
        else if (name == "node_rank")
          out += std::to_string(v.node_rank);
        else if (name == "host")
          out += v.host;
        else
          known = false;
        if (known) {
          i = end + 1;
          continue;
        }
      }
    }
    out += tmpl[i++];
  }
  return out;
}

LineFilter::LineFilter(const std::string& path, std::vector<std::string> needles)
    : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644)),
      needles_(std::move(needles)) {
  if (fd_ < 0) throw SystemError("cannot open log file " + path, errno);
}

LineFilter::~LineFilter() { ::close(fd_); }

void LineFilter::copy_matching(const std::string& prefix, const char* data, size_t size) const {
  std::string out;
  std::string_view rest(data, size);
  while (!rest.empty()) {
    size_t end = rest.find_first_of("\r\n");
    std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    bool match = std::any_of(needles_.begin(), needles_.end(), [&](const std::string& n) {
      return line.find(n) != std::string_view::npos;
    });
    if (match && !line.empty()) ((out += prefix) += line) += '\n';
  }
  if (!out.empty()) write_fully(fd_, out.data(), out.size());
}

LineWriter::LineWriter(int console_fd, int file_fd, std::string prefix,
                       std::shared_ptr<const LineFilter> filter, std::string filter_prefix)
    : console_fd_(console_fd),
      file_fd_(file_fd),
      prefix_(std::move(prefix)),
      filter_(std::move(filter)),
      filter_prefix_(std::move(filter_prefix)) {}

void LineWriter::feed(const char* data, size_t size) {
  if (file_fd_ >= 0) write_fully(file_fd_, data, size);
  if (console_fd_ < 0) return;
  // Everything up to the last line end goes out now in one write; the rest waits.
  size_t last_end = std::string::npos;
  for (size_t i = size; i > 0; --i) {
    if (data[i - 1] == '\n' || data[i - 1] == '\r') {
      last_end = i;
      break;
    }
  }
  if (last_end == std::string::npos) {
    pending_.append(data, size);
    if (pending_.size() >= kMaxPending) finish();
    return;
  }
  pending_.append(data, last_end);
  emit(pending_.data(), pending_.size());
  pending_.assign(data + last_end, size - last_end);
}

void LineWriter::finish() {
  if (console_fd_ >= 0 && !pending_.empty()) emit(pending_.data(), pending_.size());
  pending_.clear();
}

void LineWriter::emit(const char* data, size_t size) {
  if (filter_) filter_->copy_matching(filter_prefix_, data, size);
  if (prefix_.empty()) {
    write_fully(console_fd_, data, size);
    return;
  }
  std::string out;
  out.reserve(size + prefix_.size() * 4);
  for (size_t i = 0; i < size; ++i) {
    char c = data[i];
    // "\r\n" ends one line, not two.
    bool crlf_tail = c == '\n' && last_char_ == '\r';
    if (at_line_start_ && !crlf_tail) out += prefix_;
    out += c;
    at_line_start_ = c == '\n' || c == '\r';
    last_char_ = c;
  }
  write_fully(console_fd_, out.data(), out.size());
}

}  // namespace ddprun::agent
