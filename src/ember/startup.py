"""Background warmup: the device start-up work done while the program is still starting.

A fresh process's first CUDA kernel waits ~0.2 s for the driver (``cuInit``) and the primary
context, then for imports, NVRTC and module loads.  None of that needs the program's data,
so ``import ember`` starts it in two daemon threads and returns at once.  What to do for a
backend is the backend's own business, said by the start-up hooks of its (light) package
(``ember/backends/cuda/__init__.py``: ``plausible``, ``WARM_AT_IMPORT``, ``WARMUP_IMPORTS``,
``start_driver``); nothing here knows a backend by name.

``ember-warmup-driver``
    the backend's ``start_driver()`` (CUDA: ``cuInit``, the device and the primary context,
    through ctypes; every call releases the GIL), once the import it needs
    (``DRIVER_AFTER``; ``""``: none) is done.
``ember-warmup``
    the backend's imports (the driver work runs beside the later ones); while the driver
    still starts, Ember's compiler fingerprint and what the library versions need
    (``prepare_keys``; CUDA: loads NVRTC, unless the cache's record of the versions holds);
    then the backend itself, the library versions cache keys use, and the modules of the
    kernels this process will probably launch (those of loaded bundles and of this
    program's last run, see :mod:`ember.cache.lookup`).

This is the top layer (with the CLI and the demo): it may use the registry, the backends'
hooks and the cache.  The registry calls it back (:func:`ember.runtime.backend.on_create`)
instead of importing it.

Rules
    * ``import ember`` never waits: the warmup starts only for a backend whose package says
      it may (``WARM_AT_IMPORT``) and whose device is plausibly there (CUDA: one ``stat``
      of ``/dev/nvidiactl``), with ``EMBER_WARMUP=1`` (the default); ``0`` turns it off,
      ``force`` starts it regardless.
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
      and a backend the parent initialized (by the warmup, or by using it) raises a clear
      :class:`~ember.errors.BackendUnavailableError` on use - CUDA cannot be used after a
      fork.  Use the ``spawn`` start method of :mod:`multiprocessing`.

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
import functools
import importlib
import os
import sys
import threading
import time
from typing import Any

from ember.runtime import registry

FORK_WAIT_S = 10.0  # longest wait of a fork (audit event) for the warmup's step in progress
FORK_HOOK_WAIT_S = 1.0  # the same in the fork hook, where other hooks may hold locks
_FORK_EVENTS = frozenset({"os.fork", "os.forkpty"})

PRELOAD_LIMIT = 64  # modules preloaded at most

FORK_MESSAGE = (
    "the {name} backend was initialized in the parent process before os.fork(){how}, and "
    "{name} cannot be used in a forked child.  Start worker processes with the 'spawn' "
    "method (multiprocessing.set_start_method('spawn') or a spawn context), or create them "
    "before importing ember, or set EMBER_WARMUP=0 when the parent never uses the device"
)

_lock = threading.Lock()
_warmups: dict[str, Warmup] = {}


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
        self._driver_may_start = threading.Event()  # the import the driver step needs is in
        self.driver_started = False  # the driver step ran (the device was initialized)
        self._cpu = 0.0  # CPU time of the steps so far
        self.waited = 0.0  # seconds spent waiting for the main thread to leave the GIL
        self._start = time.perf_counter()
        self._gate = _Gate()  # steps run inside it; a fork waits for them (see fork)
        self._threads: list[threading.Thread] = []
        self._release: Any = None  # releases what the driver step holds (CUDA: a context)
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
        hooks = registry.package(self.backend)
        driver = getattr(hooks, "start_driver", None)
        if driver is not None:
            self._spawn(lambda: self._driver(driver), "ember-warmup-driver")
        else:
            self._driver_done.set()
        self._spawn(lambda: self._main(hooks), "ember-warmup")
        return self

    def _spawn(self, target, name: str) -> None:
        t = threading.Thread(target=target, name=name, daemon=True)
        t._ember_warmup = True  # type: ignore[attr-defined]  # join() never waits in here
        self._threads.append(t)
        t.start()

    def _driver(self, start_driver) -> None:
        """The backend's GIL-free driver start-up, once the import it needs is done."""
        try:
            self._driver_may_start.wait()
            with self._gate.step("driver"):
                if self._stopping:
                    return
                t = time.perf_counter()
                self.driver_started = True  # from its first call on: a fork child must not use it
                self._release = start_driver()
                self.timings["driver"] = time.perf_counter() - t
        except BaseException as exc:  # recorded; the backend reports the real error
            self.driver_started = False
            self._driver_error = exc
        finally:
            self._driver_done.set()

    def _main(self, hooks) -> None:
        after = getattr(hooks, "DRIVER_AFTER", None)
        if after == "":  # the driver step needs no import: it runs beside all of them
            self._driver_may_start.set()
        try:
            try:
                for module in getattr(hooks, "WARMUP_IMPORTS", ()):
                    self._step(f"import {module}", importlib.import_module, module)
                    if module == after:
                        self._driver_may_start.set()
            except Exception as exc:  # the backend step below reports it the ordinary way
                self.error = exc
            self._driver_may_start.set()
            if not self._driver_done.is_set():  # the driver still starts: use the wait
                self._step("keys", _prepare_keys, hooks)
            if _compiles_likely():
                self._compiler_imports(hooks)
            self._driver_done.wait()
            backend = self._step("backend", _create_backend, self.backend)
            self._step("versions", _key_inputs, backend)
            self._release_context()
            self.ready.set()
            self.preloaded = self._step("preload", _preload, backend)
        except BaseException as exc:  # never raised here: the first real use raises it
            self.error = exc
        finally:
            self._driver_may_start.set()  # (after a BaseException in the imports) it returns
            self._release_context()
            self.ready.set()
            self.finished.set()

    def _compiler_imports(self, hooks) -> None:
        """The backend's ``WARMUP_COMPILER`` imports; one that fails is left to the first
        compile, which reports it (cached kernels run without)."""
        for module in getattr(hooks, "WARMUP_COMPILER", ()):
            try:
                self._step(f"import {module}", importlib.import_module, module)
            except Exception:  # noqa: S112 - the first compile reports it
                continue

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
        """Drop what the driver step holds (CUDA: its primary context reference; the backend
        has its own)."""
        release, self._release = self._release, None
        if release is not None:
            try:
                release()
            except Exception:
                pass


