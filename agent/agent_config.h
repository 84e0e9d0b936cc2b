#pragma once

#include <signal.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "agent/hang/hang_options.h"
#include "agent/numa_binding.h"
#include "agent/preflight/preflight_options.h"
#include "agent/worker_spec.h"

namespace ddprun::agent {

/// What the agent itself uses to run one node's share of a job (the rendezvous gets
/// its own parameters: rendezvous/rendezvous_params.h). Built by the launcher from the
/// command line; plain data.
struct AgentConfig {
  WorkerSpec spec;

  /// How many nodes the job may have (the rendezvous' bounds: the agent judges with
  /// them whether a smaller job may go on, and whether it has peers at all).
  int min_nodes = 1;
  int max_nodes = 1;
  /// The job's id (--rdzv_id): TORCHELASTIC_RUN_ID, the log directory's name.
  std::string run_id = "none";
  /// This node's name in messages and the run; empty: the machine's host name.
  std::string host;

  /// Base of torchrun's log layout; empty means a fresh temporary directory that is
  /// removed again when the job succeeds.
  std::string log_dir;
  /// Time workers get between SIGTERM and SIGKILL when they are stopped.
  std::chrono::milliseconds grace_period{30'000};
  /// When a worker counts as hung, and what ddprun does then.
  HangOptions hang;
  /// What this node checks before it joins a round.
  PreflightOptions preflight;
  /// torchrun's worker watchdog FIFO (TORCHELASTIC_ENABLE_FILE_TIMER=1; the path from
  /// TORCHELASTIC_TIMER_FILE or made up); empty: no watchdog.
  std::string timer_file;
  /// Where ddprun's Python start-up hook (sitecustomize.py) lives: put first on Python
  /// workers' path (it takes their stacks, and gives Debian's PyTorch 2.x, built
  /// without libuv, a store client it can make). Empty: none.
  std::string python_hook_dir;
  /// Where ddprun_tracking.py lives: on Python workers' path after the hook, whether the
  /// job is tracked or not (its calls do nothing outside a tracked job). Empty: none.
  std::string python_client_dir;
  /// --numa_binding, and each local rank's CPUs planned from it once per agent (empty:
  /// no binding).
  NumaMode numa_mode = NumaMode::kOff;
  std::vector<CpuBinding> cpu_bindings;
  /// Signals sent on to every worker, after which the job stops (--signals_to_handle,
  /// torchrun's) or goes on (--signals_to_forward). SIGUSR1 and SIGUSR2 in neither
  /// list are ignored with a warning: they never kill ddprun.
  std::vector<int> stop_signals{SIGTERM, SIGINT, SIGHUP, SIGQUIT};
  std::vector<int> forward_signals{SIGUSR1, SIGUSR2};
  /// --signals_to_handle as given: the workers' TORCHELASTIC_SIGNALS_TO_HANDLE, as
  /// torchrun 2.x passes it (torch's own process contexts read it).
  std::string signals_to_handle = "SIGTERM,SIGINT,SIGHUP,SIGQUIT";
  /// Stop the job (as on SIGTERM) when standard input reaches its end: an agent started
  /// over ssh by a controller notices so that the controller or its connection is gone.
  bool stop_on_stdin_close = false;
  /// With stop_on_stdin_close: stop too when nothing arrives on standard input for this
  /// long (0 = never). The controller sends a newline every third of it, so a frozen
  /// controller or a connection that dropped without a word is noticed.
  std::chrono::milliseconds stdin_timeout{0};
  /// Value exported as OMP_NUM_THREADS when the user did not set it ("" = leave unset).
  std::string omp_num_threads;

  /// Straggler detection (--straggler_threshold, --straggler_window): every window,
  /// each rank's own work per step against the job's median.
  struct Stragglers {
    double threshold = 1.3;  // 0: off
    std::chrono::milliseconds window{5000};
    /// --straggler_action=exclude: group rank 0 leaves a straggler's node out of the
    /// next round where MIN or a waiting spare allows (warn: only named).
    bool exclude = false;
    bool enabled() const { return threshold > 0; }
  } stragglers;

  /// Where the job writes its checkpoints (--checkpoint_dir): the newest file there is
  /// its last durable state, for goodput accounting ("": the job says it itself).
  std::string checkpoint_dir;

  /// The agent's Prometheus endpoint (--metrics_port, --metrics_host, --metrics_sd_file).
  struct Metrics {
    std::optional<uint16_t> port;  // none: no endpoint; 0: a free port, printed
    std::string host = "127.0.0.1";
    /// Where group rank 0 keeps a file_sd_configs list of every agent's endpoint ("": none).
    std::string sd_file;
    std::string backend;  // the rendezvous backend's name, a label of ddprun_info
  } metrics;
};

}  // namespace ddprun::agent
