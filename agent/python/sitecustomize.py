"""ddprun's start-up hook, first on every Python worker's path. It does four things:

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

- Step timing for straggler detection (PyTorch 2.0+). Each optimizer step ends a
  training step; the rank's own work in it is the step's time less what it spent in
  backward() (where DDP waits for every rank's gradients) and in blocking collectives
  called from Python. Both go to the progress page (DDPRUN_PROGRESS_FILE; layout in
  agent/hang/progress_page.h) with no system call. A program that marks its steps itself
  (ddprun_tracking.step()) turns this off.

The last three act as the torch module concerned is imported: nothing of torch is
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


class _DdprunStepClock:
    """Times a PyTorch job's steps on the progress page: steps at 96, their total time
    in ns at 104, of it the rank's own work at 112; at 120 who marks the steps (1: this
    clock, 2: the program through ddprun_tracking.step(), which wins); on a page of 256
    bytes, the first and the last step's end at 128 and 136 (wall clock, us). A step is an
    optimizer step after at least one backward(), so several optimizers (or gradient
    accumulation) still count one step per backward pass."""

    SOURCE_AT = 120

    def __init__(self, page):
        import struct
        import time

        self.page = page
        self.now = time.perf_counter_ns
        self.wall = time.time_ns
        self.pack = struct.Struct("<QQQ").pack_into
        self.pack_wall = struct.Struct("<q").pack_into
        self.marks = len(page) >= 160
        self.steps = self.step_ns = self.own_ns = 0
        self.last_end = None
        self.waited = 0
        self.backwards = 0

    def waiting(self, call):
        """`call`, its time counted as waiting for the other ranks."""
        clock = self

        def timed(*args, **kwargs):
            if clock.compiling():
                return call(*args, **kwargs)
            start = clock.now()
            try:
                return call(*args, **kwargs)
            finally:
                clock.waited += clock.now() - start

        timed.__wrapped__ = call
        timed.__name__ = getattr(call, "__name__", "timed")
        timed.__doc__ = getattr(call, "__doc__", None)
        return timed

    def backward(self, call):
        timed = self.waiting(call)

        def backward(*args, **kwargs):
            self.backwards += 1
            return timed(*args, **kwargs)

        backward.__wrapped__ = call
        backward.__doc__ = getattr(call, "__doc__", None)
        return backward

    @staticmethod
    def compiling():
        return False  # replaced by torch.compiler.is_compiling once torch.compiler loads

    def step_done(self, *_):
        if self.backwards == 0 or self.page[self.SOURCE_AT] == 2:
            return
        now = self.now()
        if self.marks:
            wall = self.wall() // 1000
            if self.last_end is None:
                self.pack_wall(self.page, 128, wall)
            self.pack_wall(self.page, 136, wall)
        if self.last_end is not None:
            took = now - self.last_end
            self.step_ns += took
            self.own_ns += max(0, took - self.waited)
            self.steps += 1
            self.page[self.SOURCE_AT] = 1
            self.pack(self.page, 96, self.steps, self.step_ns, self.own_ns)
        self.last_end = now
        self.waited = 0
        self.backwards = 0


_DDPRUN_COLLECTIVES = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_to_all",
    "all_to_all_single", "barrier", "broadcast", "broadcast_object_list", "gather",
    "monitored_barrier", "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter",
)


_ddprun_step_clock = False  # made as torch is imported: False until then, then the clock or None


def _ddprun_clock():
    """The step clock, made at its first use (as torch loads): a worker that never
    imports torch maps nothing and imports nothing for it."""
    global _ddprun_step_clock
    if _ddprun_step_clock is False:
        _ddprun_step_clock = _ddprun_make_step_clock()
    return _ddprun_step_clock


def _ddprun_make_step_clock():
    path = os.environ.get("DDPRUN_PROGRESS_FILE")
    if not path:
        return None
    try:
        import mmap

        with open(path, "r+b") as f:
            size = os.fstat(f.fileno()).st_size
            if size < 128:
                return None
            page = mmap.mmap(f.fileno(), 256 if size >= 256 else 128)
        return _DdprunStepClock(page) if page[:8] == b"DDPRPG01" else None
    except (OSError, ValueError):
        return None


def _ddprun_optimizer_loaded(module):
    register = getattr(module, "register_optimizer_step_post_hook", None)  # torch 2.0+
    clock = _ddprun_clock()
    if clock is not None and register is not None:
        register(clock.step_done)


def _ddprun_autograd_loaded(module):
    clock = _ddprun_clock()
    if clock is not None and hasattr(module, "backward"):
        module.backward = clock.backward(module.backward)


def _ddprun_distributed_loaded(module):
    clock = _ddprun_clock()
    if clock is None:
        return
    for name in _DDPRUN_COLLECTIVES:
        call = getattr(module, name, None)
        if callable(call):
            setattr(module, name, clock.waiting(call))


def _ddprun_compiler_loaded(module):
    is_compiling = getattr(module, "is_compiling", None)
    clock = _ddprun_clock()
    if clock is not None and is_compiling is not None:
        clock.compiling = is_compiling


class _DdprunTorchFinder:
    """Finds the torch modules below as usual and, once one is loaded, runs its
    function on it (see the module's docstring)."""

    AFTER_LOAD = {
        "torch.distributed.rendezvous": _ddprun_rendezvous_loaded,
        "torch.version": _ddprun_torch_version_loaded,
        "torch.optim.optimizer": _ddprun_optimizer_loaded,
        "torch.autograd": _ddprun_autograd_loaded,
        "torch.distributed": _ddprun_distributed_loaded,
        "torch.compiler": _ddprun_compiler_loaded,
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
