"""The compiler driver: the one place that chains the pipeline stages.

::

    cache key ──hit──▶ cached binary ──────────────────────────────────────▶ load_module
        │ miss                                                                (Function)
    capture ──▶ type_program ──▶ passes.run ──▶ emit ──▶ backend.compile ──▶ load_module
    (Python)    (typed IR)       (typed IR)     (C source)  (binary) ──▶ cache store

Each stage is a function here so that ``kernel.inspect(stage=...)`` and ``EMBER_DUMP`` can stop
after any of them.  :func:`compile_specialization` runs them all and records how long each
took.  Errors in the user's code surface from typing, located in the Python source; a
failure of the generated C code is a bug in Ember and raises :class:`InternalError` carrying
the generated source and the compiler log.

Cache keys (:func:`cache_parts`, :mod:`ember.cache.key`) are computed before typing: they
cover Ember's version and compiler sources, the source of the kernel and of every function it
can reach, the values it reads from outside (captured constants, module attributes), the
argument types, the options, the dialect and the target's architecture and features, and the
backend's compiler/driver versions.  A hit (a module the warmup preloaded, a bundle, the disk
cache) skips typing, code generation and the compiler.
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from dataclasses import field
from typing import TYPE_CHECKING, Any

from ember._records import record
from ember.cache import key as keymod
from ember.cache import lookup as cache_lookup
from ember.cache.disk import CacheWarning
from ember.cache.entry import Entry, entry_name, make_meta
from ember.codegen import abi as abi_mod
from ember.codegen import dialects
from ember.compiler import args as argmod
from ember.compiler import deep
from ember.config import settings
from ember.diagnostics import report
from ember.errors import CompileError, InternalError, UnsupportedFeatureError
from ember.frontend import launchsize
from ember.frontend.capture import Captured
from ember.frontend.types import Target, Type
from ember.runtime import argtypes
from ember.runtime.allocator import note_uses
from ember.runtime.backend import PTR

if TYPE_CHECKING:  # like the typer and the emitter, imported by the first compile
    from ember.frontend import ir


def target_of(backend) -> Target:
    """The :class:`Target` of a backend's device (:attr:`Backend.target`)."""
    return backend.target


def default_target(dialect_name: str) -> Target:
    """A target for generating source without a device: the dialect's typical device
    (CUDA: sm_90; OpenCL: like PoCL's CPU device)."""
    d = dialects.get(dialect_name)
    return Target(
        d.name, d.offline_arch, d.offline_warp_size, d.offline_features,
        device=f"the default {d.name} target", feature_names=d.feature_names,
    )  # fmt: skip


# ------------------------------------------------------------------------- stages


def typed_ir(
    cap: Captured,
    arg_types: list[Type],
    target: Target,
    captures=None,
    checks: bool = False,
    launch_bounds: tuple[int, int] | None = None,
) -> ir.Program:
    """Stage 2-3: Python -> typed IR (with device functions), then the IR passes.

    ``captures`` (function -> :class:`Captured`) is shared by a kernel's specializations so
    that the globals every function reads are frozen once.  ``checks``: bounds checks and
    checked conversions (``boundscheck=True``).  ``launch_bounds``: the kernel's
    ``(max threads per block, min blocks per SM)``, for the dialect to declare.  Deeply
    nested code is typed on a deep stack (:mod:`ember.compiler.deep`)."""
    # The typer, the passes and the emitter are imported by the first compile: a process
    # whose kernels all come from the cache never needs them (~0.1 s of imports, issue 19).
    from ember.frontend import passes
    from ember.frontend.typer import TypingContext, type_program

    def stage() -> ir.Program:
        ctx = TypingContext(target, captures if captures is not None else {}, checks=checks)
        program = passes.run(type_program(cap, arg_types, target, ctx))
        program.launch_bounds = launch_bounds
        return program

    return deep.run(stage, where=cap)


