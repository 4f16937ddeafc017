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
    * ``os.fork()``: the fork waits for the step in progress; in the child the warmup
      counts as finished, and a backend the parent initialized raises a clear
      :class:`~ember.errors.BackendUnavailableError` on use (:mod:`ember.forking`
      says how, and why an audit hook).  Use the ``spawn`` start method of
      :mod:`multiprocessing`.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import sys
import threading
import time
from typing import Any

from ember import forking
from ember.runtime import registry

PRELOAD_LIMIT = 64  # modules preloaded at most

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
        self._gate = forking.Gate()  # steps run inside it; a fork waits for them (see fork)
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

    # ------------------------------------------------------------------ fork (ember.forking)
    def quiesce(self, timeout: float) -> None:
        """Before a fork: let no new step in and wait up to ``timeout`` s for the one in
        progress; the steps still running are remembered for the child."""
        if not self._gate.closed_at:
            self._forked_during = self._gate.close(timeout)

    def resume(self) -> None:
        """In the parent after a fork: let the steps in again."""
        self._forked_during = []
        self._gate.open()

    def reset_in_child(self) -> bool:
        """In a fork child: the threads are gone, so the warmup counts as finished, with an
        error where it had not; every lock and event is replaced (a thread that no longer
        exists may have held one at the fork).  True where a step was still running."""
        unfinished, interrupted = not self.finished.is_set(), bool(self._forked_during)
        self._gate = forking.Gate()
        self._threads, self._release = [], None
        self.ready, self.finished, self.hurry = (
            threading.Event(),
            threading.Event(),
            threading.Event(),
        )
        self._driver_done, self._driver_may_start = threading.Event(), threading.Event()
        self.ready.set()
        self.finished.set()
        if interrupted:
            self.error = RuntimeError(
                f"the process forked while the warmup was running {', '.join(self._forked_during)}"
                f" (still running after {forking.FORK_WAIT_S:g} s)"
            )
        elif unfinished:
            self.error = RuntimeError("the process forked while the warmup was running")
        self._forked_during = []
        return interrupted


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
                forking.install_audit_hook()
                w.start()
    if blocking:
        w.wait()
        d.get_backend()  # raises what opening the device raises
    return w


class _Stopped(Exception):
    """The warmup stopped early because the interpreter is exiting."""


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
                forking.install_audit_hook()
                found.start()
        return found


def at_import() -> None:
    """Called by ``import ember``: fork hooks, then the warmup when the settings want it:
    the backend ``EMBER_BACKEND`` names (``auto``: the first one of the auto order whose
    package allows a warmup at import and whose device is plausibly there)."""
    forking.install_fork_hooks(_warmups)
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


# ------------------------------------------------------------------------- exit


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
