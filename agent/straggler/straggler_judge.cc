#include "agent/straggler/straggler_judge.h"

#include <algorithm>
#include <charconv>
#include <sstream>

namespace ddprun::agent {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2) return *mid;
  double upper = *mid;
  return (*std::max_element(v.begin(), mid) + upper) / 2;
}

// A node is slow when most of its ranks are: of an even count, the lower middle.
double lower_median(std::vector<double> v) {
  if (v.empty()) return 0;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

template <typename T>
bool parse(std::string_view text, T& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

void StepWindows::start_attempt(int workers, int first_rank) {
  first_rank_ = first_rank;
  last_.assign(static_cast<size_t>(workers), StepCounters{});
}

RankSteps StepWindows::take(int local_rank, const StepCounters& now) {
  RankSteps r;
  r.rank = first_rank_ + local_rank;
  auto i = static_cast<size_t>(local_rank);
  if (i >= last_.size()) return r;
  StepCounters& last = last_[i];
  // Counters only grow; a torn read that shows steps before their times (or a worker
  // that restarted its page) is taken as a fresh start rather than a negative window.
  if (now.steps < last.steps || now.step_ns < last.step_ns || now.own_ns < last.own_ns) {
    last = now;
    return r;
  }
  r.steps = now.steps - last.steps;
  r.step_seconds = static_cast<double>(now.step_ns - last.step_ns) / 1e9;
  r.own_seconds = static_cast<double>(now.own_ns - last.own_ns) / 1e9;
  last = now;
  return r;
}

std::string encode_part(const std::string& host, const std::vector<RankSteps>& ranks) {
  std::string out = host;
  for (const auto& r : ranks) {
    if (r.steps == 0) continue;
    out += '\n' + std::to_string(r.rank) + ' ' + std::to_string(r.steps) + ' ' +
           std::to_string(static_cast<uint64_t>(r.step_seconds * 1e9)) + ' ' +
           std::to_string(static_cast<uint64_t>(r.own_seconds * 1e9));
  }
  return out;
}

std::optional<NodePart> decode_part(const std::string& text) {
  if (text.empty()) return std::nullopt;
  NodePart part;
  std::istringstream in(text);
  std::getline(in, part.host);
  for (std::string line; std::getline(in, line);) {
    std::string_view fields[4];
    size_t n = 0, at = 0;
    while (n < 4 && at <= line.size()) {
      size_t space = std::min(line.find(' ', at), line.size());
      fields[n++] = std::string_view(line).substr(at, space - at);
      at = space + 1;
    }
    RankSteps r;
    uint64_t step_ns = 0, own_ns = 0;
    if (n != 4 || at <= line.size() || !parse(fields[0], r.rank) || !parse(fields[1], r.steps) ||
        !parse(fields[2], step_ns) || !parse(fields[3], own_ns) || r.steps == 0) {
      return std::nullopt;
    }
    r.step_seconds = static_cast<double>(step_ns) / 1e9;
    r.own_seconds = static_cast<double>(own_ns) / 1e9;
    part.ranks.push_back(r);
  }
  return part;
}

double straggler_score(double own_per_step, double median) {
  return own_per_step / std::max(median, StragglerJudge::kFloor);
}

void StragglerJudge::follow(Score& s, const std::string& key, std::chrono::milliseconds now) {
  Seen& was = seen_[key];
  was.over = s.score > options_.threshold ? was.over + 1 : 0;
  s.straggler = was.over >= options_.windows;
  if (!s.straggler) return;
  s.say = !was.said || now - *was.said >= options_.repeat;
  if (s.say) was.said = now;
}

StragglerJudge::Verdict StragglerJudge::judge(const std::vector<std::string>& parts,
                                              std::chrono::milliseconds now) {
  Verdict v;
  std::vector<double> own;
  std::vector<std::pair<int, NodePart>> nodes;
  for (size_t k = 0; k < parts.size(); ++k) {
    auto part = decode_part(parts[k]);
    if (!part || part->ranks.empty()) continue;
    for (const auto& r : part->ranks) own.push_back(r.own_per_step());
    nodes.emplace_back(static_cast<int>(k), std::move(*part));
  }
  // One rank alone has nobody to be slower than.
  if (own.size() < 2) return v;
  v.median_own = median(own);
  for (auto& [node, part] : nodes) {
    std::vector<double> node_scores, node_own;
    for (const auto& r : part.ranks) {
      Score s{r.rank, node, part.host, straggler_score(r.own_per_step(), v.median_own),
              r.own_per_step(), r.steps};
      std::string key = "r";  // not "r" + ...: GCC 12 at -O3 warns of an overlap (-Wrestrict)
      key += std::to_string(r.rank);
      bool named_before = seen_.count(key) && seen_[key].said.has_value();
      follow(s, key, now);
      if (named_before && !s.straggler) {
        v.recovered.push_back(r.rank);
        seen_[key].said.reset();
      }
      node_scores.push_back(s.score);
      node_own.push_back(s.own_per_step);
      v.ranks.push_back(s);
    }
    Score n{node, node, part.host, lower_median(node_scores), lower_median(node_own), 0};
    for (const auto& r : part.ranks) n.steps += r.steps;
    std::string key = "n";  // as "r" above
    key += std::to_string(node);
    follow(n, key, now);
    v.nodes.push_back(n);
  }
  std::sort(v.ranks.begin(), v.ranks.end(), [](const Score& a, const Score& b) { return a.rank < b.rank; });
  std::sort(v.recovered.begin(), v.recovered.end());
  return v;
}

}  // namespace ddprun::agent
