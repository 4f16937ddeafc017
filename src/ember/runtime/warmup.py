"""Background warmup: the device start-up work done while the program is still starting.

A fresh process's first CUDA kernel waits ~0.2 s for the driver (``cuInit``) and the primary
context, then for imports, NVRTC and module loads.  None of that needs the program's data,
so ``import ember`` starts it in two daemon threads and returns at once:

``ember-warmup-driver``
    ``cuInit``, the device and the primary context through ``ctypes`` on ``libcuda`` - no
    import of ``cuda.bindings`` first, and every driver call releases the GIL.
``ember-warmup``
    the imports of ``cuda.bindings`` and the CUDA backend (in parallel with the driver
    work), then the backend itself, the NVRTC library and the versions cache keys use,
    Ember's compiler fingerprint, and the modules of the kernels this process will probably
    launch (those of loaded bundles and of this program's last run, see
    :mod:`ember.cache.memory`).

Rules
    * ``import ember`` never waits: the warmup starts only when a CUDA driver is there (one
      ``stat`` of ``/dev/nvidiactl``), with ``EMBER_WARMUP=1`` (the default); ``0`` turns it
      off, ``force`` starts it regardless.
    * The first real use *joins* it: the backend registry waits for it (never while it holds
      its own lock), after telling it to stop being polite.
    * It must not slow the main thread's Python work.  Driver calls release the GIL; the
      imports and the backend's set-up do not, so each of those steps waits until no other
      thread runs Python (:meth:`Warmup._wait_for_quiet`): it uses the moments the program
      sleeps, waits for I/O or computes in NumPy with the GIL released.  A program busy in
      pure Python all along finds the driver ready and the rest done at its first use.
    * A failure is never raised by the warmup.  The first real use creates the backend the
      ordinary way and raises the ordinary error (or the registry's record of it);
      ``ember.warmup(blocking=True)`` raises it too.
    * ``os.fork()``: the fork waits for the step in progress (so the child inherits no
      half-done import or half-made backend); in the child the warmup counts as finished,
      and a backend the parent initialized (CUDA, also by the warmup, or OpenCL) raises a
      clear :class:`~ember.errors.BackendUnavailableError` on use - CUDA cannot be used
      after a fork.  Use the ``spawn`` start method of :mod:`multiprocessing`.

Why the fork waits in an *audit hook* (``sys.addaudithook``, event ``os.fork``) and not in
an ``os.register_at_fork`` hook: Python runs the ``before`` fork hooks newest first, so the
hooks of modules imported after Ember (``logging``, which the warmup's own imports pull in)
run before Ember's and hold their locks while Ember's hook waits - and the warmup's step,
importing ``pyopencl`` or ``asyncio``, waits for ``logging``'s lock: both hung (issue 18).
The audit event comes before any fork hook, when the forking thread holds no library lock.
A fork that raises no audit event (``subprocess`` with ``preexec_fn``) waits in the fork
hook, at most :data:`FORK_HOOK_WAIT_S`; every wait is bounded, so a fork never hangs.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import sys
import threading
import time
from typing import Any

PRELOAD_LIMIT = 64  # modules preloaded at most
FORK_WAIT_S = 10.0  # longest wait of a fork (audit event) for the warmup's step in progress
FORK_HOOK_WAIT_S = 1.0  # the same in the fork hook, where other hooks may hold locks
_FORK_EVENTS = frozenset({"os.fork", "os.forkpty"})

# Imports per backend, in order, each one step (big packages split so pauses can fall
# between them).  cuda.bindings.nvrtc comes last: its library load is the NVRTC step.
IMPORTS = {
    "cuda": (
        "typing", "dataclasses", "subprocess", "cuda.pathfinder", "cuda.bindings.driver",
        "asyncio", "ember.runtime.sync", "ember.backends.cuda", "cuda.bindings.nvrtc",
        "ember.compiler.nvrtc",
    ),
    "opencl": ("pyopencl", "ember.backends.opencl"),
}  # fmt: skip

FORK_MESSAGE = (
    "the {name} backend was initialized in the parent process before os.fork(){how}, and "
    "{name} cannot be used in a forked child.  Start worker processes with the 'spawn' "
    "method (multiprocessing.set_start_method('spawn') or a spawn context), or create them "
    "before importing ember, or set EMBER_WARMUP=0 when the parent never uses the device"
)

_lock = threading.Lock()
_warmups: dict[str, Warmup] = {}
_cuda_initialized = False  # by the warmup's driver thread (the backend sets its own flag)


class Warmup:
    """One backend's warmup: ``timings`` per step, ``error`` if a step failed.

    :meth:`wait` joins it.  ``ready`` is set once the backend exists (or failed to);
    ``finished`` once everything, module preloading included, is done.
    """

    def __init__(self, backend: str):
        self.backend = backend
        self.timings: dict[str, float] = {}
        self.error: BaseException | None = None
        self.preloaded = 0
        self.ready = threading.Event()  # the backend exists (or failed): first use may go
        self.finished = threading.Event()  # module preloading done too
        self.hurry = threading.Event()
        self._stopping = False  # the interpreter is exiting: skip the remaining steps
        self._driver_done = threading.Event()
        self._driver_error: BaseException | None = None
        self._cpu = 0.0  # CPU time of the steps so far
        self.waited = 0.0  # seconds spent waiting for the main thread to leave the GIL
        self._start = time.perf_counter()
        self._gate = _Gate()  # steps run inside it; a fork waits for them (see fork)
        self._threads: list[threading.Thread] = []
        self._context: tuple[Any, Any] | None = None  # (libcuda, CUdevice) retained here
        self._forked_during: list[str] = []  # steps a fork did not wait for (see fork)

    # ------------------------------------------------------------------ public
    def done(self) -> bool:
        return self.finished.is_set()

    def wait(self, timeout: float | None = None, preload: bool = True) -> bool:
        """Tell the warmup to hurry and wait until it has finished (with ``preload=False``:
        until the backend is ready, while modules may still be loading); False on timeout."""
        self.hurry.set()
        event = self.finished if preload else self.ready
        if threading.current_thread() in self._threads:
            return event.is_set()
        return event.wait(timeout)

    def __repr__(self) -> str:
        state = "failed" if self.error else "done" if self.done() else "running"
        steps = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in self.timings.items())
        return f"<ember warmup of {self.backend}: {state}; {steps}>"

    # ------------------------------------------------------------------ threads
    def start(self) -> Warmup:
        if self.backend == "cuda":
            self._spawn(self._driver, "ember-warmup-driver")
        else:
            self._driver_done.set()
        self._spawn(self._main, "ember-warmup")
        return self

    def _spawn(self, target, name: str) -> None:
        t = threading.Thread(target=target, name=name, daemon=True)
        t._ember_warmup = True  # type: ignore[attr-defined]  # join() never waits in here
        self._threads.append(t)
        t.start()

    def _driver(self) -> None:
        """cuInit, device 0 and its primary context through ctypes (GIL released)."""
        global _cuda_initialized
        try:
            with self._gate.step("driver"):
                t = time.perf_counter()
                _cuda_initialized = True  # from its first call on: a fork child must not use it
                self._context = _retain_primary_context()
                self.timings["driver"] = time.perf_counter() - t
        except BaseException as exc:  # recorded; the backend reports the real error
            _cuda_initialized = False
            self._driver_error = exc
        finally:
            self._driver_done.set()

    def _main(self) -> None:
        try:
            try:
                for module in IMPORTS.get(self.backend, ()):
                    self._step(f"import {module}", importlib.import_module, module)
            except Exception as exc:  # the backend step below reports it the ordinary way
                self.error = exc
            self._driver_done.wait()
            backend = self._step("backend", _create_backend, self.backend)
            self._step("versions", _key_inputs, backend)
            self._release_context()
            self.ready.set()
            self.preloaded = self._step("preload", _preload, backend)
        except BaseException as exc:  # never raised here: the first real use raises it
            self.error = exc
        finally:
            self._release_context()
            self.ready.set()
            self.finished.set()

    def _step(self, name: str, fn, *args):
        """Run one step inside the gate (see fork), when the GIL is free."""
        self._wait_for_quiet()
        if self._stopping:
            raise _Stopped("the interpreter is exiting")
        w, c = time.perf_counter(), time.thread_time()
        try:
            with self._gate.step(name):
                return fn(*args)
        finally:
            self.timings[name] = time.perf_counter() - w
            self._cpu += time.thread_time() - c

    def _wait_for_quiet(self) -> None:
        """Wait until no other thread is running Python, unless someone joined the warmup.

        The probe: sleep 0.2 ms and see how long getting the GIL back takes.  While another
        thread runs Python, the interpreter hands the GIL over only after its switch
        interval (5 ms); when the others are idle, blocked, or in C code that released the
        GIL (NumPy, I/O), it comes back at once.  Each probe costs the main thread one GIL
        hand-over; while it is busy, probes come every 10 ms."""
        threshold = min(0.001, sys.getswitchinterval() / 4)
        while not self.hurry.is_set():
            t = time.perf_counter()
            time.sleep(0.0002)
            if time.perf_counter() - t < 0.0002 + threshold:
                return
            self.waited += 0.01
            self.hurry.wait(0.01)

    def _release_context(self) -> None:
        """Drop the warmup's own reference to the primary context (the backend has one)."""
        if self._context is not None:
            lib, device = self._context
            self._context = None
            release = getattr(lib, "cuDevicePrimaryCtxRelease_v2", None)  # cuda.h's name
            try:
                (release or lib.cuDevicePrimaryCtxRelease)(device)
            except Exception:
                pass


