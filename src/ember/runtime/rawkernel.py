"""``ember.RawKernel``: a kernel written as CUDA C++ or OpenCL C source.

The parameter list is read from the source, so launches are checked (argument count,
pointer vs scalar, integer vs float) before any device work::

    k = ember.RawKernel(src, "axpy")
    k[blocks, threads](2.0, x, y, n)          # x, y: ember arrays

Compilation happens on first launch and is kept per device.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from ember import dtypes
from ember.codegen import dialects
from ember.errors import CompileError, LaunchError, not_on_device
from ember.runtime import argtypes
from ember.runtime import backend as _backend
from ember.runtime.allocator import note_uses
from ember.runtime.backend import PTR, Backend, Buffer, Function
from ember.runtime.checks import check_arg_count, dim3
from ember.tracebacks import api, hide_internal_frames

# C spellings (both dialects) -> Ember dtype.  `long` is 64-bit in OpenCL and on LP64 hosts.
_C_TYPES = {
    "bool": dtypes.bool_, "char": dtypes.int8, "signed char": dtypes.int8,
    "unsigned char": dtypes.uint8, "uchar": dtypes.uint8, "short": dtypes.int16,
    "unsigned short": dtypes.uint16, "ushort": dtypes.uint16, "int": dtypes.int32,
    "unsigned int": dtypes.uint32, "unsigned": dtypes.uint32, "uint": dtypes.uint32,
    "long": dtypes.int64, "long long": dtypes.int64, "unsigned long": dtypes.uint64,
    "unsigned long long": dtypes.uint64, "ulong": dtypes.uint64, "size_t": dtypes.uint64,
    "ptrdiff_t": dtypes.int64, "half": dtypes.float16, "__half": dtypes.float16,
    "float": dtypes.float32, "double": dtypes.float64,
    **{f"int{b}_t": dtypes.dtype(f"int{b}") for b in (8, 16, 32, 64)},
    **{f"uint{b}_t": dtypes.dtype(f"uint{b}") for b in (8, 16, 32, 64)},
}  # fmt: skip
_QUALIFIERS = re.compile(
    r"\b(const|volatile|restrict|__restrict__|__restrict|__global|global|__constant|constant"
    r"|__private|private|signed(?=\s+(char|short|int|long)))\b"
)
_LOCAL = re.compile(r"\b(__local|local)\b")


def parse_params(source: str, name: str) -> tuple[tuple, bool]:
    """Parameters of kernel ``name`` in ``source``: a tuple of DType / ``PTR``.

    The second value is True when the last parameter is an OpenCL ``__local`` pointer
    (dynamic local memory, sized by ``shared_mem=`` at launch and not passed by the caller).
    """
    found = re.search(rf"\b{re.escape(name)}\s*\(([^)]*)\)\s*\{{", source)
    if found is None:
        raise LaunchError(f"no kernel named {name!r} found in the source")
    text = found.group(1).strip()
    if text in ("", "void"):
        return (), False
    params: list = []
    local_tail = False
    for i, decl in enumerate(p.strip() for p in text.split(",")):
        if _LOCAL.search(decl):
            if i != text.count(","):
                raise LaunchError(f"kernel {name!r}: a __local pointer must be the last parameter")
            local_tail = True
            continue
        params.append(_param_type(decl, name))
    return tuple(params), local_tail


def _param_type(decl: str, kernel: str):
    if "*" in decl or "[" in decl:
        return PTR
    words = _QUALIFIERS.sub(" ", decl).split()
    ctype = " ".join(words[:-1]) if len(words) > 1 else decl
    if ctype not in _C_TYPES:
        raise LaunchError(
            f"kernel {kernel!r}: cannot pass parameter {decl!r} from Python; use a pointer or "
            f"one of the scalar types {', '.join(sorted(_C_TYPES))}"
        )
    return _C_TYPES[ctype]


def _converter(param, index: int, kernel: str, be: Backend) -> Callable[[Any], Any]:
    """A one-argument function turning a Python value into ``param``'s native value.

    The common cases (an ember array on this backend; a Python or NumPy number of a fitting
    kind) are one type test; everything else goes to the checking slow path.
    """
    ndarray = argtypes.ARRAY

    if param == PTR:
        if be.pointer_offsets:  # addresses are plain ints: skip the method call

            def pointer(v):
                if type(v) is ndarray and v.backend is be:
                    return v.buffer.handle + v.offset
                return _pointer(v, index, kernel, be)
        else:

            def pointer(v):
                if type(v) is ndarray and v.backend is be:
                    return be.native_pointer(v.buffer, v.offset)
                return _pointer(v, index, kernel, be)

        return pointer
    kinds = "biuf" if param.is_float else ("b" if param is dtypes.bool_ else "biu")
    python = {"b": (bool,), "biu": (bool, int), "biuf": (bool, int, float)}[kinds]

    def numpy_types():
        found = (dtypes.loaded_scalar_type(t) for t in dtypes.ALL if t.kind in kinds)
        return {t for t in found if t is not None}

    fits = set(python) | numpy_types()

    def scalar(v):
        if type(v) in fits:
            return v
        if type(v).__module__ == "ml_dtypes":  # imported after the kernel was made
            fits.update(numpy_types())
            if type(v) in fits:
                return v
        raise LaunchError(
            f"kernel {kernel!r}: argument {index} must be a {param.name} scalar, "
            f"got {type(v).__name__}"
        )

    scalar.fits = fits  # type: ignore[attr-defined]  # the generated fast path tests it inline
    return scalar


def _values_function(params: Sequence[Any], kernel: str, be: Backend) -> Callable[..., tuple]:
    """``values(*args)``: the native value of every argument, as a tuple.

    Generated per kernel so that a launch costs one call: each common case (an ember array
    of this backend for a pointer, a number of a fitting kind for a scalar) is an inline
    type test; anything else goes to :func:`_converter`'s checking path."""
    namespace: dict[str, Any] = {"_nd": argtypes.ARRAY, "_be": be}
    items = []
    for i, p in enumerate(params):
        namespace[f"_c{i}"] = _converter(p, i, kernel, be)
        if p == PTR:
            fast = (
                f"a{i}.buffer.handle + a{i}.offset"
                if be.pointer_offsets
                else f"_be.native_pointer(a{i}.buffer, a{i}.offset)"
            )
            items.append(f"{fast} if type(a{i}) is _nd and a{i}.backend is _be else _c{i}(a{i})")
        else:
            namespace[f"_f{i}"] = namespace[f"_c{i}"].fits
            items.append(f"a{i} if type(a{i}) in _f{i} else _c{i}(a{i})")
    names = ", ".join(f"a{i}" for i in range(len(params)))
    body = "".join(f"        {item},\n" for item in items)
    source = f"def values({names}):\n    return (\n{body}    )\n"
    exec(compile(source, f"<ember RawKernel {kernel} arguments>", "exec"), namespace)  # noqa: S102
    return namespace["values"]


