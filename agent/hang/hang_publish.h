#pragma once

#include <string>

#include "agent/hang/hang_watch.h"
#include "tracking/run_observer.h"

namespace ddprun::agent {

/// Tells everyone what a hang's verdict found: the whole report (every rank's stacks;
/// this node's, where the verdict was adopted) to the file at `path`, the headline and
/// the summary on stderr, and, from the judging node, the `hang` event to the run
/// (`observer` may be null). `reason` is the job's root cause by now.
void publish_hang(const HangWatch::Verdict& verdict, const std::string& trigger,
                  const std::string& reason, const std::string& path, int attempt,
                  tracking::RunObserver* observer);

}  // namespace ddprun::agent
