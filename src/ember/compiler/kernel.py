"""``@ember.kernel``: a Python function compiled for the GPU on first launch.

::

    @ember.kernel
    def axpy(a, x, y):
        i = ember.global_id()
        if i < x.shape[0]:
            y[i] = a * x[i] + y[i]

    axpy[blocks, threads](2.0, x, y)       # explicit grid and block (ints or 1-3 tuples)
    axpy[blocks, threads](2.0, x, y, stream=s, shared_mem=0)
    axpy.launch(n)(2.0, x, y)              # n threads; Ember picks the block size

A kernel is compiled once per *signature* (the argument types: dtype, ndim and contiguity of
arrays, the type of each number) and device; later launches with the same signature look the
compiled kernel up in a dict and go straight to the backend's launch.  See
``docs/design/compiler.md``.
"""

from __future__ import annotations

import functools
import importlib
import math
import pickle
import threading
from typing import TYPE_CHECKING, Any

from ember.compiler import args as argmod
from ember.compiler import driver, freshness, launchers
from ember.diagnostics import device_errors as errmod
from ember.errors import ArgumentError, LaunchError
from ember.frontend import messages
from ember.frontend.capture import Captured, capture
from ember.frontend.types import CompileTime
from ember.runtime import argtypes
from ember.runtime import backend as registry
from ember.runtime.checks import dim3 as _dims
from ember.tracebacks import api, hide_internal_frames

if TYPE_CHECKING:  # launching kernels from the cache never needs the IR
    from ember.frontend import ir

STAGES = ("ir", "source", "ptx", "cubin-info", "sass", "resources")


def kernel(func=None, *, options=(), boundscheck=None, launch_bounds=None):
    """Decorate a Python function as a kernel: ``@ember.kernel`` or
    ``@ember.kernel(options=("-lineinfo",))`` (options go to NVRTC / the OpenCL build).

    ``boundscheck=True`` checks every array index that cannot be proven in range, and every
    float -> integer conversion, at run time: a failure raises :class:`~ember.KernelError`
    naming the line at the next synchronize.  Default: ``EMBER_BOUNDSCHECK``.

    ``launch_bounds=max_threads`` or ``(max_threads, min_blocks)`` (CUDA's
    ``__launch_bounds__``, Numba's ``launch_bounds=``): the kernel is never launched with
    more than ``max_threads`` threads per block (a launch that asks for more raises
    :class:`~ember.LaunchError`; ``kernel.launch(n)`` picks blocks within it), and the
    compiler limits registers so that ``min_blocks`` blocks fit on a multiprocessor.  CUDA
    compiles them in; other devices accept and check the block limit."""
    if func is None:
        return lambda f: Kernel(f, options=options, boundscheck=boundscheck,
                                launch_bounds=launch_bounds)  # fmt: skip
    return Kernel(func, options=options, boundscheck=boundscheck, launch_bounds=launch_bounds)