class _OtherDevice(Exception):
    """An array argument lives on another device of the kernel's backend: the launch moves
    there (the kernel's module is loaded once per device)."""

    def __init__(self, backend: Backend):
        self.backend = backend


def _pointer(v: Any, index: int, kernel: str, be: Backend) -> Any:
    if argtypes.is_array(v):
        if v.backend is not be and type(v.backend) is type(be):
            raise _OtherDevice(v.backend)
        if v.backend is not be:
            raise LaunchError(
                f"kernel {kernel!r}: argument {index} lives on the {v.backend.name} backend, "
                f"the kernel runs on {be.name}"
            )
        return be.native_pointer(v.buffer, v.offset)
    if isinstance(v, Buffer):
        return be.native_pointer(v, 0)
    if type(v).__module__ == "numpy":
        raise LaunchError(str(not_on_device(v, f"kernel {kernel!r} argument {index}")))
    raise LaunchError(
        f"kernel {kernel!r}: argument {index} must be an ember array or buffer (a pointer "
        f"parameter), got {type(v).__name__}"
    )


def source_dialect(source: str) -> tuple[str, list[str]] | None:
    """The dialect ``source`` is written in, with the spellings that say so, when only one
    dialect's spellings (its ``source_markers``) appear (else None)."""
    found = {}
    for name in dialects.names():
        markers = dialects.get(name).source_markers
        if markers is not None:
            found[name] = sorted({m.group(0) for m in markers.finditer(source)})
    hits = [d for d, words in found.items() if words]
    return (hits[0], found[hits[0]]) if len(hits) == 1 else None