class _Stopped(Exception):
    """The warmup stopped early because the interpreter is exiting."""


class _Gate:
    """Where the warmup's steps run: a fork closes it and waits for the steps inside.

    A condition variable, not a lock held across each step: the forking thread then never
    holds anything a step needs while it waits.  A gate closed by a fork that did not
    happen (an audit hook after Ember's refused it) lets steps in again after
    :data:`FORK_WAIT_S`."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self.inside: list[str] = []  # the steps running now
        self.closed_at = 0.0  # when a fork closed it (time.monotonic()); 0: open

    @contextlib.contextmanager
    def step(self, name: str):
        with self._cond:
            while self.closed_at and time.monotonic() - self.closed_at < FORK_WAIT_S:
                self._cond.wait(0.05)
            self.inside.append(name)
        try:
            yield
        finally:
            with self._cond:
                self.inside.remove(name)
                self._cond.notify_all()

    def close(self, timeout: float) -> list[str]:
        """Let no new step in; wait up to ``timeout`` s for those inside; return the steps
        still running (the fork goes on regardless: it must never hang)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self.closed_at = time.monotonic()
            while self.inside and deadline > time.monotonic():
                self._cond.wait(deadline - time.monotonic())
            return list(self.inside)

    def open(self) -> None:
        with self._cond:
            self.closed_at = 0.0
            self._cond.notify_all()


