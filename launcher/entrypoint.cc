#include "launcher/entrypoint.h"

#include "agent/executable.h"

namespace ddprun::launcher {

void resolve_entrypoint(LaunchConfig& config, const EnvLookup& env) {
  std::vector<std::string>& argv = config.agent.spec.argv;
  argv.clear();
  if (config.kind == ScriptKind::kExecutable) {
    argv.push_back(agent::resolve_executable(config.script));
  } else {
    auto python = env("PYTHON_EXEC");
    argv.push_back(agent::resolve_executable(python && !python->empty() ? *python : "python3"));
    argv.emplace_back("-u");
    if (config.kind == ScriptKind::kPythonModule) {
      argv.emplace_back("-m");
    } else if (config.script.find("${local_rank}") == std::string::npos) {
      agent::check_readable_file(config.script);
    }
    argv.push_back(config.script);
  }
  argv.insert(argv.end(), config.script_args.begin(), config.script_args.end());
}

}  // namespace ddprun::launcher
