#include "launcher/hostfile.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/error.h"
#include "common/value_parsers.h"

namespace ddprun::launcher {
namespace {

bool valid_host(const std::string& name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '@';
  });
}

int positive(const std::string& where, const std::string& text) {
  int n = 0;
  if (!to_int(text, n) || n < 1)
    throw UsageError(where + ": slots must be a positive integer, not '" + text + "'");
  return n;
}

[[noreturn]] void bad_entry(const std::string& flag, const std::string& value,
                            const std::string& what, const std::string& item,
                            const std::string& tail = "") {
  throw UsageError(flag + "=" + value + ": " + what + " '" + item + "'" + tail);
}

void add_unique(std::vector<HostSlots>& hosts, HostSlots host, const std::string& where) {
  for (const auto& h : hosts) {
    if (h.name == host.name) throw UsageError(where + ": host " + host.name + " is listed twice");
  }
  hosts.push_back(std::move(host));
}

// "host1@host2:0,2" -> host -> slot indices (empty: the whole host).
std::map<std::string, std::set<int>> parse_selection(const std::string& flag,
                                                     const std::string& value) {
  std::map<std::string, std::set<int>> out;
  for (const auto& part : split_text(value, '@')) {
    std::string item = trim_text(part);
    size_t colon = item.find(':');
    std::string host = item.substr(0, colon);
    if (!valid_host(host)) bad_entry(flag, value, "bad host", host);
    std::set<int>& slots = out[host];
    if (colon == std::string::npos) continue;
    for (const auto& s : split_text(item.substr(colon + 1), ',')) {
      int slot = -1;
      if (!to_int(trim_text(s), slot) || slot < 0) {
        bad_entry(flag, value, "bad slot", s, " of host " + host);
      }
      slots.insert(slot);
    }
    if (slots.empty()) bad_entry(flag, value, "no slots after", host + ":");
  }
  return out;
}

std::vector<int> all_slots(const HostSlots& h) {
  if (!h.picked.empty()) return h.picked;
  std::vector<int> slots(static_cast<size_t>(h.slots));
  for (int i = 0; i < h.slots; ++i) slots[static_cast<size_t>(i)] = i;
  return slots;
}

void check_slots(const std::string& flag, const HostSlots& h, const std::set<int>& slots) {
  if (slots.empty()) return;
  if (h.slots == 0) {
    throw UsageError(flag + ": host " + h.name + " has no slots=N, so its slots cannot be picked");
  }
  for (int s : slots) {
    if (s >= h.slots) {
      throw UsageError(flag + ": host " + h.name + " has " + std::to_string(h.slots) +
                       " slots; there is no slot " + std::to_string(s));
    }
  }
}

}  // namespace

std::vector<HostSlots> parse_hostfile(const std::string& path, const std::string& text) {
  std::vector<HostSlots> hosts;
  auto lines = split_text(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string where = path + ":" + std::to_string(i + 1);
    std::string line = lines[i].substr(0, lines[i].find('#'));
    std::replace(line.begin(), line.end(), '\t', ' ');
    std::replace(line.begin(), line.end(), '\r', ' ');
    std::vector<std::string> words;
    for (const auto& w : split_text(line, ' '))
      if (!w.empty()) words.push_back(w);
    if (words.empty()) continue;
    HostSlots h;
    h.name = words[0];
    if (!valid_host(h.name)) throw UsageError(where + ": bad host name '" + h.name + "'");
    for (size_t k = 1; k < words.size(); ++k) {
      if (words[k].rfind("slots=", 0) == 0) {
        h.slots = positive(where, words[k].substr(6));
      } else {
        throw UsageError(where + ": unexpected '" + words[k] + "' (expected: host [slots=N])");
      }
    }
    add_unique(hosts, std::move(h), where);
  }
  if (hosts.empty()) throw UsageError(path + ": no hosts in the hostfile");
  return hosts;
}

std::vector<HostSlots> parse_host_list(const std::string& flag, const std::string& value) {
  std::vector<HostSlots> hosts;
  std::string where = flag + "=" + value;
  for (const auto& part : split_text(value, ',')) {
    std::string item = trim_text(part);
    HostSlots h;
    size_t colon = item.rfind(':');
    h.name = item.substr(0, colon);
    if (colon != std::string::npos) h.slots = positive(where, item.substr(colon + 1));
    if (!valid_host(h.name)) bad_entry(flag, value, "bad host", item);
    add_unique(hosts, std::move(h), where);
  }
  return hosts;
}

std::vector<HostSlots> filter_hosts(std::vector<HostSlots> hosts, const std::string& include,
                                    const std::string& exclude) {
  auto find = [&hosts](const std::string& flag, const std::string& name) -> HostSlots& {
    for (auto& h : hosts)
      if (h.name == name) return h;
    throw UsageError(flag + ": host " + name + " is not in the host list");
  };
  if (!trim_text(include).empty()) {
    auto picked = parse_selection("--include", include);
    std::vector<HostSlots> kept;
    for (const auto& [name, slots] : picked) find("--include", name);
    for (auto& h : hosts) {
      auto it = picked.find(h.name);
      if (it == picked.end()) continue;
      check_slots("--include", h, it->second);
      if (!it->second.empty()) h.picked.assign(it->second.begin(), it->second.end());
      kept.push_back(h);
    }
    hosts = std::move(kept);
  }
  if (!trim_text(exclude).empty()) {
    auto dropped = parse_selection("--exclude", exclude);
    for (const auto& [name, slots] : dropped) {
      HostSlots& h = find("--exclude", name);
      check_slots("--exclude", h, slots);
      if (slots.empty()) {
        h.slots = -1;  // dropped below
        continue;
      }
      std::vector<int> left;
      for (int s : all_slots(h))
        if (!slots.count(s)) left.push_back(s);
      h.picked = left;
      if (left.empty()) h.slots = -1;
    }
    hosts.erase(
        std::remove_if(hosts.begin(), hosts.end(), [](const HostSlots& h) { return h.slots < 0; }),
        hosts.end());
  }
  if (hosts.empty()) throw UsageError("--include/--exclude left no host to run on");
  return hosts;
}

}  // namespace ddprun::launcher
