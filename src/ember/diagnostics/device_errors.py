"""Device-side errors: the per-context error record, the table of check sites, KernelError.

A kernel that can fail (``raise``, ``assert``, bounds checks, checked conversions) gets three
hidden arguments (``codegen/abi.py``): the context's *claim word*, its *error record* and the
specialization's *kernel id*.  The first failing thread wins the claim, writes the record
(kernel id, site number, block, thread, two values) and marks it complete; the thread then
returns (no trap: the context stays usable).  Only integers travel: the text of each site
lives here, in a table per specialization (:func:`register`).

When is the record read?

* after a wait completes (``Waitable._mark`` in :mod:`ember.runtime.sync` calls
  :meth:`ErrorRecord.check` while launches of failing kernels are unchecked): so
  ``stream.synchronize()``, ``ember.synchronize()``, ``await stream``, ``x.to_numpy()``
  raise :class:`~ember.errors.KernelError`;
* before each launch of a kernel that can fail (:meth:`ErrorRecord.before_launch`): on CUDA
  a read of mapped host memory, on OpenCL a query of the streams it ran on.

Launches of kernels that cannot fail are not checked: their launch path stays as fast as
without this machinery.  The record is read only when a failing kernel's launch has
completed, so a program that never launches one never reads it.

A found error is reported once: the remaining launches of failing kernels are waited for
(so that none writes into the record afterwards), the record is cleared, and a
``KernelError`` naming the kernel, the Python line, block and thread is raised.  For
built-in exception types it is also an instance of that type (a failed bounds check is a
``KernelError`` and an ``IndexError``).
"""

from __future__ import annotations

import builtins
import itertools
import struct
import threading
import weakref
from dataclasses import astuple
from typing import TYPE_CHECKING

from ember._records import record
from ember.cache.entry import base_name
from ember.codegen.abi import DONE, RECORD_WORDS
from ember.errors import KernelError
from ember.frontend import messages
from ember.frontend.capture import Loc
from ember.runtime import sync

if TYPE_CHECKING:  # kernels from the cache have their site tables: only a compile needs the IR
    from ember.frontend import ir

RECORD_BYTES = RECORD_WORDS * 8


@record(frozen=True)
class SiteInfo:
    """What the host knows about one check site: plain data (a cache can store it)."""

    kind: str  # bounds | convert | raise | assert
    message: str
    error: str
    axis: int
    filename: str
    line: int
    col: int
    end_col: int
    text: str
    function: str

    @classmethod
    def of(cls, site: ir.Site) -> SiteInfo:
        loc = site.loc
        return cls(
            site.kind, site.message, site.error, site.axis, loc.filename, loc.line, loc.col,
            loc.end_col, loc.text, loc.function,
        )  # fmt: skip

    @property
    def loc(self) -> Loc:
        return Loc(self.filename, self.line, self.col, self.end_col, self.text, self.function)


def site_table(program: ir.Program) -> tuple[SiteInfo, ...]:
    """The sites of a compiled program, by number."""
    return tuple(SiteInfo.of(s) for s in program.sites)


def sites_to_json(sites) -> list[list]:
    """The site table as JSON lists (the cache stores it with the binary)."""
    return [list(astuple(s)) for s in sites]


_SITE_TYPES = (str, str, str, int, str, int, int, int, str, str)


def sites_from_json(records) -> tuple[SiteInfo, ...]:
    """The site table from :func:`sites_to_json`'s lists (empty if malformed: a cache entry
    may be crafted, and these fields end up in error messages)."""
    try:
        for r in records:
            if len(r) != len(_SITE_TYPES) or not all(
                type(v) is t for v, t in zip(r, _SITE_TYPES, strict=True)
            ):
                return ()
        return tuple(SiteInfo(*r) for r in records)
    except TypeError:
        return ()


@record(frozen=True)
class KernelSites:
    name: str
    sites: tuple[SiteInfo, ...]


_kernels: dict[int, KernelSites] = {}
_ids = itertools.count(1)


def register(name: str, sites: tuple[SiteInfo, ...]) -> int:
    """A new kernel id for a specialization of kernel ``name`` with these sites."""
    kid = next(_ids) & 0xFFFFFFFF
    _kernels[kid] = KernelSites(name, sites)
    return kid


# --------------------------------------------------------------------------- the record


_records: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_records_lock = threading.Lock()


