"""The torchrun references the benchmarks run beside ddprun: Debian bookworm's 1.13 (this
interpreter's) and, where scripts/torch_root.sh has made the forky root, Debian's 2.14
inside it (tests/torch2/in_root.sh: a mount namespace and a chroot, a few milliseconds
of torchrun's seconds). Both through tests/torch/torchrun_compat.py, which changes only
what keeps Debian's torchrun from running at all."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPAT = os.path.join(ROOT, "tests", "torch", "torchrun_compat.py")
FORKY = os.path.join(os.environ.get("DDPRUN_TORCH_ROOTS", "/var/cache/ddprun/torch-roots"),
                     "forky")


def torchruns():
    """[(label, command prefix)] of the torchruns this machine has, oldest first."""
    refs = [("torchrun 1.13", [sys.executable, COMPAT])]
    if os.path.exists(os.path.join(FORKY, ".ddprun-root-ready")):
        refs.append(("torchrun 2.14", [os.path.join(ROOT, "tests", "torch2", "in_root.sh"),
                                       FORKY, "python3", COMPAT]))
    else:
        print(f"(no torchrun 2.14: {FORKY} is not made; scripts/torch_root.sh forky makes it)",
              file=sys.stderr)
    return refs
