#include "common/host_list.h"

#include <cctype>
#include <string_view>

#include "common/error.h"

namespace ddprun {
namespace {

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

bool all_digits(std::string_view s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

class Expander {
 public:
  Expander(const std::string& source, const std::string& list) : source_(source), list_(list) {}

  std::vector<std::string> run() {
    std::vector<std::string> hosts;
    if (list_.empty()) fail("the list is empty");
    while (true) {
      std::vector<std::string> item = parse_item();
      if (hosts.size() + item.size() > kMaxHosts) fail("more than 100000 hosts");
      hosts.insert(hosts.end(), item.begin(), item.end());
      if (pos_ == list_.size()) return hosts;
      ++pos_;  // the ','
    }
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw UsageError(source_ + "=" + list_ + ": " + why);
  }

  // One comma-separated item: literal text and bracket groups, as their product.
  std::vector<std::string> parse_item() {
    std::vector<std::string> names{""};
    size_t start = pos_;
    while (pos_ < list_.size() && list_[pos_] != ',') {
      char c = list_[pos_];
      if (c == '[') {
        std::vector<std::string> group = parse_group();
        if (names.size() * group.size() > kMaxHosts) fail("more than 100000 hosts");
        std::vector<std::string> product;
        product.reserve(names.size() * group.size());
        for (const auto& prefix : names)
          for (const auto& part : group) product.push_back(prefix + part);
        names = std::move(product);
      } else if (name_char(c)) {
        for (auto& n : names) n += c;
        ++pos_;
      } else {
        fail(std::string("unexpected '") + c + "' at position " + std::to_string(pos_ + 1));
      }
    }
    if (pos_ == start) fail("an empty host name at position " + std::to_string(pos_ + 1));
    return names;
  }

  // "[1-3,07]" -> "1","2","3","07".
  std::vector<std::string> parse_group() {
    size_t open = pos_++;
    size_t close = list_.find(']', pos_);
    if (close == std::string::npos)
      fail("'[' at position " + std::to_string(open + 1) + " is not closed");
    std::string_view body(list_.data() + pos_, close - pos_);
    if (body.find('[') != std::string_view::npos) fail("brackets inside brackets");
    pos_ = close + 1;
    std::vector<std::string> out;
    size_t from = 0;
    while (true) {
      size_t comma = body.find(',', from);
      std::string_view range =
          body.substr(from, comma == std::string_view::npos ? body.npos : comma - from);
      add_range(range, out);
      if (comma == std::string_view::npos) return out;
      from = comma + 1;
    }
  }

  void add_range(std::string_view range, std::vector<std::string>& out) {
    size_t dash = range.find('-');
    std::string_view lo = range.substr(0, dash);
    std::string_view hi = dash == std::string_view::npos ? lo : range.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi)) {
      fail("bad range '" + std::string(range) + "' (expected N or N-M with digits)");
    }
    long first = std::stol(std::string(lo));
    long last = std::stol(std::string(hi));
    if (last < first) fail("range '" + std::string(range) + "' goes backwards");
    if (out.size() + static_cast<size_t>(last - first + 1) > kMaxHosts) {
      fail("more than 100000 hosts");
    }
    size_t width = lo.size() > 1 && lo[0] == '0' ? lo.size() : 0;
    for (long n = first; n <= last; ++n) {
      std::string digits = std::to_string(n);
      if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
      out.push_back(std::move(digits));
    }
  }

  const std::string& source_;
  const std::string& list_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<std::string> expand_host_list(const std::string& source, const std::string& list) {
  return Expander(source, list).run();
}

}  // namespace ddprun