def record_of(backend) -> ErrorRecord:
    """The error record of ``backend``'s context (made on first use)."""
    rec = _records.get(backend)
    if rec is None:
        with _records_lock:
            rec = _records.get(backend)
            if rec is None:
                rec = _records[backend] = ErrorRecord(backend)
    return rec


class ErrorRecord:
    """The claim word and error record of one backend, and the unchecked launches."""

    def __init__(self, backend):
        self.memory = backend.error_memory(RECORD_BYTES)  # refuses where there is none
        self.claim = self.memory.claim  # kernel arguments
        self.record = self.memory.record
        self.default_stream = backend.default_stream
        self.pending: dict[int, tuple] = {}  # id(stream) -> (stream, submitted at launch)
        self._lock = threading.Lock()
        self._busy = False

    def launched(self, stream) -> None:
        """A failing kernel was just launched on ``stream`` (None: the default stream)."""
        s = stream or self.default_stream
        with self._lock:
            self.pending[id(s)] = (s, s.submitted)
            if self not in sync.pending_errors:
                sync.pending_errors.append(self)

    def before_launch(self) -> None:
        """Raise the error of an earlier launch, if one is known to have failed."""
        if not self.pending or self._busy:
            return
        state = self.memory.peek()
        if state == DONE:
            self._report()
        elif state is None:  # no cheap peek (OpenCL): learn which launches have finished
            for s, _ in list(self.pending.values()):
                if _alive(s):
                    s.query()  # marks completion, which calls check()

    def check(self) -> None:
        """Read the record if a pending launch has completed; raise its error if any."""
        if self._busy or not self.pending:
            return
        with self._lock:
            done = [k for k, (s, t) in self.pending.items() if s.completed >= t or not _alive(s)]
        if not done:
            return
        self._busy = True
        try:
            state = self.memory.peek()
            if state is None:
                state = int(self.memory.read()[0])
            if state != DONE:
                with self._lock:
                    for k in done:
                        self.pending.pop(k, None)
                    self._forget_if_idle()
                return
        finally:
            self._busy = False
        self._report()

    def _report(self) -> None:
        """Wait for the other failing launches, read and clear the record, raise."""
        self._busy = True
        try:
            for s, target in list(self.pending.values()):
                if _alive(s) and s.completed < target:
                    s.synchronize()
            words = [int(w) for w in self.memory.read()]
            with self._lock:
                self.pending.clear()
                self._forget_if_idle()
            self.memory.clear()
        finally:
            self._busy = False
        raise kernel_error(words)

    def _forget_if_idle(self) -> None:
        if not self.pending and self in sync.pending_errors:
            try:
                sync.pending_errors.remove(self)
            except ValueError:
                pass


def _alive(stream) -> bool:
    return getattr(stream, "alive", True)


# --------------------------------------------------------------------------- KernelError


def kernel_error(words: list[int]) -> KernelError:
    """The exception for a complete record (see ``codegen/runtime_checks.py`` for the layout)."""
    kid, site_id = words[1], words[2]
    block, thread = tuple(words[3:6]), tuple(words[6:9])
    info = _kernels.get(kid)
    site = info.sites[site_id] if info and 0 <= site_id < len(info.sites) else None
    if site is None:
        return KernelError(
            f"a kernel failed on the device (kernel id {kid}, check {site_id}, block {block}, "
            f"thread {thread}); its description is not known to this process"
        )
    error, brief = describe(site, words[9], words[10])
    text = (
        f"kernel '{info.name}' failed on the device: {error}: {brief}\n"
        f"{messages.format_location(site.loc)}\n"
        f"  in block {block}, thread {thread} (the first thread that failed; the device "
        "stays usable)"
    )
    exc = _error_class(error)(text)
    exc.kernel, exc.error, exc.brief = info.name, error, brief
    exc.filename, exc.line, exc.col = site.filename, site.line, site.col
    exc.block, exc.thread, exc.kind = block, thread, site.kind
    return exc


def describe(site: SiteInfo, v0: int, v1: int) -> tuple[str, str]:
    """(exception name, message) of a failure at ``site`` with the recorded values."""
    if site.kind == "bounds":
        return "IndexError", (
            f"index {v0} is out of bounds for axis {site.axis} of '{site.message}' with size {v1}"
        )
    if site.kind == "convert":
        value = _float_from_bits(v0, v1)
        target = site.message.split(" to ", 1)[-1]
        if value != value:
            return "ValueError", f"cannot convert float NaN to {target}"
        if value in (float("inf"), float("-inf")):
            return "OverflowError", f"cannot convert float {value} to {target}"
        return "OverflowError", f"float {value!r} is out of range for {target}"
    return site.error, site.message


