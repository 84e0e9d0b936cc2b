"""ddprun's start-up hook for Python workers, on their path with --hang_timeout or the
worker watchdog (TORCHELASTIC_ENABLE_FILE_TIMER=1), whose reaping takes stacks too.

When a rank hangs, ddprun sends DDPRUN_STACK_SIGNAL; faulthandler (a C-level handler,
so it works while the main thread is blocked in a collective or holds the GIL) then
writes every thread's Python stack to DDPRUN_STACK_FILE. Afterwards the
sitecustomize this file shadows (Debian's, a virtualenv's, the user's) runs as usual.
"""
import os
import sys


def _ddprun_register_stack_dump():
    signum = os.environ.get("DDPRUN_STACK_SIGNAL")
    path = os.environ.get("DDPRUN_STACK_FILE")
    if not signum or not path:
        return None
    try:
        import faulthandler

        out = open(path, "a")  # noqa: SIM115 - kept open for the process's life
        faulthandler.register(int(signum), file=out, all_threads=True, chain=False)
        return out
    except (OSError, ValueError, RuntimeError):
        return None  # a hook must never stop the program


def _ddprun_run_shadowed_sitecustomize():
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_ddprun_stack_file = _ddprun_register_stack_dump()
_ddprun_run_shadowed_sitecustomize()