# ------------------------------------------------------------------------- steps


def _retain_primary_context():
    """The GIL-free part of CUDA start-up, on the driver library directly."""
    import ctypes

    lib = ctypes.CDLL("nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1")

    def call(fn: str, *args) -> None:
        status = getattr(lib, fn)(*args)
        if status:
            raise OSError(f"{fn} returned CUresult {status}")

    call("cuInit", ctypes.c_uint(0))
    device = ctypes.c_int()
    call("cuDeviceGet", ctypes.byref(device), ctypes.c_int(0))
    context = ctypes.c_void_p()
    call("cuDevicePrimaryCtxRetain", ctypes.byref(context), device)
    return lib, device


def _create_backend(name: str):
    from ember.runtime import backend as registry

    return registry.get(name)


def _key_inputs(backend) -> None:
    """What cache keys need: the library versions (which loads NVRTC) and Ember's compiler
    fingerprint.  (Not through ember.compiler.driver: the compiler is the main thread's
    import, made when the program defines its kernels.)"""
    from ember.cache import key as keymod

    backend.library_versions()
    keymod.fingerprint()


def _preload(backend) -> int:
    from ember.cache import memory

    keys = memory.likely_keys()
    return memory.preload(backend, keys, PRELOAD_LIMIT) if keys else 0


