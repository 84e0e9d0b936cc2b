#pragma once

#include <string>
#include <string_view>

namespace ddprun::launcher {

/// The directories of ddprun's Python files that workers import: the tracking client
/// (`ddprun_tracking.py`) and the start-up hook (`sitecustomize.py`, which dumps stacks).
struct PythonDirs {
  std::string tracking;
  std::string hook;
};

/// Installed beside the binary (`<prefix>/share/ddprun/python` and its `hook/`), else in
/// the source tree it was built from (not for a portable binary), else the copies
/// built into it, written once per user and content under
/// `$TMPDIR/ddprun-<uid>/` (a directory only that user may write). Empty paths, after
/// one warning, when none can be had.
PythonDirs python_dirs();

/// The bytes of a Python file built into ddprun ("ddprun_tracking.py",
/// "sitecustomize.py"); empty for any other name. Generated at build time.
std::string_view python_file(std::string_view name);

}  // namespace ddprun::launcher