class Kernel:
    """A kernel: launch with ``k[grid, block](*args)`` or ``k.launch(n)(*args)``.

    Attributes
    ----------
    py_func : function
        The Python function.
    options : tuple of str
        Compiler options used for every specialization.
    specializations : dict
        Signature -> :class:`~ember.compiler.driver.Specialization`, compiled so far.
    boundscheck : bool or None
        Run-time checks as given to the decorator (None: ``EMBER_BOUNDSCHECK``, read at
        the first compile and kept for the kernel's life, like captured constants).
    """

    # `_last` is a slot: the compiled launch (compiler/_dispatch.c) reads it through its
    # descriptor on every launch, without the instance __dict__'s lookup
    __slots__ = ("_last", "__dict__", "__weakref__")

    def __init__(self, func, *, options=(), boundscheck=None, launch_bounds=None):
        functools.update_wrapper(self, func)
        self.py_func = func
        self.boundscheck = boundscheck
        self.launch_bounds = _launch_bounds(launch_bounds, func)
        self.__ember_py_func__ = func  # lets kernels call kernels as device functions
        self.options = tuple(options)
        self.specializations: dict[tuple, driver.Specialization] = {}
        self._cap: Captured | None = None
        self._captures: dict = {}
        self._configs: dict = {}
        self._ndranges: dict = {}  # (n, block) -> NDRangeLauncher
        self._lock = threading.Lock()
        self._last = _NO_SPECIALIZATION  # the inline cache: most recently launched
        self._deps: list | None = None  # what the compiled code read (notebooks only)
        self._recheck = False  # a new notebook cell started: re-read _deps at next launch

    # ------------------------------------------------------------------ launching
    def __getitem__(self, config):
        """``kernel[grid, block]``; also ``[grid, block, stream, shared_mem]`` and, in CUDA's
        order, ``[grid, block, shared_mem]`` / ``[grid, block, shared_mem, stream]`` (an int
        third item is the dynamic shared memory in bytes)."""
        try:
            return self._configs[config]
        except (KeyError, TypeError):
            pass
        try:
            return self._configure(config)
        except Exception as exc:
            hide_internal_frames(exc)
            raise

    def _configure(self, config):
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise LaunchError(
                f"launch a kernel as {self.__name__}[grid, block](...); got "
                f"{self.__name__}[{config!r}]"
            )
        grid, block = _dims(config[0], "grid"), _dims(config[1], "block")
        self._within_bounds(block)
        stream, shared = _stream_and_shared(config[2:])
        launcher = launchers.make_launcher(self, grid, block, stream, shared)
        if len(self._configs) < 256:
            try:
                self._configs[config] = launcher
            except TypeError:
                pass
        return launcher

    def _within_bounds(self, block: tuple[int, ...]) -> None:
        """Refuse a block larger than the kernel's ``launch_bounds``."""
        if self.launch_bounds is not None and math.prod(block) > self.launch_bounds[0]:
            raise LaunchError(
                f"{self.__name__} is declared with launch_bounds of {self.launch_bounds[0]} "
                f"threads per block, and this launch asks for {math.prod(block)} "
                f"({' x '.join(map(str, block))}): launch blocks of at most "
                f"{self.launch_bounds[0]} threads"
            )

    def launch(self, n, block=None) -> Any:
        """``kernel.launch(n)(*args)``: at least ``n`` threads (an int or a 1-3 tuple), in
        blocks of ``block`` threads (default: chosen for the device)."""
        try:
            return self._ndranges[(n, block)]  # kept per (n, block): no parsing per launch
        except (KeyError, TypeError):
            pass
        try:
            launcher: Any = launchers.NDRangeLauncher(self, n, block)
        except Exception as exc:
            hide_internal_frames(exc)
            raise
        native = launchers._dispatch()
        if native is not None:  # its __call__ in C (the Python one is the fallback)
            launcher = native.ndrange(launcher, self, hide_internal_frames, launcher.n is None)
        if len(self._ndranges) < 256:
            try:
                self._ndranges[(n, block)] = launcher
            except TypeError:  # unhashable sizes (lists): just not kept
                pass
        return launcher

    @api
    def __call__(self, *args, **kwargs):
        raise LaunchError(
            f"a kernel is launched with a grid: {self.__name__}[blocks, threads](...) or "
            f"{self.__name__}.launch(n)(...); to run the Python function itself, call "
            f"{self.__name__}.py_func(...)"
        )

    def dispatch(self, args: tuple) -> driver.Specialization:
        """The specialization for ``args`` (compiled on first use)."""
        return self._resolve(args)[0]

    def _resolve(self, args: tuple) -> tuple[driver.Specialization, tuple]:
        """The specialization for ``args`` (compiled on first use) and the arguments as it
        takes them (foreign arrays wrapped): the slow paths' lookup."""
        if self._recheck:
            self._revalidate()
        try:
            return self.specializations[argmod.signature(args)], args
        except (KeyError, argmod.Slow):
            return self._slow_dispatch(args)

    def launch_args(self, grid: tuple, block: tuple, args: tuple) -> None:
        """Launch with the argument tuple ``args`` on the default stream (``grid`` and
        ``block`` as 3-tuples): the inline cache first, as ``kernel[grid, block](...)``
        does, so a repeated launch computes no signature.  The array library's launches
        take this path (:func:`ember.array.launch.run`)."""
        if not self._last.run(grid, block, 0, None, args):
            self._launch_slow(grid, block, 0, None, args)

    def _launch_slow(self, grid, block, shared_mem, stream, args: tuple) -> None:
        """A launch whose arguments miss the inline cache: look up (or compile), launch."""
        spec, args = self._resolve(args)
        spec.launch(args, grid, block, shared_mem, stream)
        self._last = spec  # after: a launch refused (EMBER_DIAGNOSTICS=error) is not cached

    def _slow_dispatch(self, args: tuple) -> tuple[driver.Specialization, tuple]:
        args = tuple(self._foreign(args))
        types, backend, foreign = self._types(args)
        # compile-time arguments are keyed by the object itself (two functions may share a
        # name); the others by their text form
        key = (tuple(t if isinstance(t, CompileTime) else t.key() for t in types), backend)
        with self._lock:
            spec = self.specializations.get(key)
            if spec is None:
                spec = self._compile(types, backend, foreign)
                self.specializations[key] = spec
                try:
                    self.specializations[argmod.signature(args)] = spec
                except argmod.Slow:
                    pass
        return spec, args

    def _foreign(self, args: tuple):
        for a in args:
            f = None if type(a) in argmod.SCALARS or argtypes.is_array(a) else argmod.foreign(a)
            yield a if f is None else f

    def _compile(self, types, backend, foreign) -> driver.Specialization:
        spec = driver.compile_specialization(
            self.captured,
            types,
            backend,
            self.options,
            self._captures,
            self.checks,
            self.launch_bounds,
        )
        if self._deps is None and not (self.py_func.__module__ or "").startswith("ember."):
            freshness.watch_ipython()  # user kernels in notebooks notice redefinitions
            if freshness.watching():
                self._deps = freshness.baseline(self.captured, self._captures)
                freshness.track(self)
        hidden = errmod.attach(spec)  # a kernel that can fail: its error-record arguments
        spec.pack = argmod.make_packer(spec.abi, len(types), foreign, backend, hidden)
        info = spec.launch_info
        spec.shared_bytes = argmod.make_shared_bytes(info, len(types))
        launch, function = spec.function.launch, spec.function
        if info.get("cooperative"):
            launch, function = spec.function.launch_cooperative, None
        spec.run = argmod.make_runner(
            spec.abi, types, foreign, backend, launch, hidden, info, function
        )
        return spec

    # ------------------------------------------------------------------ stale code
    def _stale_check(self) -> None:
        """A new notebook cell: check the dependencies at the next launch (which misses the
        inline cache, so launches until then cost nothing more)."""
        self._recheck = True
        self._last = _NO_SPECIALIZATION

    def _revalidate(self) -> None:
        """Recompile (dropping every specialization) when what the code read has changed."""
        self._recheck = False
        old = self._deps
        new = freshness.current(self.py_func) if old is not None else None
        if new is None or new == old:
            return
        freshness.note(self.__name__, freshness.changes(old, new))
        with self._lock:
            self._cap, self._captures, self._deps = None, {}, None
            self.specializations = {}
            self._last = _NO_SPECIALIZATION

    @property
    def checks(self) -> bool:
        """Whether run-time checks are compiled in: ``boundscheck``, else the setting
        (``EMBER_BOUNDSCHECK`` is for the user's kernels: Ember's own follow NumPy, whose
        ``astype`` never raises, unless they ask)."""
        if self.boundscheck is None:
            from ember.config import settings

            own = (self.py_func.__module__ or "").startswith("ember.")
            self.boundscheck = bool(settings.boundscheck) and not own
        return bool(self.boundscheck)

    # ------------------------------------------------------------------ argument checks
    @property
    def captured(self) -> Captured:
        if self._cap is None:
            self._cap = capture(self.py_func)
            self._captures[self.py_func] = self._cap
        return self._cap

    def _types(self, args: tuple, need_backend: bool = True):
        """Kernel types of ``args``, the backend they live on, foreign argument indices."""
        tree_args = self.captured.tree.args
        params = list(tree_args.args)
        varargs = tree_args.vararg is not None
        if len(args) < len(params) or (len(args) > len(params) and not varargs):
            more = " or more" if varargs else ""
            raise self._arg_error(
                None, f"kernel '{self.__name__}' takes {len(params)}{more} argument(s) "
                f"({', '.join(p.arg for p in params)}), got {len(args)}",
                "pass one value per parameter",
            )  # fmt: skip
        params += [tree_args.vararg] * (len(args) - len(params))  # *args: one per item
        types, backends, foreign = [], set(), set()
        for i, (a, p) in enumerate(zip(args, params, strict=True)):
            try:
                types.append(argmod.arg_type(a))
            except argmod.ArgProblem as exc:
                message = f"argument '{p.arg}' (#{i}): {exc.message}"
                raise self._arg_error(p, message, exc.hint) from None
            if isinstance(a, argmod.ForeignArray):
                foreign.add(i)
            elif argtypes.is_array(a):
                backends.add(a.backend)
        backend = self._backend(backends, foreign, args) if need_backend else None
        return types, backend, foreign

    def _backend(self, backends: set, foreign: set, args: tuple):
        if len(backends) > 1:
            names = ", ".join(sorted(f"{b.name}:{b.device.index}" for b in backends))
            raise self._arg_error(
                None,
                f"the array arguments live on different devices ({names}); a kernel runs "
                "on the device of its arrays",
                "put every array on one device first: x.to_device(y.device)",
            )
        backend = backends.pop() if backends else registry.get()
        kinds = {args[i].device_type for i in foreign} - {None}  # None: NumPy stand-ins
        alien = sorted(kinds - backend.foreign_device_types)
        if alien:
            raise self._arg_error(
                None,
                f"arrays of other libraries (__cuda_array_interface__ / DLPack) on DLPack "
                f"device type {', '.join(map(str, alien))} cannot be passed on the "
                f"{backend.label or backend.name} backend",
                "copy them into ember arrays, or select the backend of their device",
            )
        return backend

    def _arg_error(self, node, message: str, hint: str | None) -> ArgumentError:
        cap = self.captured
        loc = cap.loc(node if node is not None else cap.tree)
        return messages.error(ArgumentError, message, loc, messages.STAGE_LAUNCH, hint)

    # ------------------------------------------------------------------ inspection
    @api
    def specialize(self, *args) -> driver.Specialization:
        """Compile (without launching) for arguments like ``args``; return the result."""
        return self.dispatch(tuple(args))

    @api
    def inspect(self, *args, stage: str = "source", dialect: str | None = None) -> Any:
        """The output of one compiler stage for arguments like ``args``.

        ``stage``: ``"ir"`` (typed IR text), ``"source"`` (C source), ``"ptx"`` (CUDA only),
        ``"cubin-info"`` (a dict: binary size, registers, memory; CUDA only), ``"sass"``
        (the machine code, CUDA only, needs ``nvdisasm`` or ``cuobjdump`` on PATH) or
        ``"resources"`` (a dict: registers, shared/local/constant memory, max threads per
        block; :mod:`ember.diagnostics.inspect`).  Arrays may be NumPy arrays here (only
        their dtype, ndim and contiguity matter); ``dialect`` (``"cuda"``/``"opencl"``)
        generates source for a dialect without its device.
        """
        if stage not in STAGES:
            raise ValueError(f"stage must be one of {', '.join(STAGES)}, got {stage!r}")
        if self._recheck:
            self._revalidate()
        types, target, backend = self._inspect_types(args, dialect)
        if stage in ("ir", "source"):
            from ember.frontend import ir

            program = self._typed_ir(types, target)
            return ir.dump(program) if stage == "ir" else driver.source_of(program, target)
        from ember.diagnostics import inspect as inspection

        on_device = inspection.on_device(args, backend)
        return inspection.stage(
            stage, target, backend if on_device else None, lambda: self.dispatch(tuple(args)),
            lambda: self._generate(types, target), self.options,
        )  # fmt: skip

    def _typed_ir(self, types, target) -> ir.Program:
        """The typed program for ``types`` on ``target``, with this kernel's settings."""
        return driver.typed_ir(
            self.captured, types, target, self._captures, self.checks, self.launch_bounds
        )

    def _generate(self, types, target) -> tuple[str, str]:
        """The C source for ``types`` on ``target`` and the kernel's C name."""
        program = self._typed_ir(types, target)
        return driver.source_of(program, target), program.kernel.name

    def _inspect_types(self, args: tuple, dialect: str | None):
        import numpy as np

        host = tuple(_host_example(a, np) for a in self._foreign(args))
        types, _, _ = self._types(host, need_backend=False)
        if dialect is not None:
            return types, driver.default_target(dialect), None
        # NumPy examples stand for arrays of any backend: the arrays' own, else the current
        backends = {a.backend for a in host if argtypes.is_array(a)}
        backend = self._backend(backends, set(), host)
        return types, driver.target_of(backend), backend

    @api
    def report(self, *args, dialect: str | None = None, block=None) -> list:
        """The slow paths this kernel pulls in for arguments like ``args``, as data: a list
        of :class:`~ember.diagnostics.report.SlowPath` (the items of the performance
        warning; ``[]`` when there are none).  ``block`` adds the occupancy of that block
        size; ``dialect`` (or NumPy arrays) analyses the generated code without a device
        (CUDA: sm_90, compiled by NVRTC for its resource usage)."""
        from ember.diagnostics import findings, report
        from ember.diagnostics import inspect as inspection

        types, target, backend = self._inspect_types(tuple(args), dialect)
        if inspection.on_device(args, backend):
            return report.spec_items(self.dispatch(tuple(args)), block)
        program = self._typed_ir(types, target)
        device = backend.device if backend is not None else None
        items = report.for_device(findings.program_items(program), device)
        tools = registry.toolchain(target.dialect)
        if tools is not None and "resources" in tools.offline_stages:
            source, name = driver.source_of(program, target), program.kernel.name
            res = tools.inspect_offline("resources", source, target, name, self.options)
            prints = any(i.kind == "print" for i in items)
            items += report.resource_items(res, device, program.kernel.loc, prints)
        return items

    def __repr__(self) -> str:
        return f"<ember.kernel {self.__name__} ({len(self.specializations)} specializations)>"

    # ------------------------------------------------------------------ pickle and copy
    def __reduce__(self):
        """Pickled by reference, like a function: the module and qualified name of the
        decorated function, looked up again where it is loaded (multiprocessing, Dask
        workers import the module; compiled code comes from that process's caches)."""
        module, qualname = self.py_func.__module__, self.py_func.__qualname__
        if _lookup(module, qualname) is not self:
            raise pickle.PicklingError(
                f"cannot pickle kernel {qualname!r}: a kernel is pickled by reference to "
                f"its module-level name, and {module}.{qualname} is not this kernel; "
                "define it with @ember.kernel at the top level of a module"
            )
        return load_kernel, (module, qualname)

    def __copy__(self) -> Kernel:
        return self  # like functions: a kernel has no state to copy but its caches

    def __deepcopy__(self, memo) -> Kernel:
        return self


