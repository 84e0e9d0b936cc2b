#include "rendezvous/round/round_history.h"

#include <charconv>
#include <string_view>
#include <vector>

namespace ddprun::rendezvous {
namespace {

// The number `text` starts with, up to `end` (npos: the whole text); -1 if it is none.
int64_t number(std::string_view text, size_t end = std::string_view::npos) {
  std::string_view digits = text.substr(0, end);
  int64_t n = -1;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || ptr != digits.data() + digits.size() || digits.empty()) return -1;
  return n;
}

int64_t counter(const store::KeyValueTable& table, const std::string& key) {
  const std::string* value = table.find(key);
  return value ? number(*value) : -1;
}

}  // namespace

bool is_history(const std::string& key, const std::string& prefix, int round, int64_t version,
                int64_t epoch) {
  if (!key.starts_with(prefix)) return false;
  std::string_view rest = std::string_view(key).substr(prefix.size());
  for (std::string_view dir : {"round/", "joining/"}) {
    if (!rest.starts_with(dir)) continue;
    std::string_view after = rest.substr(dir.size());
    size_t slash = after.find('/');
    if (slash == std::string_view::npos) return false;
    int64_t r = number(after, slash);
    return r >= 0 && r < round - 1;
  }
  for (auto [dir, now] :
       {std::pair<std::string_view, int64_t>{"ver/", version}, {"epoch/", epoch}}) {
    if (!rest.starts_with(dir)) continue;
    int64_t n = number(rest.substr(dir.size()));
    return n >= 0 && now >= 0 && n <= now - kWakeKeysKept;
  }
  return false;
}

size_t forget_history(store::KeyValueTable& table, const std::string& prefix, int round) {
  int64_t version = counter(table, prefix + "version");
  int64_t epoch = counter(table, prefix + "epoch");
  std::vector<std::string> gone;
  table.for_each_key([&](const std::string& key) {
    if (is_history(key, prefix, round, version, epoch)) gone.push_back(key);
  });
  for (const auto& key : gone) table.erase(key);
  return gone.size();
}

}  // namespace ddprun::rendezvous