class _DeviceWarmup(Warmup):
    """The warmup of one more device of a backend already in use (``ember.warmup(device=
    ...)``): open it (its context, streams) and load the modules this program will
    probably launch there, in the background; the driver is running already."""

    def __init__(self, name: str, index: int):
        super().__init__(f"{name}:{index}")
        self._device = (name, index)

    def start(self) -> Warmup:
        self._spawn(self._run, "ember-warmup-device")
        return self

    def _run(self) -> None:
        try:
            backend = self._step("backend", registry.device, *self._device)
            self._step("versions", _key_inputs, backend)
            self.ready.set()
            self.preloaded = self._step("preload", _preload, backend)
        except BaseException as exc:  # never raised here: the first real use raises it
            self.error = exc
        finally:
            self.ready.set()
            self.finished.set()


def _warm_device(device, blocking: bool) -> Warmup:
    from ember.runtime.device import Device

    d = Device(device)
    key = str(d)
    with _lock:
        w = _warmups.get(key)
        if w is None:
            w = _warmups[key] = _DeviceWarmup(d.backend, d.index)
            if d.is_open:
                w.ready.set()
                w.finished.set()
            else:
                _install_audit_hook()
                w.start()
    if blocking:
        w.wait()
        d.get_backend()  # raises what opening the device raises
    return w


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


def _create_backend(name: str):
    return registry.get(name)


def _key_inputs(backend) -> None:
    """What cache keys need: the library versions (which loads NVRTC) and Ember's compiler
    fingerprint.  (Not through ember.compiler.driver: the compiler is the main thread's
    import, made when the program defines its kernels.)"""
    from ember.cache import key as keymod

    keymod.versions(backend)  # from the cache's record where it holds them
    keymod.fingerprint()


def _prepare_keys(hooks) -> None:
    """What :func:`_key_inputs` needs that the driver does not (Ember's compiler fingerprint,
    the backend package's ``prepare_keys``), done while the driver step runs: on an H200
    machine the versions step took 7-10 ms after a 200 ms driver start-up.  Where the
    cache's record holds the versions under the package's ``version_stamp()``, the
    libraries are not loaded for them (CUDA: NVRTC waits for the first compile).  A failure
    here is left to the versions step, which reports it the ordinary way."""
    from ember.cache import key as keymod

    keymod.fingerprint()
    prepare, stamp = getattr(hooks, "prepare_keys", None), getattr(hooks, "version_stamp", None)
    try:
        if prepare is not None and (stamp is None or keymod.recorded_versions(stamp()) is None):
            prepare()
    except Exception:
        pass


def _compiles_likely() -> bool:
    """Whether this program will probably compile: no bundle loaded and no profile of an
    earlier run naming the cached kernels it used (a new program, or a ``-c`` one).  Where
    it has one, importing the compiler's libraries (CUDA: NVRTC, 25-35 ms of Python work
    beside the program's own first steps) is left to a compile that may never come."""
    try:
        from ember.cache import lookup

        return not lookup.likely_keys()
    except Exception:
        return True


def _preload(backend) -> int:
    from ember.cache import lookup

    keys = lookup.likely_keys()
    return lookup.preload(backend, keys, PRELOAD_LIMIT) if keys else 0


# ------------------------------------------------------------------------- control


