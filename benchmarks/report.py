"""A page of plots: ``python -m benchmarks report RESULTS_DIR [--out DIR] [--html FILE]``.

For the newest result file of every area and device kind in RESULTS_DIR: one figure per area,
a panel per case with a bar per implementation (Ember's in orange, the raw ``cuda.bindings``
floor in grey, each peer in its colour; whiskers: the range of the repeats where the file
stores one), and a table of Ember against the floor and the best peer.  Every figure names
its device, date and commit.

The page is markdown with PNG files (``--out``, default ``RESULTS_DIR/report``: GitHub shows
it), and with ``--html`` also one self-contained HTML file (the PNGs inlined as base64).
Needs matplotlib: ``pip install 'ember[bench]'``.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import math
import os
import re
import sys
from dataclasses import dataclass

from benchmarks.compare import number
from benchmarks.harness import FLOOR
from benchmarks.store import ResultsError, Run, Value, family, load_all, newest

COLORS = {"floor": "#868e96", "baseline": "#fcc419", "ember": "#e8590c"}
PEER_COLORS = {"cupy": "#2f9e44", "torch": "#1971c2", "numba": "#7048e8", "triton": "#c2255c"}
ORDER = {"ember": 0, "floor": 1, "peer": 2, "baseline": 3}


def _library(impl: str) -> str:
    """``cupy`` for ``cupy-expr``, ``ember`` for ``ember.empty``: whose implementation it is."""
    kind = family(impl)
    if kind == "peer":
        return next(p for p in PEER_COLORS if impl.lower().startswith(p))
    return kind


def color(impl: str) -> tuple[str, float]:
    """Colour and opacity: the library's colour; variants (``ember-expr``) paler."""
    lib = _library(impl)
    base = PEER_COLORS.get(lib) or COLORS[lib]
    main = impl in (lib, FLOOR) or lib == "baseline"
    return base, 1.0 if main else 0.6


# ------------------------------------------------------------------ one case
@dataclass
class Bar:
    impl: str
    value: Value


def bars(run: Run, case: str) -> list[Bar]:
    """The case's implementations with a value: Ember's first, then the floor, the peers."""
    out = [Bar(i, v) for i in run.impls(case) if (v := run.value(case, i)) is not None]
    libs = list(PEER_COLORS)
    return sorted(
        out, key=lambda b: (ORDER[family(b.impl)], libs.index(_library(b.impl)) if
                            family(b.impl) == "peer" else 0)
    )  # fmt: skip


def _good(ratio: float, better: str) -> str:
    if abs(ratio - 1) < 0.005:
        return "same"
    return "better" if (ratio > 1) == (better == "higher") else "worse"


def ratio_text(mine: float, theirs: float | None, better: str, who: str = "") -> str:
    """``1.13x raw (worse)``: Ember's value over another's, and which way that is good."""
    if not theirs:
        return ""
    r = mine / theirs
    return f"{r:.2f}x {who}".rstrip() + f" ({_good(r, better)})"


def best_peer(run: Run, case: str) -> Bar | None:
    """The peer implementation with the best value (None where no peer ran)."""
    peers = [b for b in bars(run, case) if family(b.impl) == "peer" and b.value.median]
    higher = run.cases[case].get("better") == "higher"
    pick = max if higher else min
    return pick(peers, key=lambda b: b.value.median) if peers else None


def _panel(ax, run: Run, case: str, slots: int) -> None:
    """One case: horizontal bars from the top of ``slots`` places (so that every panel's
    bars are as thick), labelled with the value and the ratio to the floor."""
    entry = run.cases[case]
    items = bars(run, case)
    floor = run.value(case, FLOOR)
    y = [slots - 1 - i for i in range(len(items))]
    for yi, b in zip(y, items, strict=True):
        _bar(ax, yi, b, floor.median if floor else None)
    ax.set_ylim(-0.6, slots - 0.4)
    ax.set_yticks(y, [b.impl for b in items], fontsize=7)
    _scale(ax, [b.value.median for b in items if b.value.median and b.value.median > 0])
    ax.tick_params(axis="x", labelsize=7)
    better = "higher" if entry.get("better") == "higher" else "lower"
    ax.set_title(f"{case}: {entry.get('unit', '')} ({better} is better)", fontsize=8, loc="left")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _bar(ax, y: float, bar: Bar, floor: float | None) -> None:
    """One bar, its whisker (the range of the repeats) and its label."""
    v = bar.value
    rgb, alpha = color(bar.impl)
    ax.barh(y, v.median or 0.0, color=rgb, alpha=alpha, height=0.7)
    if v.spread_known:
        ax.errorbar(v.median, y, xerr=[[v.median - v.lo], [v.hi - v.median]], fmt="none",
                    ecolor="#212529", elinewidth=0.8, capsize=2)  # fmt: skip
    label = "error" if v.median is None else number(v.median)
    if v.median and floor and bar.impl != FLOOR:
        label += f"  ({v.median / floor:.2f}x raw)"
    right = v.hi if v.spread_known else (v.median or 0.0)  # past the whisker
    ax.text(right, y, "  " + label, va="center", fontsize=7)


