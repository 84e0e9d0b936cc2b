#include "launcher/cli.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

#include <boost/program_options.hpp>

#include "common/error.h"
#include "launcher/hang_flags.h"
#include "launcher/metrics_flags.h"
#include "launcher/option_values.h"
#include "launcher/preflight_flags.h"
#include "launcher/rendezvous_flags.h"
#include "launcher/slurm_flags.h"
#include "launcher/ssh_flags.h"
#include "launcher/straggler_flags.h"
#include "launcher/value_parsers.h"

namespace po = boost::program_options;

namespace ddprun::launcher {

namespace {

const OptionDef* find_short(char c) {
  for (const auto& d : option_table())
    if (d.short_name == c) return &d;
  return nullptr;
}

po::options_description make_description() {
  po::options_description desc("Options (every --a_b flag may also be written --a-b)");
  for (const auto& d : option_table()) {
    std::string spec = d.name;
    if (d.short_name) spec += std::string(",") + d.short_name;
    if (d.is_switch) {
      desc.add_options()(spec.c_str(), po::bool_switch(), d.help);
    } else {
      std::string help = d.help;
      if (*d.fallback) help += std::string(" (default: ") + d.fallback + ")";
      desc.add_options()(spec.c_str(), po::value<std::string>(), help.c_str());
    }
  }
  return desc;
}

// Splits argv into ddprun's option tokens (with '-' in long names turned into '_')
// and the script with its arguments. Needs the description to know which flags
// take a value and to resolve unambiguous abbreviations, as argparse does.
struct SplitArgs {
  std::vector<std::string> option_tokens;
  std::vector<std::string> script_and_args;
  std::vector<OptionTokens> options;  // the same tokens, per option
  std::vector<std::string> exports;   // --export may repeat: kept apart
};

// Appends one option's tokens, or keeps an --export value apart.
void add_option(SplitArgs& out, const std::string& name, std::vector<std::string> tokens) {
  if (name == "export") {
    out.exports.push_back(tokens.size() > 1 ? tokens[1]
                                            : tokens[0].substr(tokens[0].find('=') + 1));
    return;
  }
  out.option_tokens.insert(out.option_tokens.end(), tokens.begin(), tokens.end());
  out.options.push_back({name, std::move(tokens)});
}

SplitArgs split_argv(int argc, const char* const argv[], const po::options_description& desc) {
  SplitArgs out;
  int i = 1;
  for (; i < argc; ++i) {
    std::string tok = argv[i];
    if (tok == "--") {
      ++i;
      break;
    }
    if (tok.size() < 2 || tok[0] != '-') break;  // the script
    bool takes_value = false;
    bool value_attached = false;
    if (tok[1] == '-') {
      size_t eq = tok.find('=');
      std::string name = tok.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      std::replace(name.begin(), name.end(), '-', '_');
      const po::option_description* od = nullptr;
      try {
        od = desc.find_nothrow(name, /*approx=*/true);
      } catch (const po::error&) {
        throw UsageError("--" + name + ": ambiguous flag");
      }
      if (od == nullptr) throw UsageError("--" + name + ": unrecognized flag");
      takes_value = od->semantic()->max_tokens() > 0;
      value_attached = eq != std::string::npos;
      if (!takes_value && value_attached) {
        throw UsageError("--" + name + ": this flag takes no value");
      }
      name = od->long_name();
      if (value_attached && eq + 1 == tok.size()) {
        // "--flag=" sets an empty value (program_options would want one after '=').
        add_option(out, name, {"--" + name, ""});
        continue;
      }
      std::string canonical_tok = "--" + name;
      if (value_attached) canonical_tok += tok.substr(eq);
      tok = canonical_tok;
    } else {
      const OptionDef* d = find_short(tok[1]);
      if (d == nullptr) throw UsageError(tok + ": unrecognized flag");
      takes_value = !d->is_switch;
      value_attached = tok.size() > 2;
      if (!takes_value && value_attached) throw UsageError(tok + ": unrecognized flag");
    }
    std::vector<std::string> tokens{tok};
    if (takes_value && !value_attached) {
      if (i + 1 >= argc) throw UsageError(tok + ": expected a value");
      tokens.emplace_back(argv[++i]);
    }
    std::string canonical =
        tok[1] == '-' ? tok.substr(2, tok.find('=') - 2) : find_short(tok[1])->name;
    add_option(out, canonical, std::move(tokens));
  }
  for (; i < argc; ++i) out.script_and_args.emplace_back(argv[i]);
  return out;
}

int resolve_nproc(const Values& v, const DeviceCounter& devices) {
  const std::string& raw = v.str("nproc_per_node");
  const std::string& src = v.source("nproc_per_node");
  if (raw == "cpu") return std::max(1, devices.cpus());
  if (raw == "gpu") {
    int n = devices.gpus();
    if (n < 1) {
      throw UsageError(src + "=gpu: no CUDA device is visible (check CUDA_VISIBLE_DEVICES)");
    }
    return n;
  }
  if (raw == "xpu") {
    int n = devices.xpus ? devices.xpus() : 0;
    if (n < 1) {
      throw UsageError(src +
                       "=xpu: no Intel XPU is visible on this node (ddprun counts the "
                       "i915 and xe render devices under /sys/class/drm)");
    }
    return n;
  }
  if (raw == "auto") {
    int n = devices.gpus();
    return n > 0 ? n : std::max(1, devices.cpus());
  }
  int n = 0;
  try {
    n = parse_int(src, raw);
  } catch (const UsageError&) {
    throw UsageError(src + "=" + raw + ": expected a positive integer, cpu, gpu, xpu or auto");
  }
  if (n < 1) throw UsageError(src + "=" + raw + ": at least one worker per node is needed");
  return n;
}

void fill_worker_spec(const Values& v, const EnvLookup& env, agent::WorkerSpec& s) {
  s.role = v.str("role");
  if (s.role.empty()) throw UsageError(v.source("role") + "=: the role must not be empty");
  s.max_restarts = v.integer("max_restarts");
  s.redirects = parse_std_spec(v.source("redirects"), v.str("redirects"));
  s.tee = parse_std_spec(v.source("tee"), v.str("tee"));
  s.local_ranks_filter =
      parse_rank_list(v.source("local_ranks_filter"), v.str("local_ranks_filter"));
  if (v.given("log_line_prefix_template")) {
    s.log_line_prefix_template = v.str("log_line_prefix_template");
    s.prefix_all_output = true;
  } else if (auto tmpl = env("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE")) {
    s.log_line_prefix_template = *tmpl;  // as torchrun: applies to tee'd output
  }
  s.duplicate_stdout_filters = parse_filter_list(v.str("duplicate_stdout_filters"));
  s.duplicate_stderr_filters = parse_filter_list(v.str("duplicate_stderr_filters"));
  s.virtual_local_rank = v.flag("virtual_local_rank");
}

// --virtual_local_rank: each local rank's own GPU, from the inherited CUDA_VISIBLE_DEVICES
// where it is set (torchrun's rule), checked before any worker starts.
std::vector<std::string> virtual_local_devices(const Values& v, const EnvLookup& env,
                                               int local_world_size) {
  std::vector<std::string> devices;
  auto visible = env("CUDA_VISIBLE_DEVICES");
  if (!visible) {
    for (int r = 0; r < local_world_size; ++r) devices.push_back(std::to_string(r));
    return devices;
  }
  for (const auto& item : split_text(*visible, ',')) devices.push_back(trim_text(item));
  if (static_cast<int>(devices.size()) < local_world_size) {
    throw UsageError(v.source("virtual_local_rank") + ": " + std::to_string(local_world_size) +
                     " workers, but CUDA_VISIBLE_DEVICES=" + *visible + " names " +
                     std::to_string(devices.size()) + " device(s)");
  }
  devices.resize(static_cast<size_t>(local_world_size));
  return devices;
}

// --grace_period, or torchrun 2.14's --shutdown_timeout and TORCH_ELASTIC_SHUTDOWN_TIMEOUT
// (whole seconds there; any number of seconds here).
std::chrono::milliseconds resolve_grace_period(const Values& v, const EnvLookup& env) {
  bool grace = v.given("grace_period");
  bool shutdown = v.given("shutdown_timeout");
  if (grace && shutdown && v.str("grace_period") != v.str("shutdown_timeout")) {
    throw UsageError(v.source("grace_period") + "=" + v.str("grace_period") + " and " +
                     v.source("shutdown_timeout") + "=" + v.str("shutdown_timeout") +
                     " set the same time (between SIGTERM and SIGKILL): give one");
  }
  if (shutdown) return parse_seconds(v.source("shutdown_timeout"), v.str("shutdown_timeout"), true);
  if (!grace) {
    if (auto value = env("TORCH_ELASTIC_SHUTDOWN_TIMEOUT")) {
      return parse_seconds("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", *value, true);
    }
  }
  return parse_seconds(v.source("grace_period"), v.str("grace_period"), false);
}

// --slurm=auto|off: the step's values where the user gave none.
SlurmDefaults apply_slurm_environment(Values& v, const EnvLookup& env,
                                      const NodeAddressLookup& node_address,
                                      std::vector<std::string>& notices) {
  const std::string& mode = v.str("slurm");
  if (mode == "off") return {};
  if (mode != "auto") throw UsageError(v.source("slurm") + "=" + mode + ": expected auto or off");
  auto step = read_slurm_step(env);
  if (!step) return {};
  return apply_slurm(v, *step, node_address ? node_address : slurm_node_address_lookup(env),
                     notices);
}

// Kubernetes' PyTorchJob (Kubeflow's training operator) gives every pod PET_NNODES and
// PET_NODE_RANK, and node 0 as MASTER_ADDR and MASTER_PORT, which torchrun ignores: a
// multi-node static job takes them where no flag or PET_ variable says otherwise.
void apply_master_environment(Values& v, const EnvLookup& env) {
  if (parse_nnodes(v.source("nnodes"), v.str("nnodes")).second < 2) return;
  for (const auto& [option, var] :
       {std::pair{"master_addr", "MASTER_ADDR"}, std::pair{"master_port", "MASTER_PORT"}}) {
    auto value = env(var);
    if (value && !value->empty() && !v.from_user(option)) v.derive(option, *value, var);
  }
}

// --local_ranks_filter naming local ranks this node does not have: said, not silent (no
// output at all otherwise looks like a hung job).
void check_ranks_filter(const Values& v, const agent::WorkerSpec& spec,
                        std::vector<std::string>& notices) {
  std::string missing;
  size_t present = 0;
  for (int r : spec.local_ranks_filter) {
    if (r < spec.local_world_size) {
      ++present;
    } else {
      missing += (missing.empty() ? "" : ",") + std::to_string(r);
    }
  }
  if (missing.empty()) return;
  notices.push_back(v.source("local_ranks_filter") + "=" +
                    v.str("local_ranks_filter") + ": this node runs local rank" +
                    (spec.local_world_size == 1
                         ? std::string(" 0")
                         : "s 0-" + std::to_string(spec.local_world_size - 1)) +
                    ", not " + missing +
                    (present == 0 ? "; no worker's output is shown on the console" : ""));
}

// A flag given more than once takes its last value, as torchrun's argparse does: wrapper
// scripts append their overrides to a user's command line.
void keep_last_of_each(po::parsed_options& parsed) {
  std::set<std::string> seen;
  std::vector<po::option> kept;
  for (auto it = parsed.options.rbegin(); it != parsed.options.rend(); ++it) {
    if (seen.insert(it->string_key).second) kept.push_back(std::move(*it));
  }
  parsed.options.assign(std::make_move_iterator(kept.rbegin()), std::make_move_iterator(kept.rend()));
}

// -m/--module, --no_python: what the script is.
ScriptKind script_kind(const Values& v) {
  bool module = v.flag("module");
  bool no_python = v.flag("no_python");
  if (module && no_python) {
    throw UsageError("-m/--module and --no_python cannot be used together");
  }
  return no_python ? ScriptKind::kExecutable
                   : (module ? ScriptKind::kPythonModule : ScriptKind::kPythonFile);
}

// Where the workers' logs go, how they are stopped, and what they inherit.
void fill_process_options(const Values& v, const EnvLookup& env, agent::AgentConfig& a) {
  a.log_dir = v.str("log_dir");
  a.grace_period = resolve_grace_period(v, env);
  parse_seconds(v.source("monitor_interval"), v.str("monitor_interval"), /*allow_zero=*/true);
  const std::string& sm = v.str("start_method");
  if (sm != "spawn" && sm != "fork" && sm != "forkserver") {
    throw UsageError(v.source("start_method") + "=" + sm + ": expected spawn, fork or forkserver");
  }
  a.stop_signals = parse_signal_list(v.source("signals_to_handle"), v.str("signals_to_handle"));
  a.signals_to_handle = v.str("signals_to_handle");
  a.forward_signals =
      parse_signal_list(v.source("signals_to_forward"), v.str("signals_to_forward"));
  if (!env("OMP_NUM_THREADS") && a.spec.local_world_size > 1) {
    a.omp_num_threads = std::to_string(1);
  }
}

// torchrun's event log and log plug-ins, and the tracking run's interval.
void fill_run_options(const Values& v, LaunchConfig& cfg) {
  const std::string& events = v.str("event_log_handler");
  if (events != "null" && events != "console") {
    throw UsageError(v.source("event_log_handler") + "=" + events + ": expected null or console");
  }
  cfg.console_events = events == "console";
  if (v.given("logs_specs")) {
    throw UsageError(v.source("logs_specs") + "=" + v.str("logs_specs") +
                     ": torchrun's LogsSpecs are Python plug-ins, which ddprun cannot load; "
                     "--log_dir, --redirects and --tee say where worker logs go");
  }
  cfg.tracking_interval =
      parse_seconds(v.source("tracking_interval"), v.str("tracking_interval"), false);
}

// Flags that only act in some job shapes: each one the job would ignore is one warning.
void note_flags_this_job_ignores(const Values& v, const LaunchConfig& cfg,
                                 std::vector<std::string>& notices) {
  const auto& checks = cfg.agent.preflight.checks;
  bool link = std::find(checks.begin(), checks.end(), agent::Check::kLink) != checks.end();
  if (link && cfg.rendezvous.max_nodes < 2) {
    notices.push_back(v.source("preflight") + "=" + v.str("preflight") +
                      ": the link check probes between nodes; this job has one, so it is skipped");
  }
  if (cfg.agent.stragglers.exclude && !cfg.rendezvous.elastic()) {
    notices.push_back(v.source("straggler_action") +
                      "=exclude: only an elastic job (--nnodes=MIN:MAX with c10d or etcd) can "
                      "go on without a node; stragglers are only named");
  }
}

}  // namespace

LaunchConfig parse_command_line(int argc, const char* const argv[], const EnvLookup& env,
                                const DeviceCounter& devices,
                                const NodeAddressLookup& node_address) {
  po::options_description desc = make_description();
  SplitArgs split = split_argv(argc, argv, desc);
  po::variables_map vm;
  try {
    po::parsed_options parsed = po::command_line_parser(split.option_tokens)
                                    .options(desc)
                                    .style(po::command_line_style::unix_style)
                                    .run();
    keep_last_of_each(parsed);
    po::store(parsed, vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  Values v(option_table(), vm, env);

  LaunchConfig cfg;
  cfg.help = v.flag("help");
  cfg.version = v.flag("version");
  if (v.given("print_completion")) cfg.print_completion = v.str("print_completion");
  if (cfg.help || cfg.version || cfg.print_completion) return cfg;

  cfg.log_level = v.str("log_level");
  if (!v.given("log_level")) cfg.log_level = env("DDPRUN_LOG_LEVEL").value_or(cfg.log_level);
  if (split.script_and_args.empty()) {
    throw UsageError("missing the training script: ddprun [options] script [args...]");
  }
  cfg.script = split.script_and_args.front();
  cfg.script_args.assign(split.script_and_args.begin() + 1, split.script_and_args.end());

  cfg.kind = script_kind(v);

  agent::AgentConfig& a = cfg.agent;
  // A controller (--hostfile/--hosts) runs no rendezvous and no workers itself: each
  // agent resolves those on its own host.
  bool controller = v.given("hostfile") || v.given("hosts");
  if (!controller) {
    SlurmDefaults slurm = apply_slurm_environment(v, env, node_address, cfg.notices);
    apply_master_environment(v, env);
    fill_rendezvous(v, env, cfg, slurm.token_by_munge);
    if (slurm.c10d_is_host && !cfg.rendezvous.c10d_is_host) {
      cfg.rendezvous.c10d_is_host = slurm.c10d_is_host;
    }
    if (v.source("master_port") != "MASTER_PORT") cfg.port_hint = slurm.port_hint;
  }
  fill_worker_spec(v, env, a.spec);
  a.spec.local_world_size = controller ? 1 : resolve_nproc(v, devices);
  if (!controller) check_ranks_filter(v, a.spec, cfg.notices);
  a.spec.entrypoint_name = cfg.script;
  if (a.spec.virtual_local_rank) {
    a.spec.virtual_devices = virtual_local_devices(v, env, a.spec.local_world_size);
  }
  fill_process_options(v, env, a);
  fill_hang_options(v, a.hang);
  fill_preflight_options(v, a.spec.local_world_size, env("CUDA_VISIBLE_DEVICES"), a.preflight);
  // The link check: each node probes the next member, so each must know them all.
  const auto& checks = a.preflight.checks;
  cfg.rendezvous.members_everywhere =
      std::find(checks.begin(), checks.end(), agent::Check::kLink) != checks.end();
  a.numa_mode = agent::parse_numa_mode(v.source("numa_binding"), v.str("numa_binding"));
  a.stop_on_stdin_close = v.flag("stop_on_stdin_close");
  a.stdin_timeout =
      parse_seconds(v.source("stdin_timeout"), v.str("stdin_timeout"), /*allow_zero=*/true);
  cfg.ssh = read_ssh_job(v, env, split.options, split.exports, split.script_and_args);
  cfg.tracking = !v.flag("no_tracking");
  cfg.tracking_dir = v.str("tracking_dir");
  if (cfg.tracking_dir.empty()) throw UsageError(v.source("tracking_dir") + "=: must not be empty");
  cfg.run_name = v.str("run_name");
  // Where the job writes: preflight's disk check looks there.
  if (!a.log_dir.empty()) a.preflight.write_dirs.push_back(a.log_dir);
  if (cfg.tracking) a.preflight.write_dirs.push_back(cfg.tracking_dir);
  fill_metrics_options(v, a.metrics);
  a.metrics.backend = rendezvous::backend_name(cfg.rendezvous.backend);
  fill_straggler_and_goodput_options(v, /*check_dirs=*/!controller, a);
  fill_run_options(v, cfg);
  if (!controller) note_flags_this_job_ignores(v, cfg, cfg.notices);
  return cfg;
}

std::string help_text() {
  std::ostringstream out;
  out << "usage: ddprun [options] training_script [script args...]\n\n"
         "Launches nproc_per_node workers with torchrun's environment (RANK, WORLD_SIZE,\n"
         "LOCAL_RANK, MASTER_ADDR, ...) and supervises them. Python scripts run as\n"
         "$PYTHON_EXEC (default python3) -u [-m] script args; with --no_python the script\n"
         "is executed directly. ${local_rank} in script arguments is substituted.\n"
         "Every option can also be set as PET_<NAME>, e.g. PET_NPROC_PER_NODE=4.\n\n"
      << make_description()
      << "\nCommands:\n"
         "  ddprun runs VERB ...      the jobs' experiment runs: list, show, export, report,\n"
         "                            repair, merge, serve (ddprun runs --help)\n"
         "  ddprun completion SHELL   shell completion for bash, zsh or tcsh, e.g.\n"
         "                            source <(ddprun completion bash)\n"
         "  ddprun reference man|markdown   this reference as a manual page or Markdown\n"
         "\nExit status:\n";
  for (const auto& [code, meaning] : exit_statuses()) {
    out << "  " << code << std::string(7 - std::string_view(code).size(), ' ');
    // Wrapped at 80 columns, continuation lines under the meaning.
    size_t column = 9;
    std::istringstream words(meaning);
    bool first = true;
    for (std::string word; words >> word; first = false) {
      if (!first && column + 1 + word.size() > 80) {
        out << "\n" << std::string(9, ' ');
        column = 9;
      } else if (!first) {
        out << ' ';
        ++column;
      }
      out << word;
      column += word.size();
    }
    out << "\n";
  }
  return out.str();
}

std::span<const std::pair<const char*, const char*>> exit_statuses() {
  static constexpr std::pair<const char*, const char*> kStatuses[] = {
      {"0", "every worker exited 0"},
      {"N", "the root-cause (first failed) worker exited with N"},
      {"128+S",
       "the root-cause worker was killed by signal S, or ddprun itself received signal S "
       "(SIGINT, SIGTERM, SIGHUP, SIGQUIT)"},
      {"2", "usage error"},
      {"122", "this node failed its preflight (--preflight, --health_check) and did not join"},
      {"123", "elastic: this node was dropped from the job (the others heard no heartbeat from it, or it was the straggler --straggler_action=exclude left out) and left; the job went on without it"},
      {"124", "a rank hung (--hang_timeout) and no restart was left"},
      {"125",
       "the job hung or failed again after --max_no_progress_restarts restarts that got no "
       "rank past the step where it stopped before (a crash loop)"},
      {"126", "the script or program is not executable"},
      {"127", "the script, program or Python interpreter was not found"},
      {"255", "--hostfile/--hosts: a host could not be reached over ssh"},
  };
  return kStatuses;
}

}  // namespace ddprun::launcher