def start(backend: str) -> Warmup:
    """Start the warmup of ``backend`` unless one was started already; return it."""
    registry.on_create(join)  # the registry waits for us before creating a backend
    with _lock:
        found = _warmups.get(backend)
        if found is None:
            found = _warmups[backend] = Warmup(backend)
            if registry.instance(backend) is not None:
                found.finished.set()  # already in use: nothing to warm
            else:
                _install_audit_hook()
                found.start()
        return found


def at_import() -> None:
    """Called by ``import ember``: fork hooks, then the warmup when the settings want it:
    the backend ``EMBER_BACKEND`` names (``auto``: the first one of the auto order whose
    package allows a warmup at import and whose device is plausibly there)."""
    _install_fork_hooks()
    from ember.config import settings

    mode, wanted = settings.warmup, settings.backend
    if mode == "off":
        return
    for name in registry.AUTO_ORDER if wanted == "auto" else (wanted,):
        if name not in registry.REGISTRY:
            return
        if not getattr(registry.package(name), "WARM_AT_IMPORT", False) and mode != "force":
            continue  # e.g. OpenCL: setting up pyopencl is Python work, only on request
        if mode == "force" or registry.plausible(name):
            start(name)
        return


def join(backend: str | None = None) -> None:
    """Wait for the warmup of ``backend`` (of any backend when None), if one is running.

    Called by the backend registry before it creates a backend; never waits in a warmup
    thread (it would wait for itself)."""
    if getattr(threading.current_thread(), "_ember_warmup", False):
        return
    for name, w in list(_warmups.items()):
        if (backend is None or name == backend) and not w.ready.is_set():
            _meanwhile()
            w.wait(preload=False)


@functools.cache
def _meanwhile() -> None:
    """Before a thread waits for the warmup (once a process): import what its first launch
    imports next, the compiler's front and the cache, and the array library's kernels where
    the program uses arrays, with their sources read (:func:`ember.array.kernels.prepare`).
    The wait is for the driver, which needs no GIL; after it, those imports were ~20 ms of
    a first array operation on an H200 host (its allocation is what waits, its fill kernel
    comes after), and the first map kernel's source ~6 ms."""
    try:
        import ember.compiler.kernel  # noqa: F401

        if "ember.array" in sys.modules:
            import ember.array.kernels

            ember.array.kernels.prepare()
    except Exception:  # noqa: S110 - the import that needs them reports what is wrong
        pass


def warmup(blocking: bool = True, backend: str | None = None, device=None) -> Warmup:
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
        A registered backend name; default: the one ``EMBER_BACKEND`` selects (for
        ``auto``: the first of the auto order whose device is plausibly there, e.g. CUDA
        when a driver is detected, else OpenCL).
    device : optional
        Another device to warm (an index, ``ember.Device``, ``"cuda:1"``): it is opened
        and the modules this program will probably launch are loaded there, in the
        background (the default device, ``EMBER_DEVICE``, is the one warmed at import).
    """
    from ember.config import settings

    if device is not None:
        return _warm_device(device, blocking)

    name = backend or settings.backend
    if name == "auto":
        order = registry.AUTO_ORDER
        name = next((n for n in order if n in _warmups or registry.plausible(n)), order[-1])
    w = start(name)
    if blocking:
        w.wait()
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
    driver is torn down (a program that exits at once waits for that call, nothing more).

    The driver step runs in a thread of its own: the warmup can finish (stopped after its
    step in progress) while that thread is still inside the driver's start-up, which then
    ran on during the interpreter's and the driver's teardown (a child process of the GPU
    suite died of SIGSEGV there after its last line).  So both are waited for."""
    for w in list(_warmups.values()):
        w._stopping = True
        w.hurry.set()
        w.finished.wait(10.0)
        w._driver_done.wait(10.0)  # prompt where it has not begun: it sees _stopping


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
        w._threads, w._release = [], None
        w.ready, w.finished, w.hurry = threading.Event(), threading.Event(), threading.Event()
        w._driver_done, w._driver_may_start = threading.Event(), threading.Event()
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
    """Every backend whose driver the parent started (by using it, or by the warmup's driver
    step) refuses to work here, with the fork message."""
    from ember.config import settings

    if interrupted:  # a step may have held the registry's lock in a thread that is gone
        registry.repair_after_fork()
    for name in registry.REGISTRY:
        hooks = sys.modules.get(registry.REGISTRY[name][0])
        started = getattr(hooks, "driver_started", None)
        w = _warmups.get(name)
        by_warmup = w is not None and w.driver_started and registry.instance(name) is None
        used = registry.instance(name) is not None or (started is not None and started())
        if not (used or by_warmup):
            continue
        forget = getattr(hooks, "forget_after_fork", None)
        if forget is not None:
            forget()  # before the parent's objects are dropped: nothing may call the driver
        label = getattr(hooks, "LABEL", name)
        how = " (by Ember's background warmup at import)" if by_warmup else ""
        # the parent would have picked the backend it warmed: say so instead of falling back
        select = by_warmup and settings.backend in ("auto", name)
        registry.disable(name, FORK_MESSAGE.format(name=label, how=how), select=select)