def source_of(program: ir.Program, target: Target) -> str:
    """Stage 4: typed IR -> C source in the target's dialect.

    Raises :class:`UnsupportedFeatureError` when the code needs double precision (a
    ``float64`` value, a Python float argument) on a device without it."""
    from ember.codegen.emitter import Emitter

    dialect = dialects.get(target.dialect)
    if dialect.static_shared_limit is not None:
        _check_static_shared(program, dialect.static_shared_limit, dialect.name)
    emitter = Emitter(program, dialect)
    source = deep.run(emitter.source)
    if "fp64" in emitter.h.features and not target.has("fp64"):
        raise UnsupportedFeatureError(
            f"kernel '{program.kernel.pyname}' uses float64 (a float64 array or value, or a "
            f"Python float argument or variable), but {target.lacks('fp64', 'double precision')}"
            "\n  hint: pass numpy.float32(...) for Python floats and use float32 arrays"
        )
    return source


def _check_static_shared(program: ir.Program, limit: int, dialect: str) -> None:
    """Refuse shared arrays of fixed sizes past the dialect's static limit (CUDA: 48 KiB a
    block) with the arrays named, before the compiler fails on them."""
    from ember.frontend import ir

    arrays = [
        (math.prod(s.var.type.shape) * s.var.type.dtype.itemsize, s.var.pyname, str(s.loc))
        for s in program.kernel.body
        if isinstance(s, ir.ArrayDecl) and getattr(s.var.type, "space", None) == "shared"
        and s.var.type.shape is not None
    ]  # fmt: skip
    used = sum(a[0] for a in arrays)
    if used <= limit:
        return
    listed = ", ".join(f"'{name}' {n} bytes at {at}" for n, name, at in sorted(arrays)[::-1][:4])
    raise UnsupportedFeatureError(
        f"kernel '{program.kernel.pyname}' declares {used} bytes of shared memory with fixed "
        f"sizes ({listed}); {dialect.upper()} allows {limit} bytes of those a block\n"
        "  hint: make the arrays smaller, or size the largest at launch "
        "(ember.shared(n, dtype) with n from an argument or ember.block_dim): dynamic shared "
        "memory can use the device's whole shared memory per block"
    )


def build(backend, source: str, name: str, options: tuple[str, ...]) -> bytes:
    """Stage 5: C source -> binary; a failure here is Ember's bug (InternalError)."""
    cache_lookup.stats.compiles += 1
    try:
        return backend.compile(source, name, options)
    except CompileError as exc:
        raise InternalError(
            f"the {backend.dialect.name} code Ember generated for kernel {name!r} does not "
            "compile.\n"
            f"Compiler log:\n{exc.log or exc}\n\nGenerated source:\n{_numbered(source)}"
        ) from exc


def _numbered(source: str) -> str:
    from ember.errors import numbered

    return numbered(source)


# ------------------------------------------------------------------------- the whole pipeline


