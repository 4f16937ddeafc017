"""The benchmark harness: a registry of cases, timing helpers, the report and result files.

A *case* is a function registered with :func:`case`.  It gets a :class:`Context` and returns
``{implementation: {metric: value}}``; the implementation ``"raw"`` (plain ``cuda.bindings``)
is the floor that ratios are taken against.  Every implementation runs in the same process,
in one call, so that the numbers compare (the method of ``shared/peers/peers.py``: warm up,
many iterations per repeat, the median of several repeats).

A measured value is a :class:`Median`: a float that remembers the smallest and largest of
the repeats behind it.  The result files store that range next to each median (``spread``)
so that ``python -m benchmarks compare`` can tell a change from run-to-run noise.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

FLOOR = "raw"


@dataclass
class Case:
    """One benchmark: ``metric`` is the headline number, ``better`` says which way is good."""

    name: str
    area: str
    metric: str
    unit: str
    better: str  # "lower" or "higher"
    run: Callable[[Context], dict[str, dict[str, float]]]
    doc: str = ""


CASES: dict[str, Case] = {}


def case(name: str, metric: str, unit: str, better: str = "lower"):
    """Register the decorated function as benchmark ``name`` (its module is the area)."""

    def register(fn: Callable[[Context], dict[str, dict[str, float]]]):
        area = fn.__module__.rsplit(".", 1)[-1]
        doc = (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else ""
        CASES[name] = Case(name, area, metric, unit, better, fn, doc)
        return fn

    return register


@dataclass
class Context:
    """What a case needs: the Ember backend, the speed setting, and optional peers."""

    backend: Any
    quick: bool
    peers: dict[str, Any] = field(default_factory=dict)  # "cupy"/"torch" -> module
    cache: dict[str, Any] = field(default_factory=dict)

    def once(self, key: str, make: Callable[[], Any]) -> Any:
        """``make()`` the first time ``key`` is asked for, the same object afterwards."""
        if key not in self.cache:
            self.cache[key] = make()
        return self.cache[key]

    def iterations(self, full: int) -> int:
        """Iterations per repeat: ``full``, or a tenth of it with ``--quick``."""
        return max(full // 10, 10) if self.quick else full

    @property
    def repeats(self) -> int:
        return 3 if self.quick else 7


# ------------------------------------------------------------------ measured values
class Median(float):
    """The median of ``n`` samples that remembers their range ``lo``..``hi``.

    It is a float, so a case returns it as it would any number; arithmetic on it gives a
    plain float (the range is then unknown, and not stored): use :meth:`map` to convert
    units and keep the range.
    """

    lo: float
    hi: float
    n: int

    def __new__(cls, value: float, lo: float, hi: float, n: int) -> Median:
        self = super().__new__(cls, value)
        self.lo, self.hi, self.n = float(lo), float(hi), int(n)
        return self

    def __reduce__(self):
        return (Median, (float(self), self.lo, self.hi, self.n))

    def map(self, fn: Callable[[float], float]) -> Median:
        """``fn`` (monotonic: a change of unit, ``bytes / time``) of the median and range."""
        a, b = fn(self.lo), fn(self.hi)
        return Median(fn(float(self)), min(a, b), max(a, b), self.n)

    def __repr__(self) -> str:
        return f"Median({float(self)!r}, lo={self.lo!r}, hi={self.hi!r}, n={self.n})"


def median(samples) -> Median:
    """The :class:`Median` of ``samples`` (an iterable of numbers, at least one)."""
    values = sorted(float(s) for s in samples)
    if not values:
        raise ValueError("median() of no samples: a measurement needs at least one run")
    return Median(statistics.median(values), values[0], values[-1], len(values))


def spreads(results: dict[str, dict]) -> dict[str, dict[str, dict[str, float]]]:
    """``{impl: {metric: {"min", "max", "n"}}}`` for every :class:`Median` in ``results``."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for impl, metrics in results.items():
        for metric, value in metrics.items():
            if isinstance(value, Median):
                out.setdefault(impl, {})[metric] = {"min": value.lo, "max": value.hi, "n": value.n}
    return out