def _scale(ax, values: list[float]) -> None:
    """Log scale where the bars span more than 30x; room on the right for the labels."""
    if not values:
        return
    lo, hi = min(values), max(values)
    if hi / lo > 30:
        ax.set_xscale("log")
        ax.set_xlim(lo / 2, hi * 12)
    else:
        ax.set_xlim(0, hi * 1.55)


# ------------------------------------------------------------------ one area
def figure(run: Run):
    """The area's figure: a panel per case, two columns."""
    from matplotlib.figure import Figure

    cases = [c for c in run.cases if bars(run, c)]
    cols = 2 if len(cases) > 1 else 1
    rows = math.ceil(len(cases) / cols)
    heights = [
        max(len(bars(run, c)) for c in cases[r * cols : (r + 1) * cols]) + 2 for r in range(rows)
    ]
    fig = Figure(figsize=(13, 0.27 * sum(heights) + 0.9), layout="constrained")
    grid = fig.add_gridspec(rows, cols, height_ratios=heights)
    for i, case in enumerate(cases):
        _panel(fig.add_subplot(grid[i // cols, i % cols]), run, case, heights[i // cols] - 2)
    fig.suptitle(f"{run.area} on {run.device}: {run.label()}", fontsize=10, x=0.01, ha="left")
    _legend(fig, {_library(b.impl) for c in cases for b in bars(run, c)})
    return fig


LEGEND = {"ember": "Ember", "floor": "raw cuda.bindings", "cupy": "CuPy", "torch": "PyTorch",
          "numba": "numba-cuda", "triton": "Triton", "baseline": "baseline"}  # fmt: skip


def _legend(fig, libraries: set[str]) -> None:
    from matplotlib.patches import Patch

    handles = [
        Patch(color=PEER_COLORS.get(lib) or COLORS[lib], label=LEGEND[lib])
        for lib in LEGEND
        if lib in libraries
    ]
    handles.append(Patch(color=COLORS["ember"], alpha=0.6, label="(paler: variants)"))
    fig.legend(handles=handles, loc="outside upper right", ncols=len(handles), fontsize=8,
               frameon=False)  # fmt: skip


def png(fig) -> bytes:
    """The figure as PNG, in 64 colours (a third of the bytes, for files kept in git)."""
    from PIL import Image  # matplotlib's own dependency

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    image = Image.open(buf).convert("RGB").quantize(64, method=Image.Quantize.MEDIANCUT)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def ratio_rows(run: Run) -> list[list[str]]:
    """Per case and Ember implementation: value, against the floor, against the best peer."""
    rows = []
    for case, entry in run.cases.items():
        floor, peer = run.value(case, FLOOR), best_peer(run, case)
        better = entry.get("better", "lower")
        for b in bars(run, case):
            if family(b.impl) != "ember" or not b.value.median:
                continue
            mine = b.value.median
            rows.append([
                case, f"`{b.impl}`", f"{number(mine)} {entry.get('unit', '')}",
                ratio_text(mine, floor.median if floor else None, better),
                ratio_text(mine, peer.value.median, better, peer.impl) if peer else "",
            ])  # fmt: skip
    return rows


# ------------------------------------------------------------------ the page
@dataclass
class Page:
    """The report as blocks: ("h2", text), ("p", text), ("img", file name, png), ("table",
    header, rows); written as markdown + PNG files or as one HTML file."""

    blocks: list[tuple]


def build(runs: list[Run], out_dir: str) -> Page:
    blocks: list[tuple] = [
        ("h1", "Ember benchmarks"),
        ("p", "Generated by `python -m benchmarks report` from the newest result file of each "
              "area and device. Bars: medians (Ember orange, raw cuda.bindings grey, CuPy green, "
              "PyTorch blue); whiskers: the range of the repeats, where the file stores it. "
              "Ratios are Ember's value over the other's, and whether that is better or worse."),
    ]  # fmt: skip
    device = None
    for run in newest(runs):
        if run.device != device:
            device = run.device
            arch = run.environment.get("arch", "")
            blocks.append(("h2", f"{device} ({arch})" if arch else device))
        blocks += _area_blocks(run, out_dir)
    return Page(blocks)


def _area_blocks(run: Run, out_dir: str) -> list[tuple]:
    versions = ", ".join(f"{k} {v}" for k, v in run.environment.get("versions", {}).items())
    source = os.path.splitext(run.path)[0] + ".md"
    link = f" [All values]({os.path.relpath(source, out_dir)})." if os.path.exists(source) else ""
    out: list[tuple] = [
        ("h3", run.area),
        ("p", f"{run.label()}; {versions}.{link}"),
        ("img", f"{run.kind}-{run.area}.png", png(figure(run))),
    ]
    rows = ratio_rows(run)
    if rows:
        out.append(("table", ["case", "Ember", "value", "vs raw", "vs best peer"], rows))
    return out


def markdown(page: Page) -> str:
    out = []
    for block in page.blocks:
        kind = block[0]
        if kind in ("h1", "h2", "h3"):
            out += ["#" * int(kind[1]) + " " + block[1], ""]
        elif kind == "p":
            out += [block[1], ""]
        elif kind == "img":
            out += [f"![{block[1]}]({block[1]})", ""]
        else:
            out += ["| " + " | ".join(block[1]) + " |", "|" + "---|" * len(block[1])]
            out += ["| " + " | ".join(r) + " |" for r in block[2]] + [""]
    return "\n".join(out)


def _inline(text: str) -> str:
    """Markdown's `code` and [text](link) as HTML (all the page's text uses)."""
    text = html.escape(text, quote=False)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    return re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r'<a href="\2">\1</a>', text)


def to_html(page: Page) -> str:
    out = [
        "<!DOCTYPE html>",
        '<html><head><meta charset="utf-8"><title>Ember benchmarks</title><style>',
        "body{font-family:sans-serif;max-width:1300px;margin:auto;padding:1em}",
        "table{border-collapse:collapse;font-size:90%}td,th{border:1px solid #ccc;padding:2px 6px}",
        "img{max-width:100%}</style></head><body>",
    ]
    for block in page.blocks:
        kind = block[0]
        if kind in ("h1", "h2", "h3", "p"):
            out.append(f"<{kind}>{_inline(block[1])}</{kind}>")
        elif kind == "img":
            data = base64.b64encode(block[2]).decode()
            out.append(f'<img alt="{html.escape(block[1])}" src="data:image/png;base64,{data}">')
        else:
            out.append("<table><tr>" + "".join(f"<th>{h}</th>" for h in block[1]) + "</tr>")
            for r in block[2]:
                out.append("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>")
            out.append("</table>")
    return "\n".join([*out, "</body></html>", ""])


def write(page: Page, out_dir: str, html_path: str | None = None) -> list[str]:
    """Write README.md and the PNGs into ``out_dir`` (and the HTML file); return the paths."""
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for block in page.blocks:
        if block[0] == "img":
            path = os.path.join(out_dir, block[1])
            with open(path, "wb") as f:
                f.write(block[2])
            written.append(path)
    path = os.path.join(out_dir, "README.md")
    with open(path, "w") as f:
        f.write(markdown(page))
    written.append(path)
    if html_path:
        with open(html_path, "w") as f:
            f.write(to_html(page))
        written.append(html_path)
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks report", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("results", metavar="RESULTS_DIR", help="directory of result files (.json)")
    p.add_argument("--out", help="directory for README.md and the PNGs (RESULTS_DIR/report)")
    p.add_argument("--html", help="also write one self-contained HTML file here")
    args = p.parse_args(argv)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("benchmarks report needs matplotlib: pip install 'ember[bench]'", file=sys.stderr)
        return 2
    out_dir = args.out or os.path.join(args.results, "report")
    try:
        page = build(load_all(args.results), out_dir)
    except ResultsError as exc:
        print(f"benchmarks report: {exc}", file=sys.stderr)
        return 2
    for path in write(page, out_dir, args.html):
        print(f"wrote {path}")
    return 0