@record(eq=False)
class Specialization:
    """One kernel compiled for one argument signature on one backend.

    ``program`` is None when the binary came from a cache (nothing was typed); ``origin``
    says where it came from: ``"compiled"``, ``"preloaded"``, ``"bundle"`` or ``"disk"``."""

    name: str
    program: ir.Program | None
    source: str
    abi: list[abi_mod.AbiParam]
    binary: bytes
    function: Any  # the backend's Function
    backend: Any
    key: str
    timings: dict[str, float] = field(default_factory=dict)
    pack: Any = None  # pack(*args) -> native values (compiler/args.py)
    run: Any = None  # run(grid, block, shared_mem, stream, args) -> launched? (fast path)
    origin: str = "compiled"
    entry: Any = None  # the ember.cache Entry (what the disk cache and bundles store)
    sites: tuple = ()  # run-time check sites, for KernelError (diagnostics/device_errors.py)
    kernel_id: int = 0  # passed to a kernel that can fail
    errors: Any = None  # the backend's error record, for a kernel that can fail
    slow_paths: tuple = ()  # found in the code (diagnostics/findings.py)
    kernel_loc: Any = None  # the kernel's def line, for the report
    announced: bool = False  # slow-path report done at the first launch
    # dynamic shared memory layout and cooperative launch (frontend/launchsize.py)
    launch_info: dict = field(default_factory=dict)
    shared_bytes: Any = None  # shared_bytes(grid, block, args) -> bytes (compiler/args.py)

    def launch(self, args: tuple, grid, block, shared_mem: int = 0, stream=None) -> None:
        """Launch with ``args`` (which must have this specialization's types)."""
        if not self.announced:
            report.announce(self, block)  # the slow-path report, once (EMBER_DIAGNOSTICS)
        if not self.run(grid, block, shared_mem, stream, args):
            if self.errors is not None:
                self.errors.before_launch()
            if self.shared_bytes is not None:
                shared_mem = max(shared_mem, self.shared_bytes(grid, block, args))
            launch = self.function.launch
            if self.launch_info.get("cooperative"):
                launch = self.function.launch_cooperative
            native = self.pack(*args, stream=stream, shared_mem=shared_mem)
            launch(grid, block, native, shared_mem, stream)
            if self.errors is not None:
                self.errors.launched(stream)
            note_uses(args, stream)

    def bind(self, args: tuple, grid: tuple, block: tuple, varying: dict[int, tuple[int, int]],
             slots: int | None = None):  # fmt: skip
        """A launch of this specialization with ``args`` fixed but for the addresses of
        the arrays in ``varying`` (see :func:`ember.compiler.args.make_bound`): the hot
        path of a caller that made those arrays itself and knows their types, so no guard
        is needed.  None for a kernel whose launch needs more than its arguments (one that
        can fail, dynamic shared memory, a cooperative launch) or when a varying argument
        is not an Ember array: the caller keeps :meth:`launch` then."""
        if (
            self.errors is not None
            or self.shared_bytes is not None
            or self.launch_info.get("cooperative")
        ):
            return None
        if any(type(args[i]) is not argtypes.ARRAY for i in varying):
            return None
        if not self.announced:
            report.announce(self, block)
        native = self.pack(*args, stream=None, shared_mem=0)
        offsets = self.backend.dialect.separate_offsets
        return argmod.make_bound(self.abi, native, varying, self.function.launch, grid, block,
                                 offsets, slots)  # fmt: skip


def compile_specialization(
    cap: Captured,
    arg_types: list[Type],
    backend,
    options: tuple[str, ...] = (),
    captures=None,
    checks: bool = False,
    launch_bounds: tuple[int, int] | None = None,
) -> Specialization:
    """The specialization for ``arg_types`` on ``backend``.

    First the cache (:mod:`ember.cache`): the key is computed before typing, so a hit
    (a preloaded module, a bundle, the disk) skips every stage.  Otherwise every stage runs,
    timed, and the result is stored for the next process."""
    captures = captures if captures is not None else {}
    target = target_of(backend)
    t0 = time.perf_counter()
    parts = cache_parts(cap, arg_types, target, options, backend, captures, checks, launch_bounds)
    key = keymod.digest(parts)
    if not settings.dump:  # EMBER_DUMP wants every stage: compile
        hit = cache_lookup.lookup(key, backend)
        spec = _from_cache(hit, backend, t0) if hit is not None else None
        if spec is not None:
            return spec
    spec = deep.run(_compile, cap, arg_types, backend, options, captures, target, checks,
                    launch_bounds, key, where=cap)  # fmt: skip
    spec.key = key
    pyname = f"{cap.func.__module__}.{cap.func.__qualname__}"
    meta = make_meta(spec.name, pyname, spec.abi, backend)
    meta.update(report.to_meta(spec))  # check sites and slow paths, for cache hits
    meta["launch"] = spec.launch_info  # dynamic shared memory, cooperative launch
    spec.entry = Entry(key, spec.binary, spec.source, parts, meta)
    cache_lookup.store(spec.entry, backend)
    return spec


