#pragma once

namespace ddprun::launcher {

/// `ddprun runs list|show RUN|export RUN --format csv|jsonl [--tracking_dir D]`:
/// reads runs, also while their job runs. Returns the exit code (2 for bad usage,
/// 1 for an unknown run or unreadable database), printing one clear line on error.
int runs_command(int argc, const char* const argv[]);

}  // namespace ddprun::launcher
