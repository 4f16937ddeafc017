"""cuFFT for ``ember.fft``: plans cached per device, executed on Ember's streams with work
areas from Ember's allocator.

:class:`Fft` is what :meth:`CudaBackend.fft` returns.  ``plan(kind, precision, n, inembed,
istride, idist, onembed, ostride, odist, batch)`` makes (or finds in :class:`PlanCache`) a
``cufftMakePlanMany64`` plan of rank ``len(n)`` with cuFFT's advanced layout: element
``(b, i0, i1, i2)`` of the input at ``b * idist + ((i0 * inembed[1] + i1) * inembed[2] + i2)
* istride`` (the same for the output).  Plans are made with ``cufftSetAutoAllocation(0)``:
``execute`` takes their work area from Ember's stream-ordered pool for the duration of one
call (freed at once: later work on the stream is ordered after it), so cached plans hold no
work memory and the pool's limits and statistics see it.  Statuses become
:class:`DriverError` here, and only here.
"""

from __future__ import annotations

import collections
import ctypes
import threading

from ember.backends.cuda.vendor import INT, VP, bind, library, raise_status
from ember.runtime.memory import allocate

LL = ctypes.c_longlong
# cufftType (cufft.h): kind and precision -> type
TYPES = {
    ("c2c", "single"): 0x29, ("r2c", "single"): 0x2A, ("c2r", "single"): 0x2C,
    ("c2c", "double"): 0x69, ("r2c", "double"): 0x6A, ("c2r", "double"): 0x6C,
}  # fmt: skip
FORWARD, INVERSE = -1, 1
MAX_PLANS = 16  # CuPy's default plan cache size
STATUS = {
    1: "CUFFT_INVALID_PLAN", 2: "CUFFT_ALLOC_FAILED", 3: "CUFFT_INVALID_TYPE",
    4: "CUFFT_INVALID_VALUE", 5: "CUFFT_INTERNAL_ERROR", 6: "CUFFT_EXEC_FAILED",
    7: "CUFFT_SETUP_FAILED", 8: "CUFFT_INVALID_SIZE", 9: "CUFFT_UNALIGNED_DATA",
    11: "CUFFT_INVALID_DEVICE", 13: "CUFFT_NO_WORKSPACE", 14: "CUFFT_NOT_IMPLEMENTED",
    16: "CUFFT_NOT_SUPPORTED",
}  # fmt: skip


def check(status: int, call: str) -> None:
    """Raise :class:`DriverError` for a failed cuFFT status."""
    if status:
        raise_status(status, call, STATUS, "cuFFT")


class _Api:
    """The cuFFT entry points Ember uses, with their ctypes signatures."""

    def __init__(self):
        lib = library("cufft")
        arr = ctypes.POINTER(LL)
        self.create = bind(lib, "cufftCreate", ctypes.POINTER(INT))
        self.destroy = bind(lib, "cufftDestroy", INT)
        self.auto_allocation = bind(lib, "cufftSetAutoAllocation", INT, INT)
        self.make = bind(
            lib, "cufftMakePlanMany64", INT, INT, arr, arr, LL, LL, arr, LL, LL, INT, LL,
            ctypes.POINTER(ctypes.c_size_t),
        )  # fmt: skip
        self.work_area = bind(lib, "cufftSetWorkArea", INT, VP)
        self.stream = bind(lib, "cufftSetStream", INT, VP)
        self.version = bind(lib, "cufftGetVersion", ctypes.POINTER(INT))
        c2c = (INT, VP, VP, INT)
        self.exec = {
            0x29: bind(lib, "cufftExecC2C", *c2c),
            0x69: bind(lib, "cufftExecZ2Z", *c2c),
            0x2A: bind(lib, "cufftExecR2C", INT, VP, VP),
            0x6A: bind(lib, "cufftExecD2Z", INT, VP, VP),
            0x2C: bind(lib, "cufftExecC2R", INT, VP, VP),
            0x6C: bind(lib, "cufftExecZ2D", INT, VP, VP),
        }


class Plan:
    """One cuFFT plan: its handle, type, work-area bytes, and the stream and work-area
    address it is bound to (set again only when they change)."""

    __slots__ = ("handle", "type", "work", "stream", "work_at", "key", "run", "cached")

    def __init__(self, api: _Api, key: tuple):
        kind, precision, n, inembed, istride, idist, onembed, ostride, odist, batch = key
        self.key, self.type, self.stream = key, TYPES[(kind, precision)], None
        self.work_at = None
        self.cached = False
        handle = INT()
        check(api.create(ctypes.byref(handle)), "cufftCreate")
        self.handle = handle.value
        try:
            check(api.auto_allocation(self.handle, 0), "cufftSetAutoAllocation")
            rank = len(n)
            size = ctypes.c_size_t()
            status = api.make(
                self.handle, rank, (LL * rank)(*n), (LL * rank)(*inembed), istride, idist,
                (LL * rank)(*onembed), ostride, odist, self.type, batch, ctypes.byref(size),
            )  # fmt: skip
            check(status, f"cufftMakePlanMany64 ({kind}, n={tuple(n)}, batch={batch})")
        except BaseException:
            api.destroy(self.handle)
            raise
        self.work = size.value
        self.run = api.exec[self.type]


