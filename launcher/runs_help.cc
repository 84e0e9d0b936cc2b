#include "launcher/runs_help.h"

namespace ddprun::launcher {
namespace {

constexpr const char* kRunsUsage =
    "usage: ddprun runs VERB [RUN] [flags] [--tracking_dir DIR]  (default ./ddprun-runs)\n"
    "\n"
    "  list [--limit N] [--status S]    the runs, newest first\n"
    "  show RUN                         one run: its facts, config, metrics and events\n"
    "  export RUN [--format csv|jsonl|tfevents] [-o FILE|DIR]\n"
    "                                   its points, config and summary (standard output\n"
    "                                   unless -o)\n"
    "  report RUN -o FILE.html          one self-contained page of the run\n"
    "  repair RUN                       fold in what a killed launcher left\n"
    "  merge PART_DIR|RUN_DIR           fold in a node's part, or a crashed run's files\n"
    "  serve [--port P] [--host H]      the dashboard (default 127.0.0.1:6007)\n"
    "\n"
    "RUN is a run's id, its --run_name, a unique prefix of its id, or latest.\n"
    "`ddprun runs VERB --help` says more of each.\n";

// Each verb's own help: `ddprun runs VERB --help`.
struct VerbHelp {
  const char* verb;
  const char* text;
};
constexpr VerbHelp kVerbHelp[] = {
    {"list",
     "usage: ddprun runs list [--limit N] [--status S] [--tracking_dir DIR]\n\n"
     "The runs under DIR (default ./ddprun-runs), newest first: name, status, start,\n"
     "duration, nodes x ranks, restarts, exit code and root cause.\n"
     "  --limit N    the newest N only\n"
     "  --status S   only runs that are S: running, finished, failed, killed or crashed\n"},
    {"show",
     "usage: ddprun runs show RUN [--tracking_dir DIR]\n\n"
     "One run: its facts, the workers' config and summary (with the ranks that logged\n"
     "each value), per-rank metric summaries, system metrics and the event timeline\n"
     "(a hang's culprits and stacks included).\n"},
    {"export",
     "usage: ddprun runs export RUN [--format csv|jsonl|tfevents] [-o FILE|DIR] [--tracking_dir DIR]\n\n"
     "The run's metric points, then its config and summary entries:\n"
     "  jsonl (the default)  one JSON object a line; config and summary with \"kind\"\n"
     "  csv                  node,rank,attempt,seq,wall,step,key,value; config and\n"
     "                       summary as rows keyed config/<key> and summary/<key>\n"
     "  tfevents             TensorBoard event files under DIR (default RUN-tfevents)\n"
     "csv and jsonl go to standard output unless -o names a file.\n"},
    {"report",
     "usage: ddprun runs report RUN -o FILE.html [--tracking_dir DIR]\n\n"
     "One self-contained HTML page of the run, drawn as the dashboard draws it; it loads\n"
     "nothing from the network.\n"},
    {"repair",
     "usage: ddprun runs repair RUN [--tracking_dir DIR]\n\n"
     "Folds into run.db what a killed launcher left unfolded: its own records, its\n"
     "workers' streams and the other nodes' parts. `runs show` says when a run needs\n"
     "it. Refused while the run's launcher still runs.\n"},
    {"merge",
     "usage: ddprun runs merge PART_DIR|RUN_DIR [--tracking_dir DIR]\n\n"
     "Folds in a node's part of a multi-node run (a directory <run>/parts/<host>.<pid>\n"
     "the primary never received), or a crashed run's files.\n"},
    {"serve",
     "usage: ddprun runs serve [--port P] [--host H] [--tracking_dir DIR]\n\n"
     "The dashboard of every run under DIR, live while jobs run (default\n"
     "127.0.0.1:6007; --port 0 takes a free port, --host 0.0.0.0 serves every interface).\n"},
};

}  // namespace

const char* runs_usage() { return kRunsUsage; }

const char* verb_help(const std::string& verb) {
  for (const auto& h : kVerbHelp) {
    if (verb == h.verb) return h.text;
  }
  return nullptr;
}

}  // namespace ddprun::launcher
