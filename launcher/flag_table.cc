// The flag table: every option ddprun takes, its default and its help, from which the
// parser, --help, the completion scripts and the references are all made.
#include "launcher/cli.h"

namespace ddprun::launcher {
namespace {

// torchrun's flags first, then ddprun's own.
constexpr OptionDef kOptions[] = {
    {"nnodes", 0, false, "1:1", "number of nodes, N or MIN:MAX (elastic)"},
    {"nproc_per_node", 0, false, "1", "workers per node: an integer, cpu, gpu, xpu or auto",
     "cpu gpu xpu auto"},
    {"rdzv_backend", 0, false, "static", "rendezvous backend: static, c10d or etcd",
     "static c10d etcd"},
    {"rdzv_endpoint", 0, false, "", "rendezvous endpoint, host[:port]"},
    {"rdzv_id", 0, false, "none", "job id shared by all nodes (TORCHELASTIC_RUN_ID)"},
    {"rdzv_conf", 0, false, "", "rendezvous settings, key=value,key=value"},
    {"standalone", 0, true, "0", "single-node job with a fresh run id and a free port"},
    {"max_restarts", 0, false, "0", "restarts of the worker group before failing"},
    {"node_failure_limit", 0, false, "0",
     "elastic jobs: a node whose workers failed this many times is quarantined, kept out of "
     "the rounds for --quarantine_cooldown (0: never)"},
    {"quarantine_cooldown", 0, false, "300",
     "with --node_failure_limit: seconds a quarantined node stays out the first time; each "
     "later time doubles it"},
    {"monitor_interval", 0, false, "5",
     "accepted for torchrun compatibility; ddprun is event-driven"},
    {"start_method", 0, false, "spawn", "accepted for compatibility: spawn, fork or forkserver",
     "spawn fork forkserver"},
    {"role", 0, false, "default", "worker role (ROLE_NAME, log prefix)"},
    {"module", 'm', true, "0", "run the script as a Python module (python -m)"},
    {"no_python", 0, true, "0", "execute the script directly instead of through Python"},
    {"run_path", 0, true, "0", "accepted for compatibility; the script runs as python -u script"},
    {"log_dir", 0, false, "", "base directory for per-attempt logs and error files", "<dir>"},
    {"redirects", 'r', false, "0", "send worker streams to log files only: 0-3 or 0:1,1:2",
     "0 1 2 3"},
    {"tee", 't', false, "0", "copy worker streams to log files as well: 0-3 or 0:1,1:2", "0 1 2 3"},
    {"local_ranks_filter", 0, false, "", "show only these local ranks on the console, e.g. 0,1"},
    {"node_rank", 0, false, "0", "this node's rank (static rendezvous)"},
    {"master_addr", 0, false, "127.0.0.1", "address of node 0 (static rendezvous)"},
    {"master_port", 0, false, "29500", "port of the store on node 0 (static rendezvous)"},
    {"local_addr", 0, false, "", "this node's address as advertised to others"},
    {"grace_period", 0, false, "30", "seconds between SIGTERM and SIGKILL when stopping workers"},
    {"log_line_prefix_template", 0, false, "",
     "console prefix: ${role_name} ${local_rank} ${rank} ${node_rank} ${host}"},
    {"log_level", 0, false, "warn", "ddprun's own log level: trace..critical, off",
     "trace debug info warn error critical off"},
    {"tracking_dir", 0, false, "./ddprun-runs", "where the job's experiment run is kept", "<dir>"},
    {"run_name", 0, false, "", "a name for the run (default: its id)"},
    {"no_tracking", 0, true, "0", "do not record an experiment run"},
    {"tracking_interval", 0, false, "15", "seconds between system metric samples"},
    {"hang_timeout", 0, false, "off",
     "stop (and restart) the job when a rank makes no progress for SECONDS, or auto: a "
     "safety factor x the longest interval seen; progress is any tracking call or output line",
     "off auto"},
    {"hang_initial_timeout", 0, false, "1800",
     "seconds a rank may take to its first progress (auto: its first few)"},
    {"hang_safety_factor", 0, false, "5", "auto: the timeout is this x the longest interval"},
    {"hang_min_timeout", 0, false, "60", "auto: the timeout is never shorter (seconds)"},
    {"max_no_progress_restarts", 0, false, "3",
     "hangs or failures in a row, after restarts that got no rank past the step where the "
     "last one stopped (or, with no step numbers, timed no step), before ddprun stops with "
     "exit status 125 instead of restarting again"},
    {"straggler_warning", 0, false, "300",
     "name a rank still running this many seconds after every other rank of its node exited "
     "0, and a node still running this long after every rank of this one did (a rank stuck "
     "at its end); a warning only, with or without --hang_timeout (0: never)"},
    {"straggler_threshold", 0, false, "1.3",
     "name a rank (or node) whose own work per step, time not spent waiting for the other "
     "ranks, is over this many times the job's median in two windows in a row (0: off)"},
    {"straggler_window", 0, false, "5",
     "seconds of steps each straggler judgement compares (at most 3600)"},
    {"straggler_action", 0, false, "warn",
     "warn: a straggler is named; exclude: also, its node leaves the job and the others go "
     "on in a new round, where MIN or a waiting spare allows (elastic jobs)",
     "warn exclude"},
    {"checkpoint_dir", 0, false, "",
     "where the job writes its checkpoints, an existing directory: the newest file there is "
     "taken as its last durable state in goodput accounting (or call "
     "ddprun_tracking.checkpoint())",
     "<dir>"},
    {"signals_to_handle", 0, false, "SIGTERM,SIGINT,SIGHUP,SIGQUIT",
     "signals ddprun sends on to every worker and then stops the job (SIGKILL after "
     "--grace_period)"},
    {"signals_to_forward", 0, false, "SIGUSR1,SIGUSR2",
     "signals ddprun sends on to every worker while the job goes on (e.g. to checkpoint "
     "before a time limit); in both lists, a signal stops the job. SIGUSR1/2 in neither are "
     "ignored with a warning"},
    {"hostfile", 0, false, "",
     "start the job on every host listed (a line per host: host [slots=N]) over ssh, one "
     "agent per host, the first host as master",
     "<file>"},
    {"hosts", 0, false, "", "like --hostfile, inline: a,b:4,c (:N gives slots)"},
    {"include", 0, false, "", "the hosts (and slots) to use: a@b:0,2 (DeepSpeed's syntax)"},
    {"exclude", 0, false, "", "the hosts (and slots) to leave out, same syntax"},
    {"ssh_cmd", 0, false, "ssh", "the ssh command with its options (also DDPRUN_SSH)"},
    {"remote_ddprun", 0, false, "", "ddprun's path on the other hosts (default: this one's)"},
    {"ssh_timeout", 0, false, "30", "seconds to reach a host before the launch fails"},
    {"export", 0, false, "",
     "VAR or VAR=value for the agents on every host (repeatable; NCCL_*, PYTHON*, CUDA_*, "
     "OMP_*, TORCH_*, WANDB_*, PET_* and .ddprun_env go anyway)"},
    {"stop_on_stdin_close", 0, true, "0",
     "stop the job when standard input closes (how an agent started over ssh notices that "
     "its controller is gone)"},
    {"stdin_timeout", 0, false, "0",
     "with --stop_on_stdin_close: stop too when nothing arrives on standard input for this "
     "many seconds (0: never; the controller of --hosts sends a line every third of it)"},
    {"ssh_keepalive", 0, false, "5",
     "seconds between keep-alives on every ssh connection (--hosts/--hostfile); a host or "
     "controller silent for 3 of them is taken as lost and the job stops"},
    {"slurm", 0, false, "auto",
     "auto: under Slurm (SLURM_JOB_ID set) the step gives --nnodes, --node_rank, the master "
     "address and port and --rdzv_id where not given; off: ignore Slurm's environment",
     "auto off"},
    {"numa_binding", 0, false, "off",
     "bind each worker to CPUs near its GPU (or, without GPUs, spread over the NUMA "
     "nodes): node, socket, exclusive (own physical cores) or core-complex (own L3 group)",
     "off node socket exclusive core-complex"},
    {"preflight", 0, false, "all",
     "what this node checks before it joins a round (a node that fails does not join): all "
     "(the default) is disk (1 GiB free where the job writes), shm (/dev/shm: 128 MiB a "
     "worker, up to 1 GiB), nofile (open files >= 1024), memory (1 GiB available), gpu "
     "(through NVML, where a driver is: every GPU the workers may use opens, has no "
     "uncorrectable ECC errors, no retired pages or row remaps awaiting a reset, and no "
     "clocks held down by hardware or heat) and clock (jobs of several nodes: the wall clock "
     "within 5 s of the rendezvous host's); link, on request, adds a probe of the links "
     "(elastic jobs, as a round of 2 nodes or more forms: each probes the next one's link; a "
     "node or link far slower than the others is named). Named checks add to the defaults "
     "(--preflight=link), -NAME leaves one out (--preflight=-shm), none starts from nothing "
     "(--preflight=none, --preflight=none,disk)",
     "all none disk shm nofile memory gpu clock link"},
    {"health_check", 0, false, "",
     "the site's own check before this node's first round: a command run by /bin/sh that "
     "must exit 0 (e.g. 'dcgmi diag -r 1'); its last lines say why it failed"},
    {"health_check_timeout", 0, false, "60",
     "seconds --health_check may take; a check still running then fails"},
    {"metrics_port", 0, false, "",
     "serve Prometheus metrics of this agent at http://HOST:PORT/metrics (0: a free port, "
     "printed); none by default"},
    {"metrics_host", 0, false, "127.0.0.1",
     "with --metrics_port: the address it listens on (loopback by default; 0.0.0.0 or :: for "
     "all)"},
    {"metrics_sd_file", 0, false, "",
     "with --metrics_port: group rank 0 keeps a Prometheus file_sd_configs list of every "
     "agent's endpoint in this file, updated as rounds change (its directory must exist)"},
    {"event_log_handler", 0, false, "null",
     "torchrun 2.x's: null, or console (ddprun's agent events as JSON lines on stderr); the "
     "run records them either way",
     "null console"},
    {"logs_specs", 0, false, "",
     "torchrun 2.x's Python plug-in for where logs go: not available in ddprun (--log_dir, "
     "--redirects and --tee say where worker logs go)"},
    {"shutdown_timeout", 0, false, "",
     "torchrun 2.14's name for --grace_period (also TORCH_ELASTIC_SHUTDOWN_TIMEOUT)"},
    {"virtual_local_rank", 0, true, "0",
     "every worker gets LOCAL_RANK=0 and a CUDA_VISIBLE_DEVICES of its own GPU alone (its "
     "local rank's entry of the inherited list, else the local rank)"},
    {"duplicate_stdout_filters", 0, false, "",
     "also write every worker stdout line that contains one of these comma-separated strings "
     "(,, for a comma) to filtered_stdout.log in the attempt's log directory"},
    {"duplicate_stderr_filters", 0, false, "",
     "the same for stderr lines, into filtered_stderr.log"},
    {"print_completion", 0, false, "",
     "print the shell's completion script and exit (as `ddprun completion SHELL`)",
     "bash zsh tcsh"},
    {"help", 'h', true, "0", "print this help and exit"},
    {"version", 0, true, "0", "print the version and exit"},
};

}  // namespace

std::span<const OptionDef> option_table() { return kOptions; }

}  // namespace ddprun::launcher
