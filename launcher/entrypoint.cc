#include "launcher/entrypoint.h"

#include "agent/executable.h"

namespace ddprun::launcher {

namespace {

// The same error, saying what could not be run.
template <typename F>
auto naming(const std::string& what, F f) {
  try {
    return f();
  } catch (const agent::ExecError& e) {
    throw agent::ExecError("cannot run " + what + ": " + e.what(), e.exit_code());
  }
}

}  // namespace

void resolve_entrypoint(LaunchConfig& config, const EnvLookup& env) {
  std::vector<std::string>& argv = config.agent.spec.argv;
  argv.clear();
  if (config.kind == ScriptKind::kExecutable) {
    argv.push_back(naming("the training program", [&] { return agent::resolve_executable(config.script); }));
  } else {
    auto python = env("PYTHON_EXEC");
    bool given = python && !python->empty();
    std::string interpreter = given ? *python : "python3";
    argv.push_back(naming(given ? "the Python interpreter PYTHON_EXEC=" + interpreter
                                : "the Python interpreter (python3 on PATH; PYTHON_EXEC names another)",
                          [&] { return agent::resolve_executable(interpreter); }));
    argv.emplace_back("-u");
    if (config.kind == ScriptKind::kPythonModule) {
      argv.emplace_back("-m");
    } else if (config.script.find("${local_rank}") == std::string::npos) {
      naming("the training script", [&] { agent::check_readable_file(config.script); });
    }
    argv.push_back(config.script);
  }
  argv.insert(argv.end(), config.script_args.begin(), config.script_args.end());
}

}  // namespace ddprun::launcher
