#include "launcher/option_values.h"

#include <algorithm>
#include <cctype>

#include "launcher/value_parsers.h"

namespace ddprun::launcher {
namespace {

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

}  // namespace

Values::Values(std::span<const OptionDef> options, const boost::program_options::variables_map& vm,
               const EnvLookup& env) {
  for (const auto& d : options) {
    std::string flag = std::string("--") + d.name;
    std::string env_name = "PET_" + upper(d.name);
    if (d.is_switch) {
      if (vm.count(d.name) && vm[d.name].as<bool>()) {
        set(d.name, "1", flag);
      } else if (auto e = env(env_name)) {
        set(d.name, parse_bool(env_name, *e) ? "1" : "0", env_name);
      } else {
        set(d.name, "0", flag);
      }
    } else if (vm.count(d.name)) {
      set(d.name, vm[d.name].as<std::string>(), flag);
      given_[d.name] = true;
    } else if (auto e = env(env_name)) {
      set(d.name, *e, env_name);
      given_[d.name] = true;
    } else {
      set(d.name, d.fallback, flag);
    }
  }
}

bool Values::given(const std::string& name) const {
  auto it = given_.find(name);
  return it != given_.end() && it->second;
}

int Values::integer(const std::string& name) const { return parse_int(source(name), str(name)); }

void Values::derive(const std::string& name, const std::string& value, const std::string& source) {
  set(name, value, source);
  given_[name] = true;
  derived_.insert(name);
}

void Values::set(const std::string& name, const std::string& value, const std::string& source) {
  values_[name] = value;
  sources_[name] = source;
}

}  // namespace ddprun::launcher