def _dialect_error(exc: CompileError, kernel, be) -> CompileError | None:
    """The error for a source written for the other backend's compiler (None otherwise)."""
    guess = source_dialect(kernel.source)
    if guess is None or guess[0] == be.dialect.name or be.dialect.source_markers is None:
        return None
    other, words = guess
    mine = be.dialect.language
    message = (
        f"RawKernel {kernel.name!r}: this source is {dialects.get(other).language} (it uses "
        f"{', '.join(words[:4])}), but the {be.name} backend compiles "
        f"{mine}.  Write the kernel in {mine} "
        f"(choose by ember.get_backend().dialect), or use the backend it was written for "
        f"(EMBER_BACKEND={other}, ember.use_backend({other!r})).\n\nThe compiler said:\n{exc}"
    )
    return CompileError(message, log=exc.log, source=exc.source)


_BUILDS = 64  # native runners made at most per kernel: types that keep changing stay in Python


class _Runner:
    """What ``RawKernel._last`` holds: ``run(grid, block, shared_mem, stream, args)``, a
    native guarded launch (True: launched), or the one that takes nothing."""

    __slots__ = ("run",)

    def __init__(self, run: Callable[..., bool]):
        self.run = run


_NO_RUNNER = _Runner(lambda grid, block, shared_mem, stream, args: False)


def _native_guards(params: Sequence[Any], args: tuple) -> tuple[tuple, bytes] | None:
    """The guards and value sources of :meth:`Function.guarded_runner` (the encoding of
    ``ember/backends/cuda/_ccall_runner.c``) for a launch of ``args`` that the Python path
    accepted: a pointer parameter takes an ember array of the same dtype, rank and layout
    on the same device (its launch view's token; the value is the view's data address), a
    scalar parameter a value of the same type.  None where an argument is something else
    (a Buffer, a foreign array): those launches stay on the Python path."""
    if len(args) != len(params) or len(args) > 255:
        return None
    guards, sources = [], bytearray()
    for i, (p, a) in enumerate(zip(params, args, strict=True)):
        if p == PTR:
            if type(a) is not argtypes.ARRAY:
                return None
            guards.append((1, argtypes.ARRAY, argtypes.launch_view(a)[0]))
            sources += bytes((i, 2))  # item 1 of the view: the data address
        else:
            guards.append((0, type(a), None))
            sources += bytes((i, 0))  # the value itself, packed by the parameter's kind
    return tuple(guards), bytes(sources)


