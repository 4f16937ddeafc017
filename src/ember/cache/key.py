"""Cache keys: the SHA-256 of everything that changes a compiled kernel, computed *before*
typing so that a hit skips the whole compiler.

A key covers (:func:`key_parts`):

* the cache format and Ember itself: its version and a *fingerprint*, the hash of the source
  files of every stage that shapes the output (frontend, codegen, compiler, backends, dtypes,
  ``lang``), so a development checkout never reuses code made by an older compiler, while
  two installs of one release agree (bundles stay portable);
* the kernel's *dependencies* (:func:`dependencies`): the source of the kernel and of every
  function it can reach, and the value of every name and attribute chain its code reads from
  outside (captured constants, closure cells, module attributes, function defaults);
* the argument types, the compiler options, the codegen settings;
* the target (dialect, architecture, warp size, device features) and the versions of the
  compiler and driver that build and load the binary.

The dependency scan is static: it walks the AST of each function and resolves every free
name and ``a.b.c`` chain the way the typer would (:meth:`Captured.lookup`: closure, globals,
builtins; values the typer already froze win).  It over-approximates - a function referenced
in a branch the typer folds away is still in the key - which can only cost a recompile,
never serve stale code.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import json
import os
import threading
import types
import weakref
from typing import Any

from ember._version import __version__
from ember.frontend.capture import MISSING

FORMAT = 1  # bump when the meaning of a key or the entry layout changes

# Files whose code shapes compiled binaries (relative to the ember package).
FINGERPRINT_PATHS = (
    "frontend", "codegen", "compiler", "backends", "cache/key.py", "dtypes.py", "lang.py",
)  # fmt: skip

# Library versions that do not change a binary: thin Python wrappers over the real compiler
# and driver, left out so a bundle survives a patch release of the bindings.
WRAPPER_VERSIONS = frozenset({"cuda-bindings", "pyopencl"})

_MISSING = object()
_fingerprint: str | None = None
_fingerprint_lock = threading.Lock()


def fingerprint() -> str:
    """Ember's version and the hash of its compiler's sources (computed once per process;
    read from the cache's record while those files are unchanged, see
    :func:`_recorded_fingerprint`)."""
    global _fingerprint
    if _fingerprint is None:
        with _fingerprint_lock:
            if _fingerprint is None:
                _fingerprint = _recorded_fingerprint(os.path.dirname(os.path.dirname(__file__)))
    return _fingerprint


def _source_files(package: str) -> list[str]:
    """The files :data:`FINGERPRINT_PATHS` names under ``package``, sorted."""
    files: list[str] = []
    for rel in FINGERPRINT_PATHS:
        path = os.path.join(package, rel)
        if os.path.isdir(path):
            for root, dirs, names in os.walk(path):
                dirs[:] = [d for d in dirs if d != "__pycache__"]
                files += [os.path.join(root, n) for n in names if n.endswith(".py")]
        elif os.path.exists(path):
            files.append(path)
    return sorted(files)


def _hash_sources(package: str, files: list[str] | None = None) -> str:
    h = hashlib.sha256(__version__.encode())
    for path in _source_files(package) if files is None else files:
        with open(path, "rb") as f:
            h.update(os.path.relpath(path, package).replace(os.sep, "/").encode() + b"\0")
            h.update(f.read() + b"\0")
    return f"{__version__}+{h.hexdigest()[:16]}"


MAX_FINGERPRINT_RECORDS = 8  # installs (package directories) sharing one cache


def _recorded_fingerprint(package: str) -> str:
    """The fingerprint of ``package``'s compiler sources: from the cache's record
    (``fingerprint.json``) where it holds one for this version and every file's path, size
    and modification time are those it was hashed with, else hashed and recorded.  Reading
    and hashing the ~100 files (1 MB) took 3.5-10 ms a process on the build machine; their
    ``stat`` takes 0.4 ms.  An edit changes a file's time, so a development checkout is
    hashed again after every change, as before."""
    files = _source_files(package)
    states = [_file_state(f) for f in files]
    path = _record_path("fingerprint.json")
    if path is None or None in states:
        return _hash_sources(package, files)
    record = _read_records(path).get(package)
    try:
        found = record["fingerprint"]  # the version is its prefix
        if record["files"] == states and found.startswith(__version__ + "+"):
            return found
    except (TypeError, KeyError, AttributeError):
        pass
    fp = _hash_sources(package, files)
    _store_record(path, package, {"fingerprint": fp, "files": states}, MAX_FINGERPRINT_RECORDS)
    return fp


_versions: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_unconfirmed: weakref.WeakSet = weakref.WeakSet()  # versions read from the record, unchecked


def versions(backend) -> dict:
    """The backend's library versions (read once per backend; {} if it cannot say).

    Where the backend gives a :meth:`~ember.runtime.backend.Backend.version_stamp`, they
    come from the disk cache's record under that stamp while the library files it lists
    are unchanged: loading a library only to ask its version (CUDA: NVRTC, 10-50 ms in a
    fresh process) is then left to the first compile."""
    if backend is None:
        return {}
    if backend not in _versions:
        try:
            _versions[backend] = _recorded(backend)
        except Exception:  # a backend that cannot say: the key just omits it
            _versions[backend] = {}
    return _versions[backend]


def _recorded(backend) -> dict:
    try:
        stamp = backend.version_stamp()
    except Exception:  # it cannot say: ask for the versions themselves
        stamp = None
    if stamp is not None:
        found = recorded_versions(stamp)
        if found is not None:
            _unconfirmed.add(backend)
            return found
    found = {str(k): str(v) for k, v in backend.library_versions().items()}
    if stamp is not None:
        _record_versions(stamp, found, backend.library_files())
    return found


def confirm_versions(backend) -> bool:
    """After a compile, whose libraries are loaded by then: whether the versions this
    process keys with are the libraries' own.  Versions read from the record are checked
    once; where they differ (a library replaced in a way the stamp did not show), the
    record and this process's versions are corrected and False says that the entry just
    compiled carries a key made with the wrong ones: the caller does not store it."""
    if backend not in _unconfirmed:
        return True
    _unconfirmed.discard(backend)
    try:
        real = {str(k): str(v) for k, v in backend.library_versions().items()}
    except Exception:  # cannot say now: keep what the key used
        return True
    if real == _versions.get(backend):
        return True
    _versions[backend] = real
    try:
        _record_versions(backend.version_stamp(), real, backend.library_files())
    except Exception:
        pass
    return False


MAX_VERSION_RECORDS = 32  # stamps kept in the record (the oldest go first)


def _stamp_key(stamp: dict) -> str:
    return hashlib.sha256(json.dumps(stamp, sort_keys=True, default=str).encode()).hexdigest()


def _record_path(name: str) -> str | None:
    """Where the cache keeps record ``name`` (None: the disk cache is off)."""
    from ember.cache import disk

    cache = disk.current()
    return None if cache is None else os.path.join(cache.base, name)


def _read_records(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            records = json.loads(f.read()).get("records", {})
    except (OSError, ValueError, AttributeError):
        return {}
    return records if isinstance(records, dict) else {}


def _file_state(path: str) -> list | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [path, st.st_size, st.st_mtime_ns]


def recorded_versions(stamp: dict) -> dict | None:
    """The versions recorded under ``stamp``, or None: no record, a damaged one, or a
    library file it lists that changed or went away (the disk cache off: None)."""
    path = _record_path("versions.json")
    if path is None:
        return None
    record = _read_records(path).get(_stamp_key(stamp))
    try:
        found, files = record["versions"], record["files"]
        if not all(isinstance(v, str) for v in found.values()):
            return None
        if any(_file_state(f[0]) != list(f) for f in files):
            return None
    except (TypeError, KeyError, IndexError, AttributeError):
        return None
    return dict(found)


def _record_versions(stamp: dict, found: dict, files: list[str]) -> None:
    """Keep ``found`` under ``stamp`` (best effort: a read-only cache records nothing)."""
    path = _record_path("versions.json")
    if path is None:
        return
    states = [s for s in map(_file_state, files) if s is not None]
    record = {"versions": found, "files": states}
    _store_record(path, _stamp_key(stamp), record, MAX_VERSION_RECORDS)


def _store_record(path: str, key: str, value: dict, limit: int) -> None:
    """Keep ``value`` under ``key`` in the record file at ``path``, with the ``limit``
    newest (best effort: a read-only cache keeps none)."""
    from ember.cache.disk import atomic_write

    records = _read_records(path)
    records.pop(key, None)  # re-inserted last: the newest record is kept longest
    records[key] = value
    kept = dict(list(records.items())[-limit:])
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        atomic_write(path, json.dumps({"records": kept}, indent=1).encode())
    except OSError:
        pass


def key_parts(deps: str, arg_types, target, options, versions: dict, codegen: dict) -> dict:
    """The JSON-able description a key is the hash of (stored in every entry)."""
    return {
        "format": FORMAT,
        "ember": fingerprint(),
        "kernel": deps,
        "signature": [t.key() for t in arg_types],
        "options": list(options),
        "codegen": codegen,
        "target": target.key(),
        "versions": {k: v for k, v in sorted(versions.items()) if k not in WRAPPER_VERSIONS},
    }


def digest(parts: dict) -> str:
    """The key: SHA-256 (hex) of ``parts`` in canonical JSON."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