# ------------------------------------------------------------------------- control


def cuda_plausible() -> bool:
    """Whether a CUDA driver is probably installed and a device visible (a stat or two)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    if sys.platform.startswith("linux"):
        return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/dxg")
    if sys.platform == "win32":
        root = os.environ.get("SystemRoot", r"C:\Windows")
        return os.path.exists(os.path.join(root, "System32", "nvcuda.dll"))
    return False


def start(backend: str) -> Warmup:
    """Start the warmup of ``backend`` unless one was started already; return it."""
    with _lock:
        found = _warmups.get(backend)
        if found is None:
            found = _warmups[backend] = Warmup(backend)
            registry = sys.modules.get("ember.runtime.backend")
            if registry is not None and backend in registry._instances:
                found.finished.set()  # already in use: nothing to warm
            else:
                _install_audit_hook()
                found.start()
        return found


def at_import() -> None:
    """Called by ``import ember``: fork hooks, then the warmup when the settings want it."""
    _install_fork_hooks()
    from ember.config import settings

    mode, name = settings.warmup, settings.backend
    if mode == "off" or (name == "opencl" and mode != "force"):
        return  # an OpenCL warmup is Python work (pyopencl): only on request
    name = "cuda" if name == "auto" else name
    if mode == "force" or cuda_plausible():
        start(name)


def join(backend: str | None = None) -> None:
    """Wait for the warmup of ``backend`` (of any backend when None), if one is running.

    Called by the backend registry before it creates a backend; never waits in a warmup
    thread (it would wait for itself)."""
    if getattr(threading.current_thread(), "_ember_warmup", False):
        return
    for name, w in list(_warmups.items()):
        if (backend is None or name == backend) and not w.ready.is_set():
            w.wait(preload=False)


def warmup(blocking: bool = True, backend: str | None = None) -> Warmup:
    """Warm up the device now, in the background; ``blocking=True`` waits for it.

    ``import ember`` already starts this for CUDA when a driver is present (``EMBER_WARMUP``).
    Call it explicitly to warm another backend, or to wait for the start-up work at a moment
    of your choosing::

        w = ember.warmup(blocking=False)   # returns at once; w.done(), w.wait(), w.timings
        load_data()
        ember.warmup()                     # wait (raises if the device cannot be used)

    Parameters
    ----------
    blocking : bool
        Wait until the warmup has finished, then make sure the backend works: a failure
        raises the error its first use would (e.g. :class:`BackendUnavailableError`).
    backend : str, optional
        ``"cuda"`` or ``"opencl"``; default: the one ``EMBER_BACKEND`` selects (for
        ``auto``: CUDA when a driver is detected, else OpenCL).
    """
    from ember.config import settings

    name = backend or settings.backend
    if name == "auto":
        name = "cuda" if "cuda" in _warmups or cuda_plausible() else "opencl"
    w = start(name)
    if blocking:
        w.wait()
        from ember.runtime import backend as registry

        if backend is None and settings.backend == "auto":
            registry.get()  # auto selection, exactly as the first use will do it
        else:
            registry.get(name)
    return w


def status() -> dict[str, Warmup]:
    """The warmups of this process, by backend."""
    return dict(_warmups)


# ------------------------------------------------------------------------- exit and fork


@atexit.register
def _at_exit() -> None:
    """Stop a running warmup at its next step, and let its driver call finish before the
    driver is torn down (a program that exits at once waits for that call, nothing more)."""
    for w in list(_warmups.values()):
        w._stopping = True
        w.hurry.set()
        w.finished.wait(10.0)


_hooks_installed = False
_audit_installed = False


def _install_fork_hooks() -> None:
    global _hooks_installed
    if not _hooks_installed and hasattr(os, "register_at_fork"):
        _hooks_installed = True
        os.register_at_fork(
            before=_before_fork,
            after_in_parent=_after_fork_parent,
            after_in_child=_after_fork_child,
        )


def _install_audit_hook() -> None:
    """Once a warmup runs: wait for its step at ``os.fork``'s audit event (module docstring).

    Audit hooks cannot be removed; after the warmup this one costs a set lookup per audited
    event, and nothing Ember does per launch raises one."""
    global _audit_installed
    if not _audit_installed and hasattr(os, "register_at_fork"):
        _audit_installed = True
        sys.addaudithook(_audit)


def _audit(event: str, _args) -> None:
    if event in _FORK_EVENTS and _warmups:
        try:
            _quiesce(FORK_WAIT_S)
        except BaseException:  # an audit hook that raises would refuse the fork itself
            pass


def _quiesce(timeout: float) -> None:
    """Close every warmup's gate and wait for the steps in progress (at most ``timeout``)."""
    if getattr(threading.current_thread(), "_ember_warmup", False):
        return  # a step that forks would wait for itself
    for w in list(_warmups.values()):
        if not w._gate.closed_at:
            w._forked_during = w._gate.close(timeout)


