#include "rendezvous/round/round_end.h"

#include <algorithm>

namespace ddprun::rendezvous {

const char* RoundEnd::kind_name(Kind kind) {
  switch (kind) {
    case Kind::kRestart:
      return "restart";
    case Kind::kMembership:
      return "membership";
    case Kind::kFinal:
      break;
  }
  return "final";
}

bool RoundEnd::drops(const std::string& node) const {
  return std::find(dropped.begin(), dropped.end(), node) != dropped.end();
}

std::string RoundEnd::encode() const {
  std::string out = kind_name(kind);
  if (hang) out += "+hang";
  if (signalled) out += "+signalled";
  for (size_t i = 0; i < dropped.size(); ++i) {
    out += i == 0 ? "+dropped=" : ",";
    out += dropped[i];
  }
  if (!next_round.empty()) out += "+next=" + next_round;
  out += '|';
  out += std::to_string(exitcode);
  out += '|';
  return out + reason;
}

RoundEnd RoundEnd::parse(const std::string& value) {
  RoundEnd r;
  size_t a = value.find('|');
  size_t b = a == std::string::npos ? a : value.find('|', a + 1);
  if (b == std::string::npos) {
    r.reason = value;
    return r;
  }
  std::string head = value.substr(0, a);
  std::string kind = head.substr(0, head.find('+'));
  for (size_t at = head.find('+'); at != std::string::npos;) {
    size_t next = head.find('+', at + 1);
    std::string flag = head.substr(at + 1, next == std::string::npos ? next : next - at - 1);
    if (flag == "hang") r.hang = true;
    if (flag == "signalled") r.signalled = true;
    if (flag.rfind("next=", 0) == 0) r.next_round = flag.substr(5);
    const std::string dropped = "dropped=";
    if (flag.rfind(dropped, 0) == 0) {
      std::string ids = flag.substr(dropped.size());
      for (size_t from = 0; from <= ids.size();) {
        size_t comma = std::min(ids.find(',', from), ids.size());
        if (comma > from) r.dropped.push_back(ids.substr(from, comma - from));
        from = comma + 1;
      }
    }
    at = next;
  }
  r.kind = kind == "restart"      ? Kind::kRestart
           : kind == "membership" ? Kind::kMembership
                                  : Kind::kFinal;
  try {
    r.exitcode = std::stoi(value.substr(a + 1, b - a - 1));
  } catch (const std::exception&) {
  }
  r.reason = value.substr(b + 1);
  return r;
}

}  // namespace ddprun::rendezvous
