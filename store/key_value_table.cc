#include "store/key_value_table.h"

#include <charconv>

namespace ddprun::store {

const std::string* KeyValueTable::find(const std::string& key) const {
  auto it = data_.find(key);
  return it == data_.end() ? nullptr : &it->second;
}

int64_t KeyValueTable::add(const std::string& key, int64_t delta) {
  int64_t current = 0;
  auto it = data_.find(key);
  if (it != data_.end()) {
    const std::string& text = it->second;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), current);
    if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) throw NotANumber{};
  }
  // Wrap like the reference's int64 arithmetic instead of overflowing (UB).
  int64_t sum = static_cast<int64_t>(static_cast<uint64_t>(current) + static_cast<uint64_t>(delta));
  data_[key] = std::to_string(sum);
  return sum;
}

KeyValueTable::CompareSetResult KeyValueTable::compare_set(const std::string& key,
                                                           const std::string& expected,
                                                           const std::string& desired) {
  auto it = data_.find(key);
  if (it == data_.end()) {
    if (expected.empty()) {
      data_[key] = desired;
      return {desired, true};
    }
    return {expected, false};
  }
  if (it->second == expected) {
    it->second = desired;
    return {desired, true};
  }
  return {it->second, false};
}

bool KeyValueTable::contains_all(const std::vector<std::string>& keys) const {
  for (const auto& k : keys)
    if (!data_.count(k)) return false;
  return true;
}

size_t KeyValueTable::erase_all_except(const std::string& keep_prefix) {
  return std::erase_if(data_, [&](const auto& kv) { return !kv.first.starts_with(keep_prefix); });
}

size_t KeyValueTable::erase_prefix(const std::string& prefix) {
  return std::erase_if(data_, [&](const auto& kv) { return kv.first.starts_with(prefix); });
}

}  // namespace ddprun::store
