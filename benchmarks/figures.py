"""The README's table of figures, made from the committed results:
``python -m benchmarks figures [--write | --check]``.

:data:`ROWS` says which case and which implementations each line of the table shows; the
values come from the newest result file of each area, on the device kind whose results fill
the most lines.  The table lives in README.md between the :data:`BEGIN` and :data:`END`
markers: ``--write`` replaces it, ``--check`` fails where it differs from the results (a
unit test runs the check, so a table typed by hand, or results committed without the table,
are caught).
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from dataclasses import dataclass

from benchmarks.compare import number
from benchmarks.store import ResultsError, Run, load_all, newest

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
README = os.path.join(os.path.dirname(HERE), "README.md")
REPORT = "benchmarks/results/report/README.md"  # the plots, relative to the README
BEGIN = "<!-- figures: generated from benchmarks/results by python -m benchmarks figures -->"
END = "<!-- /figures -->"
COLUMNS = ("Ember", "raw cuda.bindings", "CuPy", "PyTorch")


@dataclass(frozen=True)
class Row:
    """A line of the table: ``case`` of ``area``, one implementation per column (None:
    blank), and a note shown after a column's value."""

    label: str
    area: str
    case: str
    impls: tuple[str | None, str | None, str | None, str | None]
    notes: tuple[str, str, str, str] = ("", "", "", "")


PEERS = ("ember", "raw", "cupy", "torch")
ROWS = (
    Row("`import` (s)", "startup", "startup_import", PEERS),
    Row(
        "first kernel after 0.2 s of setup, warmup on (s)",
        "startup",
        "startup_after_setup",
        PEERS,
    ),
    Row("first kernel, empty cache (s)", "startup", "startup_first_cold", PEERS),
    Row(
        "launch, 3-arg `@ember.kernel` (µs)",
        "runtime",
        "launch_3args",
        ("ember.kernel", "raw", "cupy", None),
    ),
    Row("sync, idle stream (µs)", "sync", "sync_idle_stream", PEERS),
    Row(
        "alloc + free 1 MiB, `ember.empty` (µs)",
        "memory",
        "pool_alloc_free_1MiB",
        ("ember.empty", "raw", "cupy", "torch"),
        ("", " (`cuMemAllocAsync`)", "", ""),
    ),
    Row(
        "`y * 2` on 32 elements, host time (µs)",
        "arrays",
        "array_dispatch",
        ("ember", None, "cupy", "torch"),
    ),
    Row("`2*x+y` fused, 1 GiB (GB/s)", "arrays", "array_axpy", PEERS),
    Row("copy 1 GiB (GB/s)", "arrays", "array_copy", PEERS),
)


def _cell(run: Run | None, row: Row, column: int) -> str:
    impl = row.impls[column]
    if run is None or impl is None or row.case not in run.cases:
        return ""
    value = run.value(row.case, impl)
    if value is None or value.median is None:
        return ""
    return number(value.median) + row.notes[column]


def _device_runs(runs: list[Run]) -> dict[str, Run]:
    """``{area: newest run}`` of the device kind whose results fill most of the table
    (ties: the newest)."""
    latest = newest(runs)
    by_kind: dict[str, dict[str, Run]] = {}
    for run in latest:
        by_kind.setdefault(run.kind, {})[run.area] = run

    def score(kind: str):
        areas = by_kind[kind]
        filled = sum(1 for row in ROWS if _cell(areas.get(row.area), row, 0))
        return filled, max(r.date for r in areas.values())

    return by_kind[max(by_kind, key=score)]


def table(runs: list[Run]) -> str:
    """The block between the markers: a sentence saying where the figures come from, the
    table."""
    areas = _device_runs(runs)
    used = [areas[a] for a in dict.fromkeys(row.area for row in ROWS) if a in areas]
    dates = sorted({r.date[:10] for r in used})
    when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    device = used[0].device if used else next(iter(areas.values())).device
    lines = [
        f"Measured on an {device} ({when}; medians, each line from one run with its peers;",
        f"every case and plots: [{os.path.dirname(REPORT)}]({REPORT})):",
        "",
        "| measure | " + " | ".join(COLUMNS) + " |",
        "|---|" + "---|" * len(COLUMNS),
    ]
    for row in ROWS:
        run = areas.get(row.area)
        cells = [_cell(run, row, i) for i in range(len(COLUMNS))]
        lines.append(f"| {row.label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def replace(text: str, block: str, path: str = "README.md") -> str:
    """``text`` with the part between the markers replaced by ``block``."""
    if BEGIN not in text or END not in text:
        raise ResultsError(
            f"{path} has no figures block: put the lines {BEGIN!r} and {END!r} where the "
            "table goes, then run python -m benchmarks figures --write"
        )
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{block}\n{END}{tail}"


def check(readme: str = README, results: str = RESULTS) -> list[str]:
    """The differences between the README's table and the results' (empty: they agree)."""
    with open(readme) as f:
        text = f.read()
    wanted = replace(text, table(load_all(results)), readme)
    return list(difflib.unified_diff(text.splitlines(), wanted.splitlines(), "README.md",
                                     "from the results", lineterm=""))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks figures", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--results", default=RESULTS, help="directory of result files")
    p.add_argument("--readme", default=README, help="the file holding the table")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="replace the README's table")
    mode.add_argument("--check", action="store_true", help="fail if the README's table differs")
    args = p.parse_args(argv)
    try:
        if args.check:
            diff = check(args.readme, args.results)
            if diff:
                print("\n".join(diff))
                print("the README's figures differ from the results: run "
                      "python -m benchmarks figures --write", file=sys.stderr)  # fmt: skip
            return 1 if diff else 0
        block = table(load_all(args.results))
        if args.write:
            with open(args.readme) as f:
                text = replace(f.read(), block, args.readme)
            with open(args.readme, "w") as f:
                f.write(text)
            print(f"wrote the figures into {args.readme}")
        else:
            print(block)
    except ResultsError as exc:
        print(f"benchmarks figures: {exc}", file=sys.stderr)
        return 2
    return 0
