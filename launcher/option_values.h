#pragma once

#include <map>
#include <set>
#include <span>
#include <string>

#include <boost/program_options/variables_map.hpp>

#include "launcher/launch_config.h"

namespace ddprun::launcher {

/// One ddprun flag: its canonical (underscore) name, short form, whether it takes a
/// value, its default and its help line.
struct OptionDef {
  const char* name;      // canonical (underscore) spelling
  char short_name;       // 0 when none
  bool is_switch;        // takes no value
  const char* fallback;  // default when neither flag nor PET_ variable is given
  const char* help;
  /// What shell completion offers for the value: words separated by spaces, "<file>",
  /// "<dir>", or nullptr (nothing to offer).
  const char* completes = nullptr;
};

/// The effective value of each option: command line, else PET_<NAME>, else default.
/// `source()` says where a value came from ("--nnodes" or "PET_NNODES") so an error
/// can name it.
class Values {
 public:
  /// Throws UsageError for a malformed boolean PET_ variable.
  Values(std::span<const OptionDef> options, const boost::program_options::variables_map& vm,
         const EnvLookup& env);

  const std::string& str(const std::string& name) const { return values_.at(name); }
  const std::string& source(const std::string& name) const { return sources_.at(name); }
  bool flag(const std::string& name) const { return values_.at(name) == "1"; }
  /// True when the command line or a PET_ variable set it, or derive() did.
  bool given(const std::string& name) const;
  /// True when the command line or a PET_ variable set it.
  bool from_user(const std::string& name) const { return given(name) && !derived_.count(name); }
  /// The value as a non-negative integer (UsageError naming the source otherwise).
  int integer(const std::string& name) const;
  /// Sets an option the user did not give from another source (e.g. "SLURM_NODEID"),
  /// which later messages then name; it counts as given.
  void derive(const std::string& name, const std::string& value, const std::string& source);

 private:
  void set(const std::string& name, const std::string& value, const std::string& source);

  std::map<std::string, std::string> values_;
  std::map<std::string, std::string> sources_;
  std::map<std::string, bool> given_;
  std::set<std::string> derived_;
};

}  // namespace ddprun::launcher
