"""The slow-path report: what a compiled kernel pulls in that costs speed, each with the
Python line and the fast alternative (as AMDGPU.jl reports "Global hostcalls detected!").

===================== ==================================================================
kind                  what
===================== ==================================================================
``bounds-check``      an index that cannot be proven in range, checked at run time
``checked-conversion`` a float -> integer conversion range-checked at run time
``raise``, ``assert`` error checks carried by the kernel
``print``             ``printf`` on the device
``float64``           float64 arithmetic, on a device whose float64 rate is a small
                      fraction of its float32 rate (``FP64_SLOW_RATIO``)
``python-float``      the same, where a Python float (literal, argument, ``float()``) made
                      the arithmetic float64 although the data is float32
``tuple-index``       a tuple indexed by a run-time value: a chain of selects
``local-memory``      per-thread local memory: register spills, or values kept in memory
``registers``         registers per thread that limit how many threads an SM holds
``occupancy``         a launch whose block size leaves the SMs mostly empty
===================== ==================================================================

The items that come from the code (the first seven) are found when the kernel is compiled
(:mod:`ember.diagnostics.findings`) and stored with it (so a kernel loaded from the cache
reports them too, and imports neither that module nor the IR); resource items come from
the driver and the launch item from the first launch's block size.  :func:`announce` runs
at the first launch of each specialization (leaving out the checks ``boundscheck=True``
asked for: :data:`REQUESTED`) and follows
``EMBER_DIAGNOSTICS``: ``warn`` (an :class:`~ember.errors.EmberPerformanceWarning`, once),
``error`` (a :class:`~ember.errors.SlowPathError` instead of the launch) or ``off``.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import asdict, field

from ember._records import record
from ember.cache.entry import base_name
from ember.config import settings
from ember.errors import EmberPerformanceWarning, SlowPathError
from ember.frontend import messages
from ember.frontend.capture import Loc

FP64_SLOW_RATIO = 4  # float32:float64 throughput at which float64 math is reported
LOW_OCCUPANCY = 0.5  # fraction of an SM's threads below which registers / blocks are reported
REGISTERS_PER_SM = 65536  # every CUDA architecture since sm_50


# Run-time checks compiled in only because the user asked (boundscheck=True or
# EMBER_BOUNDSCHECK=1): a cost they chose, so the first-launch report leaves them out
# (kernel.report(*args) still lists them).
REQUESTED = frozenset({"bounds-check", "checked-conversion"})


@record(frozen=True)
class SlowPath:
    """One item of the report: ``kind``, what was found (``message``), the fast alternative
    (``fix``), where (``filename``, ``line``, ``col``, ``text``: the source line) and
    ``data`` (numbers behind the message)."""

    kind: str
    message: str
    fix: str
    filename: str | None = None
    line: int | None = None
    col: int = 1
    end_col: int = 1
    text: str = ""
    function: str = ""
    data: dict = field(default_factory=dict, compare=False)

    @property
    def location(self) -> str:
        return f"{self.filename}:{self.line}" if self.filename else "(no source line)"

    def __str__(self) -> str:
        out = [f"[{self.kind}] {self.message}"]
        if self.filename:
            loc = Loc(self.filename, self.line, self.col, self.end_col, self.text, self.function)
            out.append(messages.format_location(loc))
        out.append(f"  fix: {self.fix}")
        return "\n".join(out)


def _at(loc: Loc | None, kind: str, message: str, fix: str, **data) -> SlowPath:
    if loc is None:
        return SlowPath(kind, message, fix, data=data)
    return SlowPath(
        kind, message, fix, loc.filename, loc.line, loc.col, loc.end_col, loc.text,
        loc.function, data,
    )  # fmt: skip


# --------------------------------------------------------------------------- the device


def fp64_ratio(device) -> float | None:
    """float32:float64 throughput of ``device`` (None when unknown)."""
    return None if device is None else device.fp64_ratio


def for_device(items: list[SlowPath], device) -> list[SlowPath]:
    """``items`` without the float64 ones when ``device`` runs float64 fast."""
    ratio = fp64_ratio(device)
    if ratio is not None and ratio < FP64_SLOW_RATIO:
        return [i for i in items if not i.data.get("fp64")]
    rate = f"1/{ratio:g} of its float32 rate" if ratio else "an unknown rate"
    return [
        SlowPath(**{**asdict(i), "message": f"{i.message} (this device runs float64 at {rate})"})
        if i.data.get("fp64") else i
        for i in items
    ]  # fmt: skip


def resource_items(res: dict, device, loc: Loc | None, prints: bool = False) -> list[SlowPath]:
    """Local memory and register pressure (CUDA resource numbers).  ``prints``: the kernel
    calls printf, whose argument buffer is local memory (reported as ``print`` instead)."""
    items = []
    local, spills = res.get("local_bytes", 0), res.get("spill_stores", 0)
    if spills or (local and not prints):
        what = f", {spills} bytes of it register spills" if spills else ""
        items.append(_at(loc, "local-memory", f"{local} bytes of local memory per thread{what}: "
                         "values the compiler could not keep in registers live in (cached) "
                         "device memory", "keep fewer values alive at once (split the kernel, "
                         "recompute instead of storing), and index tuples with constants",
                         local_bytes=local, spill_stores=spills))  # fmt: skip
    regs = res.get("registers", 0)
    per_sm = _threads_per_sm(device)
    if regs:
        warps = REGISTERS_PER_SM // (math.ceil(regs * 32 / 256) * 256)
        fit = min(per_sm, warps * 32)
        if fit < LOW_OCCUPANCY * per_sm:
            items.append(_at(loc, "registers", f"{regs} registers per thread: at most {fit} of "
                             f"{per_sm} threads fit on an SM ({fit / per_sm:.0%} occupancy)",
                             "keep fewer values alive at once, or cap the registers with "
                             "options=('--maxrregcount=64',) (the rest spills to local memory)",
                             registers=regs, threads_per_sm=fit))  # fmt: skip
    return items


def _threads_per_sm(device) -> int:
    extra = (device.extra or {}) if device is not None else {}
    return int(extra.get("max_threads_per_multiprocessor") or 2048)


def launch_items(spec, block, loc: Loc | None) -> list[SlowPath]:
    """Occupancy of the first launch's block size (CUDA: the driver's calculator)."""
    fn = spec.function
    if block is None or not fn.attributes():  # no occupancy calculator
        return []
    dims = tuple(block) if isinstance(block, tuple | list) else (block,)
    threads = math.prod(dims)
    device = spec.backend.device
    warp, per_sm = device.warp_size or 32, _threads_per_sm(device)
    items = []
    if threads % warp:
        items.append(_at(loc, "occupancy", f"blocks of {threads} threads are not a multiple of "
                         f"the warp size {warp}: each block's last warp runs {threads % warp} "
                         f"of {warp} lanes", f"use a multiple of {warp} threads per block",
                         threads=threads))  # fmt: skip
    occupancy = fn.occupancy(threads) * threads / per_sm
    if occupancy < LOW_OCCUPANCY:
        best = max(
            range(warp, fn.attributes()["max_threads_per_block"] + 1, warp),
            key=lambda t: (fn.occupancy(t) * t, -t),
        )
        best_occ = fn.occupancy(best) * best / per_sm
        if best_occ > occupancy:
            items.append(_at(loc, "occupancy", f"blocks of {threads} threads fill "
                             f"{occupancy:.0%} of an SM's threads", f"launch blocks of {best} "
                             f"threads ({best_occ:.0%}), or let Ember choose with "
                             "kernel.launch(n)(...)", threads=threads, occupancy=occupancy,
                             best=best))  # fmt: skip
    return items


# --------------------------------------------------------------------------- per kernel


def spec_items(spec, block=None) -> list[SlowPath]:
    """Every item of a compiled specialization on its device (``block``: its launch)."""
    device = spec.backend.device
    items = for_device(list(getattr(spec, "slow_paths", ())), device)
    loc = getattr(spec, "kernel_loc", None)
    if spec.function.attributes():  # the driver reports registers and local memory
        prints = any(i.kind == "print" for i in items)
        items += resource_items(spec.function.resources(), device, loc, prints)
        items += launch_items(spec, block, loc)
    return items


_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def announce(spec, block) -> None:
    """The report at a specialization's first launch, following ``EMBER_DIAGNOSTICS``.

    Ember's own kernels (the array library) are not reported: their users cannot change
    them (their speed is the benchmarks' business)."""
    policy = settings.diagnostics
    loc = getattr(spec, "kernel_loc", None)
    if policy == "off" or (loc is not None and _is_ember(loc.filename)):
        spec.announced = True
        return
    items = [i for i in spec_items(spec, block) if i.kind not in REQUESTED]
    if items:
        text = format_report(spec, items)
        if policy == "error":
            raise SlowPathError(text, items)  # not announced: every launch refuses again
        loc = getattr(spec, "kernel_loc", None)
        filename, line = (loc.filename, loc.line) if loc else ("<ember>", 0)
        warnings.warn_explicit(
            EmberPerformanceWarning(text), EmberPerformanceWarning, filename, line,
            module=os.path.splitext(os.path.basename(filename))[0],
        )  # fmt: skip
    spec.announced = True


def _is_ember(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_EMBER_DIR + os.sep)


def format_report(spec, items: list[SlowPath]) -> str:
    loc = getattr(spec, "kernel_loc", None)
    name = loc.function if loc else base_name(spec.name, getattr(spec, "key", ""))
    where = f" ({os.path.basename(loc.filename)}:{loc.line})" if loc else ""
    head = (
        f"kernel '{name}'{where} on {spec.backend.device.name} pulls in "
        f"{len(items)} slow path{'s' if len(items) != 1 else ''}:"
    )
    body = "\n".join(f"{k}. " + str(item).replace("\n", "\n   ") for k, item in
                     enumerate(items, 1))  # fmt: skip
    tail = (
        "(EMBER_DIAGNOSTICS=off silences this report and =error refuses the launch; "
        "kernel.report(*args) returns these items)"
    )
    return f"{head}\n{body}\n{tail}"


# --------------------------------------------------------------------------- cache meta


def to_meta(spec) -> dict:
    """What the cache stores for the report and KernelError (JSON)."""
    from ember.diagnostics.device_errors import sites_to_json

    out = {}
    if spec.sites:
        out["sites"] = sites_to_json(spec.sites)
    if getattr(spec, "slow_paths", ()):
        out["slow_paths"] = [asdict(i) for i in spec.slow_paths]
    loc = getattr(spec, "kernel_loc", None)
    if loc is not None:
        out["kernel_loc"] = list(asdict(loc).values())
    return out


def from_meta(spec, meta: dict) -> None:
    """Restore :func:`to_meta`'s data on a specialization loaded from the cache."""
    from ember.diagnostics.device_errors import sites_from_json

    spec.sites = sites_from_json(meta.get("sites", ()))
    try:
        spec.slow_paths = tuple(SlowPath(**d) for d in meta.get("slow_paths", ()))
        loc = meta.get("kernel_loc")
        spec.kernel_loc = Loc(*loc) if loc else None
        _check_types(spec.slow_paths, spec.kernel_loc)
    except TypeError:  # another Ember version's entry, or a crafted one: report what we can
        spec.slow_paths, spec.kernel_loc = (), None


def _check_types(items, loc) -> None:
    """TypeError unless the restored items hold what the report prints (text, numbers)."""
    for i in items:
        text = (i.kind, i.message, i.fix, i.text, i.function)
        numbers = (i.col, i.end_col) + (() if i.line is None else (i.line,))
        if not all(type(t) is str for t in text) or not all(type(n) is int for n in numbers):
            raise TypeError("malformed slow-path item")
        if not isinstance(i.data, dict) or not isinstance(i.filename, str | None):
            raise TypeError("malformed slow-path item")
    if loc is not None and not (type(loc.line) is int and isinstance(loc.filename, str)):
        raise TypeError("malformed kernel location")
