"""The compiler driver: the one place that chains the pipeline stages.

::

    capture ──▶ type_program ──▶ passes.run ──▶ emit ──▶ backend.compile ──▶ load_module
    (Python)    (typed IR)       (typed IR)     (C source)  (binary)          (Function)

Each stage is a function here so that ``kernel.inspect(stage=...)`` and ``EMBER_DUMP`` can stop
after any of them.  :func:`compile_specialization` runs them all and records how long each
took.  Errors in the user's code surface from typing, located in the Python source; a
failure of the generated C code is a bug in Ember and raises :class:`InternalError` carrying
the generated source and the compiler log.

Cache keys (:func:`cache_key`) are text, ready to be written to disk: they cover Ember's
version, the source of the kernel and of every device function it reached, the captured
constants, the argument types, the options, the dialect and the target's architecture and
features, and the backend's compiler/driver versions.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

from ember._version import __version__
from ember.codegen import abi as abi_mod
from ember.codegen import dialects
from ember.codegen.emitter import Emitter
from ember.config import settings
from ember.errors import CompileError, InternalError, UnsupportedFeatureError
from ember.frontend import ir, passes
from ember.frontend.capture import Captured
from ember.frontend.typer import TypingContext, type_program
from ember.frontend.types import CUDA_FEATURES, Target, Type
from ember.runtime.allocator import note_uses

_targets: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # backend -> Target


def target_of(backend) -> Target:
    """The :class:`Target` of a backend's device (features read once per backend)."""
    found = _targets.get(backend)
    if found is not None:
        return found
    dev = backend.device
    if backend.dialect == "cuda":
        target = Target("cuda", dev.arch, dev.warp_size or 32, CUDA_FEATURES)
    else:
        extra = dev.extra or {}
        exts = set(extra.get("extensions", ()))
        features = {
            name for name in ("fp64", "fp16", "int64_atomics", "subgroups") if extra.get(name)
        }
        if "cl_khr_subgroup_shuffle" in exts:
            features.add("subgroup_shuffle")
        if "cl_khr_subgroup_shuffle_relative" in exts:
            features.add("subgroup_shuffle_relative")
        target = Target(backend.dialect, None, dev.warp_size or 1, frozenset(features))
    _targets[backend] = target
    return target


def default_target(dialect: str) -> Target:
    """A target for generating source without a device (CUDA: sm_90; OpenCL: like PoCL)."""
    if dialect == "cuda":
        return Target("cuda", "sm_90", 32, CUDA_FEATURES)
    return Target("opencl", None, 1, frozenset({"fp64", "int64_atomics"}))


# ------------------------------------------------------------------------- stages


def typed_ir(cap: Captured, arg_types: list[Type], target: Target, captures=None) -> ir.Program:
    """Stage 2-3: Python -> typed IR (with device functions), then the IR passes.

    ``captures`` (function -> :class:`Captured`) is shared by a kernel's specializations so
    that the globals every function reads are frozen once."""
    ctx = TypingContext(target, captures if captures is not None else {})
    program = type_program(cap, arg_types, target, ctx)
    return passes.run(program)


def source_of(program: ir.Program, target: Target) -> str:
    """Stage 4: typed IR -> C source in the target's dialect.

    Raises :class:`UnsupportedFeatureError` when the code needs double precision (a
    ``float64`` value, a Python float argument) on a device without it."""
    emitter = Emitter(program, dialects.get(target.dialect))
    source = emitter.source()
    if target.dialect == "opencl" and "fp64" in emitter.h.features and not target.has("fp64"):
        raise UnsupportedFeatureError(
            f"kernel '{program.kernel.pyname}' uses float64 (a float64 array or value, or a "
            "Python float argument or variable), but this OpenCL device has no double "
            "precision (cl_khr_fp64)\n  hint: pass numpy.float32(...) for Python floats "
            "and use float32 arrays"
        )
    return source


