"""The device objects a backend hands out - buffers, streams, events, modules, functions,
the error memory - and the MUST/SHOULD/MAY parts of their contract (the backend's own is
:mod:`ember.runtime.backend`, which names these classes too).

Streams and events also subclass :class:`ember.runtime.sync.Waitable` (in each backend).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

from ember.dtypes import DType  # noqa: F401 - named by Function's params in the docs
from ember.runtime.checks import Dim3

PTR = "ptr"  # a kernel parameter that is a device pointer (the others: a DType)


class Resource:
    """Something holding a driver object: ``close()`` releases it (idempotent), ``with``
    releases it at the end of the block, and ``__del__`` is only a backstop."""

    __slots__ = ()

    def close(self) -> None:  # noqa: B027 - optional: nothing to release by default
        """Release the driver object now.  Idempotent."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Buffer(Resource, abc.ABC):
    """Device memory owned by Ember.  ``close()`` frees it; ``__del__`` is a backstop."""

    __slots__ = ()

    nbytes: int

    @property
    @abc.abstractmethod
    def handle(self) -> Any:
        """The native object: a ``CUdeviceptr`` int on CUDA, a ``cl.Buffer`` on OpenCL."""

    @abc.abstractmethod
    def close(self) -> None:
        """Free the memory now.  Idempotent."""


class Stream(Resource, abc.ABC):
    """An in-order queue of device work."""

    @property
    @abc.abstractmethod
    def handle(self) -> Any:
        """The native stream / command queue."""

    @abc.abstractmethod
    def synchronize(self) -> None:
        """Block until every piece of work submitted to this stream has finished."""

    @abc.abstractmethod
    def query(self) -> bool:
        """Return True when all submitted work has finished (never blocks)."""

    def wait_event(self, event: Event) -> None:
        """SHOULD: make work submitted to this stream later wait for ``event``, on the device.

        Default: wait on the host (correct, but blocks the caller).
        """
        event.synchronize()


class Event(Resource, abc.ABC):
    """A marker in a stream, to wait on or time."""

    @abc.abstractmethod
    def record(self, stream: Stream) -> None:
        """Place the marker after the work submitted to ``stream`` so far."""

    @abc.abstractmethod
    def synchronize(self, blocking: bool | None = None, spin: bool | None = None) -> None:
        """Block until the recorded work has finished (``blocking``/``spin``: as
        :meth:`ember.runtime.sync.Waitable.synchronize`; ``spin=False`` waits in the driver
        without polling it, as the staging threads do)."""

    @abc.abstractmethod
    def query(self) -> bool:
        """True when the recorded work has finished (never blocks)."""

    @abc.abstractmethod
    def elapsed_ms(self, end: Event) -> float:
        """Milliseconds between this event and ``end`` (both recorded and complete)."""


class Function(abc.ABC):
    """A kernel entry point in a loaded module, with its parameter list.

    ``params`` lists each parameter as a :class:`DType` (scalar) or :data:`PTR`.
    """

    name: str
    params: tuple

    @abc.abstractmethod
    def launch(
        self,
        grid: Dim3,
        block: Dim3,
        args: Sequence[Any],
        shared_mem: int = 0,
        stream: Stream | None = None,
    ) -> None:
        """Enqueue one launch of ``grid`` blocks of ``block`` threads.

        ``args`` holds native values in parameter order: Python/NumPy numbers for scalars
        and the backend's native pointer (:meth:`Backend.native_pointer`) for ``PTR``.
        A wrong count or an unconvertible value raises :class:`LaunchError`.
        """

    # ---------------------------------------------------------------- MAY
    def guarded_runner(self, guards: tuple, sources: bytes, view, note) -> Any:
        """MAY: the launch fast path of a specialization as one native call, or None (the
        default: the generated Python function serves).  The meaning is that of
        :func:`ember.compiler.args.make_runner`'s function; the encoding is the CUDA stub's
        ``runner`` (``ember/backends/cuda/_ccall_runner.c``)."""
        return None

    def resources(self) -> dict[str, int]:
        """MAY: what the kernel uses, in :mod:`ember.diagnostics.inspect`'s names
        (``registers``, ``shared_bytes``, ``local_bytes``, ``const_bytes``,
        ``max_threads_per_block``).  Default: nothing known."""
        return {}

    def attributes(self) -> dict[str, int]:
        """MAY: the driver's own attributes of the kernel (``cubin-info``).  Default: {}."""
        return {}

    def occupancy(self, block_threads: int, shared_mem: int = 0) -> int:
        """MAY: blocks of ``block_threads`` that fit on one multiprocessor at once.
        Default: 0, unknown (the slow-path report then says nothing about occupancy)."""
        return 0


class Module(Resource, abc.ABC):
    """A loaded binary."""

    @abc.abstractmethod
    def function(self, name: str, params: Sequence[Any]) -> Function:
        """Look up kernel ``name``; raise :class:`LaunchError` if the module has none."""


class ErrorMemory(abc.ABC):
    """Where kernels that can fail report (:meth:`Backend.error_memory`): ``claim`` and
    ``record`` are kernel argument values - a 4-byte claim word and the record, both zeroed
    - and the host reads the record with :meth:`peek` and :meth:`read`."""

    claim: Any
    record: Any

    def peek(self) -> int | None:
        """The record's first int64 read in place, or None where that needs a copy (then
        the record is read once the launches that may write it are known complete)."""
        return None

    @abc.abstractmethod
    def read(self) -> Any:
        """The record as an int64 NumPy array."""

    @abc.abstractmethod
    def clear(self) -> None:
        """Zero the record and the claim word (after an error was reported)."""