def _compile(
    cap, arg_types, backend, options, captures, target, checks, launch_bounds, key
) -> Specialization:
    """Every stage, timed: typing, C generation, the backend compiler, module load.

    The kernel's C name ends in its key (:func:`~ember.cache.entry.entry_name`), which binds
    the binary to the key: a cache entry or bundle member holding another kernel's binary
    has no function of that name, and is refused."""
    from ember.frontend import ir

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    program = typed_ir(cap, arg_types, target, captures, checks, launch_bounds)
    program.kernel.name = entry_name(program.kernel.name, key)
    t1 = time.perf_counter()
    source = source_of(program, target)
    t2 = time.perf_counter()
    dump("ir", cap.name, lambda: ir.dump(program))
    dump("source", cap.name, lambda: source)
    name = program.kernel.name
    binary = build(backend, source, name, options)
    t3 = time.perf_counter()
    if "ptx" in backend.offline_stages:
        dump("ptx", cap.name, lambda: offline_stage(backend, "ptx", source, target, name, options))
    abi = abi_mod.kernel_abi(program.kernel, dialects.get(target.dialect))
    function = backend.load_module(binary).function(name, backend_params(abi))
    t4 = time.perf_counter()
    timings.update(typing=t1 - t0, codegen=t2 - t1, compile=t3 - t2, load=t4 - t3)
    spec = Specialization(name, program, source, abi, binary, function, backend, "", timings)
    spec.launch_info = {**launchsize.layout(program), "cooperative": program.grid_sync}
    from ember.diagnostics import device_errors, findings

    spec.sites = device_errors.site_table(program)
    findings.compiled(spec, program)
    return spec


def _from_cache(hit, backend, t0: float) -> Specialization | None:
    """A specialization from a cached entry, or None (with a warning) when its binary does
    not load: the caller recompiles and the new entry replaces it."""
    entry = hit.entry
    t1 = time.perf_counter()
    try:
        abi = entry.abi()
        launch_info = dict(entry.meta.get("launch", {}))
        launchsize.layout_bytes(launch_info)  # data only: a malformed layout is a miss
        module = hit.module if hit.module is not None else backend.load_module(entry.binary)
        function = module.function(entry.name, backend_params(abi))
    except Exception as exc:  # a damaged or foreign binary must never be fatal
        warnings.warn(
            f"the cached binary of kernel {entry.pyname!r} (key {entry.key[:12]}, from "
            f"{hit.origin}) cannot be loaded ({type(exc).__name__}: {exc}); recompiling",
            CacheWarning,
            stacklevel=5,
        )
        cache_lookup.discard(entry.key)
        return None
    t2 = time.perf_counter()
    cache_lookup.note(entry, backend)
    timings = {"cache": t1 - t0, "load": t2 - t1}
    spec = Specialization(
        entry.name, None, entry.source, abi, entry.binary, function, backend, entry.key,
        timings, origin=hit.origin, entry=entry,
    )  # fmt: skip
    report.from_meta(spec, entry.meta)
    spec.launch_info = launch_info
    return spec


def backend_params(abi: list[abi_mod.AbiParam]) -> tuple:
    """The parameter list for :meth:`~ember.runtime.backend.Module.function`."""
    return tuple(PTR if p.dtype is None else p.dtype for p in abi)


def offline_stage(toolchain, stage: str, source: str, target: Target, name: str, options=()):
    """Stage ``stage`` of ``source`` from ``toolchain`` (a backend or backend class) without
    a device (:meth:`~ember.runtime.backend.Backend.inspect_offline`: PTX from NVRTC...)."""
    return toolchain.inspect_offline(stage, source, target, name, tuple(options))


def dump(stage: str, kernel: str, text) -> None:
    """Print a stage's output to stderr when ``EMBER_DUMP`` names it."""
    if stage in settings.dump:
        print(f"===== ember: {stage} of kernel '{kernel}' =====\n{text()}", file=sys.stderr)


# ------------------------------------------------------------------------- keys


def cache_parts(
    cap: Captured,
    arg_types,
    target: Target,
    options,
    backend,
    captures,
    checks=False,
    launch_bounds=None,
) -> dict:
    """What the cache key of a specialization is the hash of (see :mod:`ember.cache.key`):
    computed from the kernel's dependencies, not its IR, so a hit needs no typing."""
    deps = deep.run(keymod.dependencies, cap, captures, where=cap)
    codegen = {"boundscheck": bool(checks)}
    if launch_bounds is not None:
        codegen["launch_bounds"] = list(launch_bounds)
    statics = [keymod.static_argument(t.value, captures) for t in arg_types if _is_static(t)]
    if statics:  # the code of functions passed as compile-time arguments
        codegen["static_arguments"] = statics
    versions = keymod.versions(backend)
    return keymod.key_parts(deps, arg_types, target, options, versions, codegen)


def _is_static(t) -> bool:
    from ember.frontend.types import CompileTime

    return isinstance(t, CompileTime)
