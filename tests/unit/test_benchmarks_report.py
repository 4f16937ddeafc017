"""``python -m benchmarks report``: a page of plots from a fixture directory, no GPU."""

from __future__ import annotations

import base64
import io
import re

import pytest
from benchmark_fixtures import case, measured, write
from benchmarks import report
from benchmarks.store import load_all

pytest.importorskip("matplotlib")

LAUNCH = case("launch")
COPY = case("copy", "GB/s", "GB/s", better="higher")
SPREAD = case("spread_wide")  # bars 1000x apart: a log scale


@pytest.fixture
def results(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    write(d, "runtime", {
        "l": (LAUNCH, {
            "ember": {"us": measured(4.0)}, "ember.RawKernel": {"us": 5.0},
            "raw": {"us": measured(3.0)}, "cupy": {"us": measured(5.0)},
            "torch": {"us": measured(6.0)}, "numba-cuda": {"error": "AttributeError: x"},
        }),
        "c": (COPY, {"ember": {"GB/s": measured(4000)}, "torch": {"GB/s": measured(4400)}}),
        "s": (SPREAD, {"ember": {"us": 0.05}, "raw[blocking call]": {"us": 50.0}}),
    })  # fmt: skip
    write(d, "sync", {"l": (LAUNCH, {"ember": {"us": measured(1.0)}})}, device="NVIDIA H100")
    return d


def test_the_page_has_a_plot_and_a_table_per_area(results, tmp_path):
    out, page = tmp_path / "report", tmp_path / "report.html"
    assert report.main([str(results), "--out", str(out), "--html", str(page)]) == 0
    text = (out / "README.md").read_text()
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert images == ["nvidia-h100-sync.png", "nvidia-h200-runtime.png"]
    assert text.index("## NVIDIA H100") < text.index("### sync") < text.index("## NVIDIA H200")
    assert "2026-11-21, commit aaaaaaa" in text
    assert "| launch | `ember` | 4.00 us/launch | 1.33x (worse) | 0.80x cupy (better) |" in text
    assert "| copy | `ember` | 4000 GB/s |  | 0.91x torch (worse) |" in text
    assert "[All values](../results/runtime-nvidia-h200-2026-11-21.md)" in text
    from PIL import Image

    for name in images:
        data = (out / name).read_bytes()
        assert Image.open(io.BytesIO(data)).size[0] == 1300
    html = page.read_text()
    inlined = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    assert [base64.b64decode(s) for s in inlined] == [(out / n).read_bytes() for n in images]
    assert "<td><code>ember</code></td>" in html


def test_bars_are_ember_then_the_floor_then_each_peer(results):
    run = next(r for r in load_all(str(results)) if r.area == "runtime")
    names = [b.impl for b in report.bars(run, "launch")]
    assert names == ["ember", "ember.RawKernel", "raw", "cupy", "torch", "numba-cuda"]
    assert report.bars(run, "launch")[-1].value.error == "AttributeError: x"
    assert report.best_peer(run, "launch").impl == "cupy"  # lower is better
    assert report.best_peer(run, "copy").impl == "torch"
    assert report.best_peer(run, "spread_wide") is None


def test_ratio_words_follow_the_metric():
    assert report.ratio_text(2.0, 1.0, "lower") == "2.00x (worse)"
    assert report.ratio_text(2.0, 1.0, "higher", "torch") == "2.00x torch (better)"
    assert report.ratio_text(1.001, 1.0, "lower") == "1.00x (same)"
    assert report.ratio_text(1.0, None, "lower") == ""


def test_colours_tell_the_libraries_and_their_variants_apart():
    assert report.color("ember") == (report.COLORS["ember"], 1.0)
    assert report.color("ember-expr") == (report.COLORS["ember"], 0.6)
    assert report.color("torch (pinned, non_blocking)")[0] == report.PEER_COLORS["torch"]
    assert report.color("raw") == (report.COLORS["floor"], 1.0)


def test_a_directory_without_results_is_an_error(tmp_path, capsys):
    assert report.main([str(tmp_path)]) == 2
    assert "no benchmark results" in capsys.readouterr().err
