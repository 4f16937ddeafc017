"""Result files for the tests of ``benchmarks`` (compare, report, figures), written by the
harness's own writer so that the tests read what a GPU run writes.  No device is used."""

from __future__ import annotations

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:  # `benchmarks` is a top-level folder of the repository, not a package
    sys.path.insert(0, ROOT)

from benchmarks.harness import Case, Median, entry, write_results  # noqa: E402

RESULTS = os.path.join(ROOT, "benchmarks", "results")


def measured(value: float, noise: float = 0.01) -> Median:
    """A median whose repeats spread ``noise`` (relative) either side."""
    return Median(value, value * (1 - noise), value * (1 + noise), 7)


def environment(device: str = "NVIDIA H200", date: str = "2026-11-21", commit: str = "aaaaaaa"):
    return {
        "device": device, "arch": "sm_90", "date": f"{date}T09:00:00+00:00", "commit": commit,
        "python": "3.12.3", "quick": False, "versions": {"cuda-bindings": "13.3.1"},
    }  # fmt: skip


def case(name: str, metric: str = "us", unit: str = "us/launch", better: str = "lower") -> Case:
    return Case(name, "runtime", metric, unit, better, run=lambda ctx: {}, doc=f"{name} doc")


def write(directory, area: str, cases: dict, **env) -> str:
    """Write ``{case: (Case, results)}`` as ``area``'s result file; return the JSON path."""
    results = {c.name: entry(c, r) for c, r in cases.values()}
    json_path, _ = write_results(str(directory), area, environment(**env), results)
    return json_path


def strip_spread(path: str) -> None:
    """Make ``path`` look like a file from before the harness stored ranges."""
    with open(path) as f:
        data = json.load(f)
    for c in data["cases"].values():
        c.pop("spread", None)
    with open(path, "w") as f:
        json.dump(data, f)
