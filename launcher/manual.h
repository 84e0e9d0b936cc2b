#pragma once

#include <string>

namespace ddprun::launcher {

/// ddprun's manual page (roff, section 1), generated from the flag table that parses
/// the command line and from the exit statuses --help lists: it cannot drift from
/// either. `ddprun reference man`; the build installs it as ddprun.1.
std::string man_page();

/// The same reference as Markdown: docs/flags.md, which the suite checks against this.
/// `ddprun reference markdown`.
std::string flag_reference_markdown();

}  // namespace ddprun::launcher