# ------------------------------------------------------------------ timing
def per_call_us(
    fn: Callable[[], Any], n: int, repeats: int, sync: Callable | None = None
) -> Median:
    """Median over ``repeats`` of the mean time of one ``fn()`` call, in microseconds.

    Each repeat runs ``fn`` ``n`` times and then ``sync`` (so queued device work is counted);
    one warm-up repeat of ``n // 10`` calls comes first.
    """
    for _ in range(max(n // 10, 1)):
        fn()
    if sync:
        sync()
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        if sync:
            sync()
        samples.append((time.perf_counter() - t) / n * 1e6)
    return median(samples)


def interleaved_us(
    impls: dict[str, tuple[Callable[[], Any], Callable | None]],
    n: int,
    repeats: int,
    samples: dict[str, list[float]] | None = None,
    burst: int | None = None,
) -> dict[str, Median | str]:
    """:func:`per_call_us` of every ``(fn, sync)`` in ``impls``, the repeats interleaved
    (impl A, B, C, A, B, C...) so that slow drifts of the machine fall on all alike.
    ``samples``, if given, receives each implementation's per-repeat times (for
    :func:`paired_ratio`).  With ``burst``, a repeat times only the issuing of ``n // burst``
    bursts of ``burst`` calls, each after a ``sync`` outside the clock (:func:`issue_us`).
    An ``fn`` with a ``times(k)`` method (a loop in C: :class:`benchmarks.impls.DriverLoop`)
    is timed as ``times(n)``, the same ``n`` calls without Python's loop.

    A failing implementation is left out after its first error (its value: the message)."""
    results: dict[str, Median | str] = {}
    samples = {} if samples is None else samples
    samples.update({name: [] for name in impls})
    live = dict(impls)
    for name, (fn, sync) in list(live.items()):
        try:
            for _ in range(max(n // 10, 1)):
                fn()
            if sync:
                sync()
        except Exception as exc:
            results[name] = traceback.format_exception_only(type(exc), exc)[-1].strip()[:300]
            del live[name]
    for _ in range(repeats):
        for name, (fn, sync) in live.items():
            if burst:
                samples[name].append(issue_us(fn, sync, n, burst))
                continue
            t = time.perf_counter()
            _calls(fn, n)
            if sync:
                sync()
            samples[name].append((time.perf_counter() - t) / n * 1e6)
    for name in live:
        results[name] = median(samples[name])
    return results


def issue_us(fn: Callable[[], Any], sync: Callable, n: int, burst: int) -> float:
    """The mean host time of one ``fn()`` call in bursts of ``burst`` calls (``n // burst``
    of them), each burst started on an idle queue (``sync`` before it, not timed) and timed
    to its last call's return, not to the work's completion.

    For a launch this is what the calling thread spends per launch when the device keeps
    up, as long as ``burst`` launches fit in the driver's queue: where a loop of launches
    fills that queue, every launch waits for a free slot, and a throughput figure
    (:func:`per_call_us`) then measures the device's kernel rate instead of the launch."""
    bursts, total = max(n // burst, 1), 0.0
    for _ in range(bursts):
        sync()
        t = time.perf_counter()
        _calls(fn, burst)
        total += time.perf_counter() - t
    sync()
    return total / (bursts * burst) * 1e6


def _calls(fn: Callable[[], Any], n: int) -> None:
    """``n`` calls of ``fn``: one call of its ``times(n)`` where it has one (a loop in C,
    :class:`benchmarks.impls.DriverLoop`), else a Python loop."""
    times = getattr(fn, "times", None)
    if times is not None:
        times(n)
        return
    for _ in range(n):
        fn()


def paired_ratio(samples: dict[str, list[float]], name: str, base: str) -> Median | None:
    """The median over repeats of ``name``'s time over ``base``'s in the same repeat of
    :func:`interleaved_us`: a drift of the machine between repeats cancels in each ratio."""
    a, b = samples.get(name), samples.get(base)
    if not a or not b or len(a) != len(b):
        return None
    return median([x / y for x, y in zip(a, b, strict=True)])


def interleaved_into(results: dict, impls: dict, n: int, repeats: int, key: str = "us") -> None:
    """:func:`interleaved_us` of ``impls`` stored as ``results[name] = {key: median}`` (or
    ``{"error": message}``): the dispatch cases, whose host times drift with the machine by
    more than the differences they compare."""
    for name, value in interleaved_us(impls, n, repeats).items():
        results[name] = {"error": value} if isinstance(value, str) else {key: value}


def bandwidth_gbs(
    fn: Callable[[], Any], nbytes: int, sync: Callable, n: int, repeats: int
) -> Median:
    """Median over ``repeats`` of GB/s (10^9 bytes/s) moving ``nbytes`` per ``fn()`` call."""
    fn()
    sync()
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        samples.append(nbytes * n / (time.perf_counter() - t) / 1e9)
    return median(samples)


def guarded(results: dict, impl: str, fn: Callable[[], dict[str, float]]) -> None:
    """Run one implementation; a failure is recorded under ``error`` instead of stopping."""
    try:
        results[impl] = fn()
    except Exception as exc:
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        results[impl] = {"error": last[:300]}


# ------------------------------------------------------------------ environment
def git_commit() -> str:
    """``$BENCH_COMMIT`` when set (the GPU machine's copy of the tree can carry an older
    ``.git``: the caller names the commit it sent), else ``git rev-parse --short HEAD``
    (``-dirty`` if modified), else "unknown"."""
    if os.environ.get("BENCH_COMMIT"):
        return os.environ["BENCH_COMMIT"]
    fallback = "unknown"
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=10,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return fallback
    if out.returncode != 0:  # no git, or a copy of the tree without .git
        return fallback
    commit = out.stdout.strip() or fallback
    return commit + ("-dirty" if dirty.stdout.strip() else "")


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "device"


def environment(ctx: Context) -> dict[str, Any]:
    """Device, versions, date and commit, recorded with every result file."""
    info = ctx.backend.device
    env = {
        "device": info.name,
        "arch": info.arch,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "python": platform.python_version(),
        "quick": ctx.quick,
        "versions": dict(ctx.backend.library_versions()),
    }
    for name, module in ctx.peers.items():
        env["versions"][name] = getattr(module, "__version__", "?")
    target = ctx.backend.describe().get("target")
    if target:  # what the code was compiled for (the cpu backend: -march=native's CPU model)
        env["target"] = target
    return env


# ------------------------------------------------------------------ report
def entry(c: Case, results: dict[str, dict]) -> dict[str, Any]:
    """One case as the result files store it: what it measures, the values (medians; floats
    and the odd string) and, under ``spread``, the range of the repeats behind each median
    that has one (files written before ``spread`` existed have none: its noise is unknown)."""
    plain = {
        impl: {k: float(v) if isinstance(v, Median) else v for k, v in metrics.items()}
        for impl, metrics in results.items()
    }
    return {
        "metric": c.metric, "unit": c.unit, "better": c.better, "doc": c.doc,
        "results": plain, "spread": spreads(results),
    }  # fmt: skip


def _cell(value: float, floor: float | None) -> str:
    text = f"{value:.2f}" if value < 1000 else f"{value:.0f}"
    return f"{text} ({value / floor:.2f}x)" if floor else text


def rows(results: dict[str, dict]) -> tuple[list[str], list[list[str]]]:
    """Header and rows: one row per case, one column per implementation (value and ratio)."""
    impls: list[str] = []
    for res in results.values():
        impls += [i for i in res["results"] if i not in impls]
    impls.sort(key=lambda i: (i != FLOOR, not i.startswith("ember"), i))
    header = ["case", "unit", *impls]
    table = []
    for name, res in results.items():
        floor = res["results"].get(FLOOR, {}).get(res["metric"])
        row = [name, res["unit"]]
        for impl in impls:
            metrics = res["results"].get(impl)
            if metrics is None:
                row.append("")
            elif res["metric"] in metrics:
                row.append(_cell(metrics[res["metric"]], floor if impl != FLOOR else None))
            else:
                row.append("error")
        table.append(row)
    return header, table


def has_floor(results: dict[str, dict]) -> bool:
    """Whether any case measured the raw floor (no ratios to speak of on OpenCL)."""
    return any(FLOOR in res["results"] for res in results.values())


def text_table(header: list[str], table: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True))  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, table)])


def markdown(env: dict, header: list[str], table: list[list[str]], results: dict) -> str:
    out = [
        f"# {env['area']} benchmarks: {env['device']} ({env['arch']})",
        "",
        f"{env['date']}, commit {env['commit']}, Python {env['python']}"
        + (", --quick" if env["quick"] else ""),
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in env["versions"].items()),
        "",
        *([f"Target: {env['target']}", ""] if env.get("target") else []),
        "Medians; in brackets the ratio to the raw cuda.bindings floor "
        "(time: lower is better; GB/s: higher is better)."
        if has_floor(results)
        else "Medians (time: lower is better; GB/s: higher is better).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(r) + " |" for r in table),
    ]
    errors = [
        f"- {name} / {impl}: {m['error']}"
        for name, res in results.items()
        for impl, m in res["results"].items()
        if "error" in m
    ]
    if errors:
        out += ["", "Errors:", *errors]
    return "\n".join(out) + "\n"


def write_results(out_dir: str, area: str, env: dict, results: dict) -> tuple[str, str]:
    """Write ``<area>-<device>-<date>.json`` and ``.md`` into ``out_dir``; return the paths."""
    os.makedirs(out_dir, exist_ok=True)
    env = dict(env, area=area)
    stem = f"{area}-{slug(env['device'])}-{env['date'][:10]}"
    json_path = os.path.join(out_dir, stem + ".json")
    md_path = os.path.join(out_dir, stem + ".md")
    with open(json_path, "w") as f:
        json.dump({"environment": env, "cases": results}, f, indent=1)
    header, table = rows(results)
    with open(md_path, "w") as f:
        f.write(markdown(env, header, table, results))
    return json_path, md_path
