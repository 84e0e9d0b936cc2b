#include "rendezvous/round_end.h"

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

std::string RoundEnd::encode() const {
  return std::string(kind_name(kind)) + (hang ? "+hang" : "") + "|" + std::to_string(exitcode) +
         "|" + reason;
}

RoundEnd RoundEnd::parse(const std::string& value) {
  RoundEnd r;
  size_t a = value.find('|');
  size_t b = a == std::string::npos ? a : value.find('|', a + 1);
  if (b == std::string::npos) {
    r.reason = value;
    return r;
  }
  std::string kind = value.substr(0, a);
  const std::string hang = "+hang";
  if (kind.size() > hang.size() &&
      kind.compare(kind.size() - hang.size(), hang.size(), hang) == 0) {
    r.hang = true;
    kind.resize(kind.size() - hang.size());
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
