#pragma once

#include <string>

namespace ddprun::launcher {

/// `ddprun completion bash|zsh|tcsh` (and torchrun 2.14's spelling, `--print-completion
/// SHELL`): the shell's completion script, generated from the
/// flag table that parses the command line (option_table()), so that it never drifts
/// from the flags: every long flag in both spellings, the values a flag takes where
/// they are few (or files and directories), the `runs` subcommands, and files after
/// the script. zsh's is bash's through bashcompinit. Throws UsageError naming any
/// other shell.
std::string completion_script(const std::string& shell);

}  // namespace ddprun::launcher
