"""Reading result files: ``<area>-<device>-<date>.json`` as :mod:`benchmarks.harness` writes
them, from any version of the harness.

A file is a :class:`Run` (one area on one device at one commit); each value in it is read as
a :class:`Value`: the median, the range of the repeats behind it where the file stores one
(files written before the harness stored ``spread`` have none: their noise is unknown, and
nothing here makes one up), or the error the implementation raised.
"""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass
from typing import Any

from benchmarks.harness import FLOOR, slug

PEERS = ("cupy", "torch", "numba", "triton")
"""Name prefixes of the peer libraries' implementations (``cupy-expr``, ``numba-cuda``...)."""
BASELINES = ("idle loop",)
"""Implementations that are neither Ember, the floor nor a peer: a reference point."""


class ResultsError(ValueError):
    """A result file or directory that cannot be read, and why."""


def family(impl: str) -> str:
    """``"floor"`` (raw ``cuda.bindings``), ``"peer"``, ``"baseline"`` or ``"ember"``."""
    name = impl.lower()
    if name.startswith(FLOOR):
        return "floor"
    if name.startswith(PEERS):
        return "peer"
    if name.startswith(BASELINES):
        return "baseline"
    return "ember"  # ember, ember.empty, ember[poll], Pool.allocate...


@dataclass(frozen=True)
class Value:
    """One implementation's headline number in one case."""

    median: float | None
    lo: float | None = None  # smallest and largest repeat; None: not stored (noise unknown)
    hi: float | None = None
    n: int | None = None
    error: str | None = None

    @property
    def spread_known(self) -> bool:
        return self.lo is not None and self.hi is not None

    def noise(self) -> float | None:
        """Half the range of the repeats, relative to the median (None where unknown)."""
        if not self.spread_known or not self.median:
            return None
        return (self.hi - self.lo) / 2 / abs(self.median)


@dataclass
class Run:
    """One result file: an area measured on one device at one commit."""

    path: str
    environment: dict[str, Any]
    cases: dict[str, dict[str, Any]]

    @property
    def area(self) -> str:
        return str(self.environment.get("area") or _area_from_name(self.path))

    @property
    def device(self) -> str:
        return str(self.environment.get("device", "unknown device"))

    @property
    def kind(self) -> str:
        """The device kind as file names spell it (``nvidia-h200``)."""
        return slug(self.device)

    @property
    def date(self) -> str:
        return str(self.environment.get("date", ""))

    @property
    def commit(self) -> str:
        return str(self.environment.get("commit", "unknown"))

    @property
    def quick(self) -> bool:
        return bool(self.environment.get("quick"))

    def label(self) -> str:
        """``2026-11-21, commit 95c9efa`` (and ``--quick`` where it was)."""
        return f"{self.date[:10]}, commit {self.commit}" + (", --quick" if self.quick else "")

    def value(self, case: str, impl: str) -> Value | None:
        """``impl``'s headline value in ``case``; None where it did not run."""
        entry = self.cases[case]
        metrics = entry.get("results", {}).get(impl)
        if metrics is None:
            return None
        if "error" in metrics and entry["metric"] not in metrics:
            return Value(None, error=str(metrics["error"]))
        number = metrics.get(entry["metric"])
        if not isinstance(number, int | float):
            return Value(None, error=f"no {entry['metric']!r} in the results")
        spread = entry.get("spread", {}).get(impl, {}).get(entry["metric"])
        if not spread:
            return Value(float(number))
        return Value(float(number), spread["min"], spread["max"], spread.get("n"))

    def impls(self, case: str) -> list[str]:
        """The implementations of ``case``, in the order the case ran them."""
        return list(self.cases[case].get("results", {}))


def _area_from_name(path: str) -> str:
    return os.path.basename(path).split("-", 1)[0]


def load(path: str) -> Run:
    """Read one result file; a file that is not one raises :class:`ResultsError`."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        raise ResultsError(f"cannot read benchmark results {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("cases"), dict):
        raise ResultsError(
            f"{path} is not a benchmark result file (no 'cases'): give files written by "
            "python -m benchmarks, or the directories holding them"
        )
    for name, entry in data["cases"].items():
        if not isinstance(entry, dict) or "metric" not in entry or "results" not in entry:
            raise ResultsError(f"{path}: case {name!r} has no 'metric' or 'results'")
    return Run(path, dict(data.get("environment") or {}), data["cases"])


def load_all(path: str) -> list[Run]:
    """The runs in ``path``: a result file, or every ``*.json`` directly in a directory."""
    if os.path.isdir(path):
        files = sorted(glob.glob(os.path.join(path, "*.json")))
        if not files:
            raise ResultsError(f"no benchmark results (*.json) in {path}")
        return [load(f) for f in files]
    if not os.path.exists(path):
        raise ResultsError(f"{path}: no such result file or directory")
    return [load(path)]


def newest(runs: list[Run]) -> list[Run]:
    """The newest run of each (device kind, area), ordered by device kind and area."""
    best: dict[tuple[str, str], Run] = {}
    for run in runs:
        key = (run.kind, run.area)
        if key not in best or run.date > best[key].date:
            best[key] = run
    return [best[k] for k in sorted(best)]


def kinds(runs: list[Run]) -> list[str]:
    """The device kinds among ``runs``, sorted."""
    return sorted({r.kind for r in runs})