def _before_fork() -> None:
    _quiesce(FORK_HOOK_WAIT_S)  # a fork without the audit event (gates still open)


def _after_fork_parent() -> None:
    for w in list(_warmups.values()):
        w._forked_during = []
        w._gate.open()


def _after_fork_child() -> None:
    """The warmup threads do not exist here; devices the parent initialized are unusable.

    Every lock and event of a warmup is replaced: a thread that no longer exists may have
    held one at the moment of the fork."""
    interrupted = False
    for w in list(_warmups.values()):
        unfinished = not w.finished.is_set()
        w._gate = _Gate()
        w._threads, w._context = [], None
        w.ready, w.finished, w.hurry = threading.Event(), threading.Event(), threading.Event()
        w._driver_done = threading.Event()
        w.ready.set()
        w.finished.set()
        if w._forked_during:
            interrupted = True
            w.error = RuntimeError(
                f"the process forked while the warmup was running {', '.join(w._forked_during)}"
                f" (still running after {FORK_WAIT_S:g} s)"
            )
        elif unfinished:
            w.error = RuntimeError("the process forked while the warmup was running")
        w._forked_during = []
    _poison_parent_backends(interrupted)


def _poison_parent_backends(interrupted: bool = False) -> None:
    from ember.runtime import backend as registry

    if interrupted:  # a step may have held the registry's lock in a thread that is gone
        registry._lock = threading.RLock()

    names = set(registry._instances)
    device = sys.modules.get("ember.backends.cuda.device")
    by_warmup = _cuda_initialized and "cuda" not in names
    if by_warmup or getattr(device, "_initialized", False):
        names.add("cuda")
    for name in names:
        label = {"cuda": "CUDA", "opencl": "OpenCL"}.get(name, name)
        how = " (by Ember's background warmup at import)" if name == "cuda" and by_warmup else ""
        registry._instances.pop(name, None)
        registry._failures[name] = FORK_MESSAGE.format(name=label, how=how)
    if "cuda" in names and registry._current is None:
        from ember.config import settings

        if settings.backend in ("auto", "cuda"):
            registry._current = "cuda"  # the parent would have picked CUDA: say so