def _float_from_bits(bits: int, width: int) -> float:
    if width == 32:
        return struct.unpack("<f", (bits & 0xFFFFFFFF).to_bytes(4, "little"))[0]
    return struct.unpack("<d", (bits & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little"))[0]


_classes: dict[str, type] = {}


def _error_class(name: str) -> type:
    """``KernelError``, also a subclass of the built-in exception ``name`` if there is one."""
    if name not in _classes:
        base = getattr(builtins, name, None)
        cls = KernelError
        if isinstance(base, type) and issubclass(base, Exception) and base is not Exception:
            try:
                cls = type(f"Kernel{name}", (KernelError, base), {"__module__": "ember.errors"})
            except TypeError:  # an incompatible instance layout
                cls = KernelError
        _classes[name] = cls
    return _classes[name]


# --------------------------------------------------------------------------- launching


def attach(spec) -> dict | None:
    """Prepare a specialization whose launches need bookkeeping: a kernel that can fail gets
    its site table (``spec.sites``), a kernel id and the backend's record; a kernel that
    prints gets the printf flush.  ``spec.errors`` is what its launches call.
    Returns the values the generated launch code binds (see ``compiler/args.py``); None
    for a kernel that needs none of this (its launch path stays as it was)."""
    hooks, hidden = [], {}
    if any(p.kind == "kid" for p in spec.abi):
        if not spec.sites and spec.program is not None:
            spec.sites = site_table(spec.program)
        name = spec.program.kernel.pyname if spec.program else base_name(spec.name, spec.key)
        spec.kernel_id = register(name, tuple(spec.sites))
        weakref.finalize(spec, _kernels.pop, spec.kernel_id, None)  # its sites go with it
        rec = record_of(spec.backend)
        hooks.append(rec)
        hidden.update(_em_claim=rec.claim, _em_rec=rec.record, _em_kid=spec.kernel_id)
    prints = any(i.kind == "print" for i in spec.slow_paths)
    if prints:
        hooks.append(flush_of(spec.backend))
    if not hooks:
        return None
    spec.errors = hooks[0] if len(hooks) == 1 else _Hooks(hooks)
    hidden.update(_em_before=spec.errors.before_launch, _em_launched=spec.errors.launched)
    return hidden


class _Hooks:
    def __init__(self, hooks):
        self.hooks = hooks

    def before_launch(self) -> None:
        for h in self.hooks:
            h.before_launch()

    def launched(self, stream) -> None:
        for h in self.hooks:
            h.launched(stream)


# --------------------------------------------------------------------------- printf


_flushes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def flush_of(backend) -> PrintFlush:
    with _records_lock:
        found = _flushes.get(backend)
        if found is None:
            found = _flushes[backend] = PrintFlush(backend)
    return found


class PrintFlush:
    """``printf`` output waits in a device buffer until the driver flushes it at a
    synchronize call (CUDA: ``cuStreamSynchronize``; GPU OpenCL drivers: ``clFinish``), which
    Ember's waits skip when a query finds the work done.  Once a wait sees a printing
    kernel's launch complete, this synchronizes that (finished) stream in the driver: no
    waiting, and the output appears before the wait returns."""

    def __init__(self, backend):
        self.default_stream = backend.default_stream
        self.pending: dict[int, tuple] = {}
        self._lock = threading.Lock()

    def before_launch(self) -> None:
        pass

    def launched(self, stream) -> None:
        s = stream or self.default_stream
        with self._lock:
            self.pending[id(s)] = (s, s.submitted)
            if self not in sync.pending_errors:
                sync.pending_errors.append(self)

    def check(self) -> None:
        with self._lock:
            done = [(k, s) for k, (s, t) in self.pending.items() if s.completed >= t]
            for k, _ in done:
                del self.pending[k]
            if not self.pending and self in sync.pending_errors:
                sync.pending_errors.remove(self)
        for _, s in done:
            if _alive(s):
                s._native_block(False)  # cuStreamSynchronize of a finished stream: flushes
