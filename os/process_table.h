#pragma once

#include <sys/types.h>

#include <functional>
#include <vector>

#include "os/proc_stat.h"

namespace ddprun::os {

/// Live (non-zombie) direct children of `parent`, read from /proc.
std::vector<pid_t> children_of(pid_t parent);

/// Live (non-zombie) children of this process, from the kernel's per-thread children
/// lists (/proc/self/task/<tid>/children): a few small reads instead of a scan of every
/// process; the scan where the kernel lacks those lists.
std::vector<pid_t> own_children();

/// Calls `visit(stat)` for every descendant of this process (children, theirs, ...),
/// zombies included, walking the kernel's children lists: as many reads as the tree
/// has processes, not as the machine has. Every process where the kernel keeps no
/// such lists.
void for_each_descendant(const std::function<void(const ProcStat&)>& visit);

/// For a child subreaper (PR_SET_CHILD_SUBREAPER), whose every orphaned descendant
/// becomes its child: SIGKILLs every child but `spare`, then the descendants that come
/// to it as those die, until only zombies are left (bounded). Reads nothing where the
/// process has no child but "clone" children (no exit signal), which it leaves alone.
void kill_own_children(pid_t spare);

}  // namespace ddprun::os
