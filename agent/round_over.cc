#include "agent/round_over.h"

#include <vector>

namespace ddprun::agent {

std::string RoundOver::encode() const {
  const char* k = kind == Kind::kRestart      ? "restart"
                  : kind == Kind::kMembership ? "membership"
                                              : "final";
  return std::string(k) + "|" + std::to_string(exitcode) + "|" + reason;
}

RoundOver RoundOver::parse(const std::string& value) {
  RoundOver r;
  size_t a = value.find('|');
  size_t b = a == std::string::npos ? a : value.find('|', a + 1);
  if (b == std::string::npos) {
    r.reason = value;
    return r;
  }
  std::string kind = value.substr(0, a);
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

}  // namespace ddprun::agent