class RawKernel:
    """A kernel from C source in the backend's dialect (CUDA C++, OpenCL C, or C with
    ``EMBER_KERNEL`` and OpenCL's work-item functions on the cpu backend).

    Parameters
    ----------
    source : str
        The source; for CUDA, declare the kernel ``extern "C" __global__``.
    name : str
        The kernel function's name.
    options : sequence of str
        Extra compiler options (NVRTC or OpenCL build options).
    backend : str, optional
        ``"cuda"``, ``"opencl"`` or ``"cpu"``; default: the current backend.
    """

    # `_last` is a slot: the compiled launcher reads it in place on every launch
    __slots__ = ("_last", "__dict__", "__weakref__")

    @api
    def __init__(self, source: str, name: str, options: Sequence[str] = (), backend=None):
        self.source = source
        self.name = name
        self.options = tuple(options)
        self.params, self._local_tail = parse_params(source, name)
        self._backend_name = backend
        self._loaded: tuple[Backend, Function, Callable] | None = None  # the last device's
        self._devices: dict[Backend, tuple[Backend, Function, Callable]] = {}
        self._configs: dict[Any, Callable[..., None]] = {}
        # the backend's native guarded launches (Function.guarded_runner) for the argument
        # types of the two last launches that the Python path took: the newest is tried
        # first, by the launcher; the other one by _launch_slow
        self._last = self._older = _NO_RUNNER
        self._built = 0  # runners made so far (types that keep changing stop at _BUILDS)

    def _load(self, be: Backend | None = None) -> tuple[Backend, Function, Callable]:
        """Compile and load for ``be`` (default: the current device of the kernel's backend),
        once per device; it becomes the device launches try first."""
        be = be or _backend.get(self._backend_name)
        found = self._devices.get(be)
        if found is not None:
            self._loaded = found
            return found
        try:
            binary = be.compile(self.source, self.name, self.options)
        except CompileError as exc:
            raise _dialect_error(exc, self, be) or exc from None
        fn = be.load_module(binary).function(self.name, self.params)
        self._loaded = self._devices[be] = (be, fn, _values_function(self.params, self.name, be))
        return self._loaded

    @api
    def __call__(self, grid, block, args: Sequence[Any], *, shared_mem: int = 0, stream=None):
        """Launch ``grid`` blocks of ``block`` threads with ``args`` (CuPy's form)."""
        try:
            launch = self._configs[(grid, block)]
        except (KeyError, TypeError):
            launch = self._launcher(grid, block)
        launch(*args, shared_mem=shared_mem, stream=stream)

    @api
    def __getitem__(self, config) -> Callable[..., None]:
        """``kernel[grid, block](*args, shared_mem=0, stream=None)``."""
        try:
            return self._configs[config]
        except (KeyError, TypeError):
            pass
        if not (isinstance(config, tuple) and len(config) == 2):
            raise LaunchError("launch configuration must be kernel[grid, block]")
        return self._launcher(*config)

    def _launcher(self, grid, block) -> Callable[..., None]:
        """A launch function with the dimensions checked once (kept per configuration): the
        compiled launcher where the compiler layer registered it, else the closure that does
        what it does."""
        g = dim3(grid, "grid")
        b = dim3(block, "block")
        configured = argtypes.compiled_launcher()
        if configured is not None:
            launch = configured(self, g, b, None, 0, hide_internal_frames)
        else:

            def launch(*args, shared_mem: int = 0, stream=None) -> None:
                try:  # costs nothing until it catches (ember/tracebacks.py)
                    if not self._last.run(g, b, shared_mem, stream, args):
                        self._launch_slow(g, b, shared_mem, stream, args)
                except Exception as exc:
                    hide_internal_frames(exc)
                    raise

        try:
            if len(self._configs) < 64:
                self._configs[(grid, block)] = launch
        except TypeError:  # unhashable configuration (lists): just not kept
            pass
        return launch

    def _launch_slow(self, g, b, shared_mem, stream, args: tuple) -> None:
        """A launch the newest native runner did not take: the other one, else the checking
        Python path (which then makes a runner for these types)."""
        if self._older.run(g, b, shared_mem, stream, args):
            self._last, self._older = self._older, self._last  # the pattern in use first
            return
        be, fn, values = self._loaded or self._load()
        if len(args) != len(fn.params):
            check_arg_count(fn, args)
        try:
            native = values(*args)
        except _OtherDevice as other:  # arrays of another device: launch there
            be, fn, values = self._load(other.backend)
            try:
                native = values(*args)
            except _OtherDevice:
                raise LaunchError(
                    f"kernel {self.name!r}: the array arguments live on different "
                    "devices; put them on one device first (x.to_device(y.device))"
                ) from None
        fn.launch(g, b, native, shared_mem, stream)
        if stream is not None:  # arrays used on another stream than their own
            note_uses(args, stream)
        self._remember(be, fn, args)

    def _remember(self, be: Backend, fn: Function, args: tuple) -> None:
        """After a launch of ``args`` on ``be`` that the native launches did not take: one
        for their types, where the backend has them (the CUDA stub's guarded runner: each
        argument's type checked and its value packed in C, as ``@ember.kernel`` launches
        are).  Only where a pointer is the buffer's address plus the offset, the value a
        launch view holds."""
        pointers = be.pointer_offsets and not be.dialect.separate_offsets
        if self._local_tail or self._built >= _BUILDS or not pointers:
            return
        spec = _native_guards(fn.params, args)
        run = None if spec is None else fn.guarded_runner(*spec, argtypes.launch_view, note_uses)
        if run is not None:
            self._built += 1
            self._last, self._older = _Runner(run), self._last

    def __repr__(self) -> str:
        return f"RawKernel({self.name!r}, params=({', '.join(map(str, self.params))}))"

    def __reduce__(self):
        """Pickled by value (its source): compiled again, or found in the cache, where it
        is loaded."""
        return RawKernel, (self.source, self.name, self.options, self._backend_name)
