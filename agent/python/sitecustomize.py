"""ddprun's start-up hook, first on every Python worker's path. It does three things:

- Stacks. When a rank hangs (--hang_timeout) or the worker watchdog reaps one, ddprun
  sends DDPRUN_STACK_SIGNAL; faulthandler (a C-level handler, so it works while the main
  thread is blocked in a collective or holds the GIL) then writes every thread's Python
  stack to DDPRUN_STACK_FILE.
- A store client Debian's PyTorch can make. PyTorch 2.4+ asks TCPStore for its libuv
  backend by default, and `env://` (torch.distributed.rendezvous) does so without a way
  out on the path every launched worker takes to the agent's store
  (TORCHELASTIC_USE_AGENT_STORE: no use_libuv passed, USE_LIBUV not read). A PyTorch
  built without libuv (Debian's 2.x) then refuses to make the client, and
  init_process_group fails. Once that module is imported, the stores it makes are made
  without libuv where, and only where, the build refuses libuv: a build that has it
  never takes that path.
- NCCL's error handling under the name PyTorch 1.x reads. ddprun sets
  TORCH_NCCL_ASYNC_ERROR_HANDLING, as torchrun 2.x does; PyTorch 2.x warns in every rank
  about the old name NCCL_ASYNC_ERROR_HANDLING, which 1.x alone reads. Once a 1.x torch
  is imported, the old name gets the new one's value (unless the job set it).

The last two act as the torch module concerned is imported: nothing of torch is
imported here.

Afterwards the sitecustomize this file shadows (Debian's, a virtualenv's, the user's)
runs as usual.
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


_DDPRUN_NO_LIBUV = "without libuv support"  # TCPStore's refusal, 2.4 to 2.14
_DDPRUN_USE_LIBUV_POSITION = 8  # TCPStore(host, port, world, master, timeout, wait, tenant, fd, libuv)


def _ddprun_without_libuv_where_refused(tcp_store):
    """TCPStore as torch.distributed.rendezvous calls it, asked again without libuv when
    the build refuses libuv."""

    def make(*args, **kwargs):
        try:
            return tcp_store(*args, **kwargs)
        except RuntimeError as e:
            if _DDPRUN_NO_LIBUV not in str(e):
                raise
        if len(args) > _DDPRUN_USE_LIBUV_POSITION:
            args = args[:_DDPRUN_USE_LIBUV_POSITION] + (False,) + args[_DDPRUN_USE_LIBUV_POSITION + 1 :]
        else:
            kwargs["use_libuv"] = False
        return tcp_store(*args, **kwargs)

    return make


def _ddprun_rendezvous_loaded(module):
    if hasattr(module, "TCPStore"):
        module.TCPStore = _ddprun_without_libuv_where_refused(module.TCPStore)


def _ddprun_torch_version_loaded(module):
    if str(getattr(module, "__version__", "")).startswith("1."):
        os.environ.setdefault(
            "NCCL_ASYNC_ERROR_HANDLING", os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
        )


class _DdprunTorchFinder:
    """Finds the torch modules below as usual and, once one is loaded, runs its
    function on it (see the module's docstring)."""

    AFTER_LOAD = {
        "torch.distributed.rendezvous": _ddprun_rendezvous_loaded,
        "torch.version": _ddprun_torch_version_loaded,
    }

    def find_spec(self, name, path=None, target=None):
        after = self.AFTER_LOAD.get(name)
        if after is None:
            return None
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path, target)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        load = loader.exec_module

        def exec_module(module):
            load(module)
            after(module)

        loader.exec_module = exec_module
        return spec


def _ddprun_run_shadowed_sitecustomize():
    # importlib.machinery only: importlib.util would import contextlib, functools and
    # collections, 4 ms of every worker's start.
    from importlib.machinery import PathFinder

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = type(sys)(spec.name)
    module.__spec__, module.__loader__, module.__file__ = spec, spec.loader, spec.origin
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_ddprun_stack_file = _ddprun_register_stack_dump()
sys.meta_path.insert(0, _DdprunTorchFinder())
_ddprun_run_shadowed_sitecustomize()