# ------------------------------------------------------------------------- dependencies


def dependencies(cap, captures: dict) -> str:
    """The digest of the kernel ``cap`` and everything it can read, as of now.

    Computed for every new specialization (a fraction of a millisecond), not once per
    kernel: the typer reads attribute chains (``cfg.N``) afresh each time it types, so the
    key must describe the values of this very compile.  ``captures`` (function -> Captured)
    is the kernel's; functions captured here are added to it so that the typer reuses them
    (one source read per function and process)."""
    records = describe(cap, captures)
    text = json.dumps(records, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def static_argument(value: Any, captures: dict) -> Any:
    """The description of a compile-time kernel argument for the key: a dtype's name, a
    function's dependency digest (its code and everything it reads), tuples item by item."""
    from ember.errors import EmberError
    from ember.frontend.capture import capture

    if isinstance(value, tuple):
        return [static_argument(v, captures) for v in value]
    func = getattr(value, "__ember_py_func__", value)
    if isinstance(func, types.FunctionType):
        cap = captures.get(func)
        if cap is None:
            try:
                cap = captures.setdefault(func, capture(func))
            except EmberError:
                return ["unreadable", _qualname(func)]
        return ["function", _qualname(func), dependencies(cap, captures)]
    intrinsic = getattr(value, "__ember_intrinsic__", None)
    if intrinsic is not None:
        return ["intrinsic", str(intrinsic)]
    return ["value", _qualname(type(value)), _safe_repr(value)]


def describe(cap, captures: dict) -> list[dict]:
    """One record per reachable function, kernel first: its name, source hash, defaults and
    the description of every outside name or attribute chain it reads."""
    records: list[dict] = []
    index: dict[int, int] = {}

    def visit(c) -> int:
        if id(c.func) in index:
            return index[id(c.func)]
        index[id(c.func)] = len(records)
        record: dict[str, Any] = {"function": _qualname(c.func), "source": c.source_hash}
        records.append(record)
        scan = _Scanner(c, captures, visit)
        record["defaults"] = [scan.value(v) for v in c.func.__defaults__ or ()]
        record["kwdefaults"] = {k: scan.value(v) for k, v in (c.func.__kwdefaults__ or {}).items()}
        record["reads"] = scan.reads()
        return index[id(c.func)]

    visit(cap)
    return records


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', '?')}"


class _Scanner:
    """Resolves the free names and attribute chains of one captured function."""

    def __init__(self, cap, captures: dict, visit):
        self.cap = cap
        self.captures = captures
        self.visit = visit
        self.frozen = dict(cap.frozen_items())

    def reads(self) -> dict[str, Any]:
        local, chains = _names_read(self.cap)
        out: dict[str, Any] = {}
        for chain in chains:
            if chain[0] in local:
                continue
            value = self.lookup(chain[0])
            out[chain[0]] = self.value(value)
            for k in range(1, len(chain)):
                if not _static(value):
                    break
                try:
                    value = getattr(value, chain[k])
                except Exception as exc:  # no such attribute: the typer reports it
                    out[".".join(chain[: k + 1])] = ["error", type(exc).__name__]
                    break
                out[".".join(chain[: k + 1])] = self.value(value)
        return out

    def lookup(self, name: str) -> Any:
        """What :meth:`Captured.lookup` gives, without freezing anything new."""
        if name in self.frozen:
            return self.frozen[name]
        func = self.cap.func
        cells = dict(zip(func.__code__.co_freevars, func.__closure__ or (), strict=False))
        if name in cells:
            try:
                return cells[name].cell_contents
            except ValueError:  # an empty cell
                return _MISSING
        value = func.__globals__.get(name, _MISSING)
        return getattr(builtins, name, _MISSING) if value is _MISSING else value

    def value(self, v: Any) -> Any:
        """A canonical, JSON-able description of a value a kernel may read."""
        if v is _MISSING or v is MISSING:
            return ["missing"]
        if v is None or isinstance(v, bool | int | float | complex | str | bytes):
            return ["const", type(v).__name__, repr(v)]
        if isinstance(v, tuple):
            return ["tuple", [self.value(i) for i in v]]
        if getattr(v, "__ember_intrinsic__", None) is not None and not isinstance(v, type):
            return ["intrinsic", str(v.__ember_intrinsic__)]
        if isinstance(v, types.ModuleType):
            return ["module", v.__name__]
        inner = getattr(v, "__ember_py_func__", None)  # an @ember.kernel
        if isinstance(inner, types.FunctionType):
            return ["kernel", self.function(inner)]
        if isinstance(v, types.FunctionType):
            return ["function", self.function(v)]
        if isinstance(v, type) or isinstance(v, types.BuiltinFunctionType):
            return ["named", _qualname(v)]
        if hasattr(v, "shape") and hasattr(v, "dtype") and getattr(v, "ndim", 0):
            return _array(v)  # a NumPy array is compiled in as a table: its bytes count
        return ["value", _qualname(type(v)), _safe_repr(v)]

    def function(self, func) -> Any:
        from ember.errors import EmberError
        from ember.frontend.capture import capture

        cap = self.captures.get(func)
        if cap is None:
            try:
                cap = self.captures.setdefault(func, capture(func))
            except EmberError:  # no source: the typer fails if the kernel really calls it
                return ["unreadable", _qualname(func)]
        return self.visit(cap)


def _array(v: Any) -> list:
    """A captured array: dtype, shape and (NumPy arrays, compiled in as tables) the SHA-256
    of its C-ordered bytes."""
    out = ["array", str(v.dtype), list(v.shape)]
    if type(v).__module__ == "numpy":
        import numpy as np

        data = np.ascontiguousarray(v)
        out.append(hashlib.sha256(data.view(np.uint8).reshape(-1)).hexdigest())
    return out


def _static(value: Any) -> bool:
    """Whether the typer reads attributes of ``value`` at compile time (modules, classes,
    plain objects; not numbers, functions or intrinsics)."""
    if value is _MISSING or value is MISSING:
        return False
    if isinstance(value, bool | int | float | complex | str | bytes | tuple):
        return False
    if getattr(value, "__ember_intrinsic__", None) is not None:
        return False
    return not isinstance(value, types.FunctionType)


def _safe_repr(v: Any) -> str:
    try:
        text = repr(v)
    except Exception:
        return "?"
    if " at 0x" in text:  # a default repr holds an address that differs in every process
        return "<object>"
    return text if len(text) <= 200 else "sha256:" + hashlib.sha256(text.encode()).hexdigest()


# code object -> (its local names, the chains it reads): what a function's source gives
# the scan, computed once per process (the array library's kernels share their factories'
# code objects; a redefined function has a new one)
_scanned: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _names_read(cap) -> tuple[frozenset[str], tuple[tuple[str, ...], ...]]:
    code = cap.func.__code__
    found = _scanned.get(code)
    if found is None:
        found = _scanned[code] = (frozenset(_local_names(cap.tree)), tuple(_chains(cap.tree)))
    return found


def _local_names(tree: ast.FunctionDef) -> set[str]:
    names = {a.arg for a in ast.walk(tree.args) if isinstance(a, ast.arg)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
    return names


def _chains(tree: ast.FunctionDef) -> list[tuple[str, ...]]:
    """Every ``name`` and ``name.attr.attr`` read in the body and annotations (not the
    decorators; defaults are described by value), longest chains only, sorted."""
    roots: list[ast.AST] = [*tree.body]
    roots += [a.annotation for a in ast.walk(tree.args) if getattr(a, "annotation", None)]
    found: set[tuple[str, ...]] = set()
    inner: set[int] = set()
    for root in roots:
        for node in ast.walk(root):
            if id(node) in inner:
                continue
            if isinstance(node, ast.Attribute):
                chain, base = [], node
                while isinstance(base, ast.Attribute):
                    inner.add(id(base.value))
                    chain.append(base.attr)
                    base = base.value
                if isinstance(base, ast.Name):
                    found.add((base.id, *reversed(chain)))
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                found.add((node.id,))
    return sorted(found)
