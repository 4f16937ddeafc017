"""Compare two sets of benchmark results: ``python -m benchmarks compare OLD NEW``.

OLD and NEW are result files or directories of them (a directory gives the newest file of
each area and device kind).  Every implementation of every case present on both sides gets a
row: both medians, the ratio NEW/OLD, and a verdict.  A change is *better* or *worse* only
where it exceeds the measured run-to-run noise: the ranges of the repeats behind the two
medians (min..max, stored with each median) do not overlap.  Where a side stores no range
(files from before the harness kept one), the noise is unknown and the row says so.

Devices are matched by kind (``nvidia-h200``): a result is compared with one of the same
kind only, unless ``--any-device`` says otherwise.  The output is markdown, for the terminal
and for commit messages (``--changes-only`` leaves out the rows within the noise).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass, field

from benchmarks.store import ResultsError, Run, Value, family, kinds, load_all, newest

BETTER, WORSE, NOISE, UNKNOWN, ERROR = (
    "better", "worse", "within noise", "noise unknown", "error",
)  # fmt: skip


@dataclass
class Row:
    """One implementation of one case on both sides."""

    kind: str
    area: str
    case: str
    impl: str
    unit: str
    better: str  # "lower" or "higher": which way is good
    old: Value
    new: Value

    @property
    def ratio(self) -> float | None:
        """NEW / OLD of the medians (None where either is missing or zero)."""
        if self.old.median and self.new.median is not None:
            return self.new.median / self.old.median
        return None

    @property
    def verdict(self) -> str:
        if self.old.error or self.new.error or self.ratio is None:
            return ERROR
        if not (self.old.spread_known and self.new.spread_known):
            return UNKNOWN
        if self.new.lo <= self.old.hi and self.old.lo <= self.new.hi:  # ranges overlap
            return NOISE
        went_up = self.new.median > self.old.median
        return BETTER if went_up == (self.better == "higher") else WORSE

    def slowdown(self) -> float | None:
        """How many times worse NEW is than OLD, whichever way the metric is good."""
        r = self.ratio
        if not r:
            return None
        return 1 / r if self.better == "higher" else r


@dataclass
class Section:
    """One area on one device kind: the runs compared and their rows."""

    old: Run
    new: Run
    rows: list[Row] = field(default_factory=list)

    def machine_drift(self) -> float | None:
        """Median slowdown of the floor's and the peers' rows: how much the machine (and the
        peers' versions), not Ember, moved between the runs."""
        values = [
            s
            for r in self.rows
            if family(r.impl) in ("floor", "peer") and (s := r.slowdown()) is not None
        ]
        return statistics.median(values) if values else None


@dataclass
class Comparison:
    sections: list[Section]
    missing: list[str]  # what is on one side only, or could not be compared
    notes: list[str]

    @property
    def rows(self) -> list[Row]:
        return [r for s in self.sections for r in s.rows]

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys((BETTER, WORSE, NOISE, UNKNOWN, ERROR), 0)
        for r in self.rows:
            out[r.verdict] += 1
        return out


# ------------------------------------------------------------------ matching
def _pairs(old: list[Run], new: list[Run], any_device: bool, notes: list[str], missing):
    """(old run, new run) per area (and device kind) present on both sides."""
    if any_device:
        for side, runs in (("OLD", old), ("NEW", new)):
            if len(kinds(runs)) > 1:
                raise ResultsError(
                    f"--any-device needs one device kind per side; {side} has "
                    f"{', '.join(kinds(runs))}: give single files or directories"
                )
        key = lambda r: r.area  # noqa: E731
    else:
        key = lambda r: (r.kind, r.area)  # noqa: E731
        for kind in kinds(new):
            if kind not in kinds(old):
                notes.append(f"no OLD results for device kind {kind}: nothing to compare it with")
        old = [r for r in old if r.kind in kinds(new)]
    by_key = {key(r): r for r in old}
    new_keys = {key(r) for r in new}
    for side, runs, other in (("NEW", new, set(by_key)), ("OLD", old, new_keys)):
        alone = [r for r in runs if key(r) not in other and (any_device or r.kind in kinds(old))]
        for kind in kinds(alone):
            areas = ", ".join(r.area for r in alone if r.kind == kind)
            missing.append(f"{kind}: area(s) only in {side}: {areas}")
    for r in new:
        if key(r) in by_key:
            yield by_key[key(r)], r


def _section(old: Run, new: Run, missing: list[str]) -> Section:
    section = Section(old, new)
    where = f"{new.kind} {new.area}/"
    for case in new.cases:
        if case not in old.cases:
            missing.append(f"{where}{case}: only in NEW")
            continue
        o, n = old.cases[case], new.cases[case]
        if o["metric"] != n["metric"]:
            missing.append(f"{where}{case}: metric changed ({o['metric']} -> {n['metric']})")
            continue
        for impl in new.impls(case):
            if impl not in o["results"]:
                missing.append(f"{where}{case} {impl}: only in NEW")
                continue
            row = Row(
                new.kind, new.area, case, impl, n.get("unit", ""), n.get("better", "lower"),
                old.value(case, impl), new.value(case, impl),
            )  # fmt: skip
            section.rows.append(row)
        for impl in old.impls(case):
            if impl not in n["results"]:
                missing.append(f"{where}{case} {impl}: only in OLD")
    for case in old.cases:
        if case not in new.cases:
            missing.append(f"{where}{case}: only in OLD")
    return section


def compare(old: list[Run], new: list[Run], any_device: bool = False) -> Comparison:
    """Compare the newest run of each area (and device kind) of ``old`` and ``new``."""
    notes: list[str] = []
    missing: list[str] = []
    sections = [
        _section(o, n, missing)
        for o, n in _pairs(newest(old), newest(new), any_device, notes, missing)
    ]
    for s in sections:
        if s.old.quick != s.new.quick:
            notes.append(
                f"{s.new.area}: one side ran with --quick (smaller sizes, fewer repeats): "
                "its ratios compare different measurements"
            )
    return Comparison(sections, missing, notes)


# ------------------------------------------------------------------ markdown
def number(value: float) -> str:
    """A value as the tables show it: 3 significant digits (whole numbers from 1000 on)."""
    size = abs(value)
    if size >= 1e6:
        return f"{value:.3g}"
    if size >= 1000:
        return f"{value:.0f}"
    return f"{value:.1f}" if size >= 100 else f"{value:#.3g}"


def _value_cell(v: Value) -> str:
    return "error" if v.error or v.median is None else number(v.median)


def _noise_cell(row: Row) -> str:
    sides = [row.old.noise(), row.new.noise()]
    return " / ".join("?" if s is None else f"±{s * 100:.1f}%" for s in sides)


def _verdict_cell(row: Row) -> str:
    v = row.verdict
    return f"**{v}**" if v in (BETTER, WORSE) else v


def _table(rows: list[Row]) -> list[str]:
    out = [
        "| case | implementation | unit | old | new | new/old | noise old / new | change |",
        "|---|---|---|---:|---:|---:|---|---|",
    ]
    for r in rows:
        ratio = "" if r.ratio is None else f"{r.ratio:.3f}"
        cells = [r.case, r.impl, r.unit, _value_cell(r.old), _value_cell(r.new), ratio]
        out.append("| " + " | ".join([*cells, _noise_cell(r), _verdict_cell(r)]) + " |")
    return out


def _summary(cmp: Comparison) -> list[str]:
    c = cmp.counts()
    return [
        f"{c[BETTER]} better and {c[WORSE]} worse beyond the run-to-run noise, "
        f"{c[NOISE]} within it, {c[UNKNOWN]} with the noise unknown (a side stores no range "
        f"of repeats), {c[ERROR]} with an error on a side.",
        "",
        "*better*/*worse*: the ranges (min..max) of the repeats behind the two medians do not "
        "overlap; noise: half that range, relative to the median.",
    ]


def _drift_line(drift: float) -> str:
    percent = abs(drift - 1) * 100
    if percent < 0.05:
        return "The floor and the peers did not move (median): the machine is steady."
    word = "slower" if drift > 1 else "faster"
    return (
        f"The floor and the peers became a median {percent:.1f}% {word}: how much the "
        "machine (and the peers' versions), not Ember, moved."
    )


def markdown(cmp: Comparison, changes_only: bool = False) -> str:
    """The comparison as markdown: a summary, a table per area, what was not compared."""
    out = ["## Benchmarks: NEW against OLD", ""]
    if not cmp.sections:
        out += ["Nothing to compare: no area of a device kind is on both sides.", ""]
    else:
        out += [*_summary(cmp), ""]
    for s in cmp.sections:
        rows = s.rows
        if changes_only:  # rows whose noise is unknown stay: they may be changes
            rows = [r for r in rows if r.verdict != NOISE]
        out += [
            f"### {s.new.area} on {s.new.device}",
            "",
            f"OLD {s.old.label()} ({s.old.device}); NEW {s.new.label()}.",
            "",
        ]
        drift = s.machine_drift()
        if drift is not None:
            out += [_drift_line(drift), ""]
        out += (_table(rows) if rows else ["Every row is within the noise."]) + [""]
    if cmp.missing:
        out += ["### Not compared", "", *(f"- {m}" for m in cmp.missing), ""]
    if cmp.notes:
        out += ["### Notes", "", *(f"- {n}" for n in cmp.notes), ""]
    return "\n".join(out)


# ------------------------------------------------------------------ command line
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks compare", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("old", metavar="OLD", help="result file (.json) or directory of them")
    p.add_argument("new", metavar="NEW", help="result file (.json) or directory of them")
    p.add_argument(
        "--changes-only", action="store_true", help="leave out the rows within the noise"
    )
    p.add_argument("--any-device", action="store_true", help="compare across device kinds")
    p.add_argument("--out", help="also write the markdown to this file")
    args = p.parse_args(argv)
    try:
        cmp = compare(load_all(args.old), load_all(args.new), args.any_device)
    except ResultsError as exc:
        print(f"benchmarks compare: {exc}", file=sys.stderr)
        return 2
    text = markdown(cmp, args.changes_only)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0