def build(backend, source: str, name: str, options: tuple[str, ...]) -> bytes:
    """Stage 5: C source -> binary; a failure here is Ember's bug (InternalError)."""
    try:
        return backend.compile(source, name, options)
    except CompileError as exc:
        raise InternalError(
            f"the {backend.dialect} code Ember generated for kernel {name!r} does not compile.\n"
            f"Compiler log:\n{exc.log or exc}\n\nGenerated source:\n{_numbered(source)}"
        ) from exc


def _numbered(source: str) -> str:
    from ember.errors import numbered

    return numbered(source)


# ------------------------------------------------------------------------- the whole pipeline


@dataclass(eq=False)
class Specialization:
    """One kernel compiled for one argument signature on one backend."""

    name: str
    program: ir.Program
    source: str
    abi: list[abi_mod.AbiParam]
    binary: bytes
    function: Any  # the backend's Function
    backend: Any
    key: str
    timings: dict[str, float] = field(default_factory=dict)
    pack: Any = None  # pack(*args) -> native values (compiler/args.py)
    run: Any = None  # run(grid, block, shared_mem, stream, args) -> launched? (fast path)

    def launch(self, args: tuple, grid, block, shared_mem: int = 0, stream=None) -> None:
        """Launch with ``args`` (which must have this specialization's types)."""
        if not self.run(grid, block, shared_mem, stream, args):
            self.function.launch(grid, block, self.pack(*args), shared_mem, stream)
            note_uses(args, stream)


def compile_specialization(
    cap: Captured, arg_types: list[Type], backend, options: tuple[str, ...] = (), captures=None
) -> Specialization:
    """Run every stage for ``arg_types`` on ``backend``; times each stage."""
    target = target_of(backend)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    program = typed_ir(cap, arg_types, target, captures)
    t1 = time.perf_counter()
    source = source_of(program, target)
    t2 = time.perf_counter()
    dump("ir", cap.name, lambda: ir.dump(program))
    dump("source", cap.name, lambda: source)
    name = program.kernel.name
    binary = build(backend, source, name, options)
    t3 = time.perf_counter()
    if backend.dialect == "cuda":
        dump("ptx", cap.name, lambda: ptx_of(source, target.arch or "sm_90", name, options))
    abi = abi_mod.kernel_abi(program.kernel, backend.dialect)
    function = backend.load_module(binary).function(name, abi_mod.backend_params(abi))
    t4 = time.perf_counter()
    timings.update(typing=t1 - t0, codegen=t2 - t1, compile=t3 - t2, load=t4 - t3)
    key = cache_key(program, arg_types, target, options, backend)
    return Specialization(name, program, source, abi, binary, function, backend, key, timings)


def ptx_of(source: str, arch: str, name: str, options: tuple[str, ...] = ()) -> str:
    """The PTX NVRTC makes from ``source`` (for inspection; needs no GPU)."""
    from ember.compiler.nvrtc import compile_program

    return compile_program(source, arch, name, options, output="ptx").binary.decode()


def dump(stage: str, kernel: str, text) -> None:
    """Print a stage's output to stderr when ``EMBER_DUMP`` names it."""
    if stage in settings.dump:
        print(f"===== ember: {stage} of kernel '{kernel}' =====\n{text()}", file=sys.stderr)


# ------------------------------------------------------------------------- keys


def cache_key(program: ir.Program, arg_types, target: Target, options, backend=None) -> str:
    """A hex digest of everything that changes the compiled binary (see module doc)."""
    parts = {
        "ember": __version__,
        "kernel": program.kernel.pyname,
        "sources": sorted(program.sources.items()),
        "constants": program.constants,
        "signature": [t.key() for t in arg_types],
        "options": list(options),
        "target": target.key(),
        "versions": _versions(backend),
    }
    text = json.dumps(parts, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


_versions_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _versions(backend) -> list:
    if backend is None:
        return []
    if backend not in _versions_cache:
        try:
            _versions_cache[backend] = sorted(backend.library_versions().items())
        except Exception:  # a backend that cannot say: the key just omits it
            _versions_cache[backend] = []
    return _versions_cache[backend]