class PlanCache:
    """The plans of one device, least recently used first out, at most :attr:`max_size`
    (like CuPy's ``PlanCache``); :meth:`info` gives the statistics."""

    def __init__(self, fft: Fft, max_size: int = MAX_PLANS):
        self._fft = fft
        self._plans: collections.OrderedDict[tuple, Plan] = collections.OrderedDict()
        self._max = max_size
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple) -> Plan:
        plan = self._plans.get(key)
        if plan is not None:
            self.hits += 1
            self._plans.move_to_end(key)
            return plan
        self.misses += 1
        plan = Plan(self._fft.api, key)
        if self._max > 0:  # (a cache of size 0 keeps nothing: the caller destroys the plan)
            plan.cached = True
            self._plans[key] = plan
            self._trim()
        return plan

    @property
    def size(self) -> int:
        """Plans cached now."""
        return len(self._plans)

    @property
    def max_size(self) -> int:
        """Most plans kept (0: none are kept; each call makes and destroys its plan)."""
        return self._max

    @max_size.setter
    def max_size(self, value: int) -> None:
        if int(value) < 0:
            raise ValueError(f"max_size must be >= 0, got {value}")
        self._max = int(value)
        self._trim()

    @property
    def memory(self) -> int:
        """Bytes of work area the cached plans take while they run (from Ember's pool)."""
        return sum(p.work for p in self._plans.values())

    def _trim(self, keep: int | None = None) -> None:
        while len(self._plans) > (self._max if keep is None else keep):
            _, plan = self._plans.popitem(last=False)
            plan.cached = False
            self._fft.destroy(plan)

    def clear(self) -> None:
        """Destroy every cached plan (statistics are kept)."""
        self._trim(0)

    def info(self) -> dict:
        """``size``, ``max_size``, ``hits``, ``misses``, ``memory`` and the cached plans'
        keys (kind, precision, lengths, layouts, batch), oldest first."""
        return {
            "size": self.size, "max_size": self._max, "hits": self.hits,
            "misses": self.misses, "memory": self.memory, "plans": list(self._plans),
        }  # fmt: skip

    def __len__(self) -> int:
        return len(self._plans)

    def __repr__(self) -> str:
        return (
            f"<cuFFT plan cache: {self.size}/{self._max} plans, {self.hits} hits, "
            f"{self.misses} misses, {self.memory} bytes of work area>"
        )


class Fft:
    """cuFFT on one device of Ember's CUDA backend.

    Raises
    ------
    VendorUnavailable
        When libcufft cannot be found (install ``ember[cuda]``: ``nvidia-cufft``).
    """

    def __init__(self, backend):
        self.api = _Api()
        self.backend = backend
        self.cache = PlanCache(self)
        self._lock = threading.Lock()  # a plan's stream and work area are set per call

    def version(self) -> str:
        v = INT()
        check(self.api.version(ctypes.byref(v)), "cufftGetVersion")
        return str(v.value)

    def plan(self, kind: str, precision: str, n, inembed, istride: int, idist: int, onembed,
             ostride: int, odist: int, batch: int) -> Plan:  # fmt: skip
        """The plan for this transform (cached).  ``kind``: ``"c2c"``, ``"r2c"``,
        ``"c2r"``; ``precision``: ``"single"`` or ``"double"``; ``n`` the lengths."""
        key = (kind, precision, tuple(n), tuple(inembed), istride, idist, tuple(onembed),
               ostride, odist, batch)  # fmt: skip
        with self._lock:
            self.backend.context.ensure_current()
            return self.cache.get(key)

    def execute(self, plan: Plan, src: int, dst: int, inverse: bool, stream) -> None:
        """Run ``plan`` from device address ``src`` to ``dst`` (equal: in place) on
        ``stream``; ``inverse`` selects ``exp(+2 pi i ...)`` for ``c2c`` (``r2c`` is always
        forward, ``c2r`` inverse)."""
        work = allocate(self.backend, plan.work, stream) if plan.work else None
        with self._lock:
            self.backend.context.ensure_current()
            status = self._exec(plan, src, dst, inverse, stream, work)
        if status:
            check(status, "cufftExec")
        stream.submitted += 1

    def run(self, key: tuple, src: int, dst: int, inverse: bool, stream) -> None:
        """:meth:`plan` (``key``: its arguments, normalized as it keys them) and
        :meth:`execute` under one lock: the plan-cache hit path of a repeated transform."""
        with self._lock:
            self.backend.context.ensure_current()
            plan = self.cache.get(key)
            work = allocate(self.backend, plan.work, stream) if plan.work else None
            status = self._exec(plan, src, dst, inverse, stream, work)
        if status:
            check(status, "cufftExec")
        stream.submitted += 1

    def _exec(self, plan: Plan, src: int, dst: int, inverse: bool, stream, work) -> int:
        """The library call, the lock held and the context current: the plan's stream and
        work area are set only when they differ from the last call's (the pool usually
        hands back the same work block), an uncached plan is destroyed after it.  Returns
        the status."""
        be = self.backend
        if plan.stream is not stream:
            check(self.api.stream(plan.handle, int(stream.handle)), "cufftSetStream")
            plan.stream = stream
        if work is not None:
            at = be.native_pointer(work)
            if at != plan.work_at:
                check(self.api.work_area(plan.handle, at), "cufftSetWorkArea")
                plan.work_at = at
        if plan.type in (0x29, 0x69):
            status = plan.run(plan.handle, src, dst, INVERSE if inverse else FORWARD)
        else:
            status = plan.run(plan.handle, src, dst)
        if not plan.cached:
            self.destroy(plan)
        return status

    def destroy(self, plan: Plan) -> None:
        if plan.handle is not None and self.backend.context.alive:
            self.backend.context.ensure_current()
            self.api.destroy(plan.handle)
        plan.handle = None

    def close(self) -> None:
        self.cache.clear()
