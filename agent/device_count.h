#pragma once

#include <optional>
#include <string>

namespace ddprun::agent {

/// CPUs this process may run on (its affinity mask), at least 1.
int count_cpus();

/// CUDA devices a worker would see: the physical GPUs (NVML, loaded at run time, or
/// the NVIDIA driver's /proc entries; CUDA itself is never linked) narrowed by
/// CUDA_VISIBLE_DEVICES. 0 on a machine without a GPU.
int count_visible_gpus();

/// Intel GPUs (`--nproc_per_node=xpu`): render devices under /sys/class/drm driven by
/// i915 or xe. 0 without one.
int count_xpus();

/// How many of `physical` devices a CUDA_VISIBLE_DEVICES value leaves visible.
/// Follows CUDA: entries are indices or GPU-/MIG- identifiers, the list ends at the
/// first invalid entry, an empty value hides every device, unset (nullopt) hides none.
int apply_cuda_visible_devices(const std::optional<std::string>& visible, int physical);

}  // namespace ddprun::agent