def load_kernel(module: str, qualname: str) -> Kernel:
    """An unpickled kernel: ``module.qualname`` (the module is imported if needed)."""
    found = _lookup(module, qualname)
    if not isinstance(found, Kernel):
        raise pickle.UnpicklingError(
            f"cannot load kernel {module}.{qualname}: there is no such kernel in this "
            "process (is the module importable here, and unchanged?)"
        )
    return found


def _lookup(module: str, qualname: str) -> Any:
    """The object named ``qualname`` in ``module`` (imported if needed), or None."""
    if "<locals>" in qualname:
        return None
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    return found


def _host_example(a, np):
    """NumPy arrays stand for device arrays of their dtype/ndim/layout in ``inspect``."""
    if isinstance(a, np.ndarray):
        return _NumpyExample(a)
    return a


class _NumpyExample(argmod.ForeignArray):
    __slots__ = ()

    def __init__(self, a):
        from ember import dtypes

        super().__init__(0, a.shape, a.strides, dtypes.dtype(a.dtype), a, None)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _stream_and_shared(rest: tuple):
    """(stream, shared bytes) from a launch configuration's items after grid and block:
    ``[stream]``, ``[stream, shared]`` (Numba's order; a stream ``0`` is the default one), or
    CUDA's ``<<<..., shared, stream>>>`` order: ``[shared]``, ``[shared, stream]``."""
    if not rest:
        return None, 0
    if len(rest) == 1:
        return (None, rest[0]) if _is_int(rest[0]) else (rest[0], 0)
    first, second = rest
    if _is_int(first) and not _is_int(second):  # CUDA's order
        return second, first
    return (None if first == 0 else first), second


class _Nothing:
    """The inline cache before the first launch: never matches."""

    backend = None

    @staticmethod
    def run(*args) -> bool:
        return False


_NO_SPECIALIZATION = _Nothing()


def _launch_bounds(value, func) -> tuple[int, int] | None:
    """``launch_bounds=`` as ``(max threads per block, min blocks per SM or 0)``."""
    if value is None:
        return None
    items = (value,) if _is_int(value) else value
    ok = isinstance(items, tuple | list) and 1 <= len(items) <= 2
    if ok and all(_is_int(v) for v in items) and 1 <= items[0] <= 1024 and items[-1] >= 0:
        return (int(items[0]), int(items[1]) if len(items) == 2 else 0)
    raise TypeError(
        f"launch_bounds of kernel {getattr(func, '__name__', func)!r} must be max_threads "
        f"(1 to 1024) or (max_threads, min_blocks_per_multiprocessor), got {value!r}"
    )
