"""``python -m benchmarks compare``: matching cases, missing ones, noise marks, old files."""

from __future__ import annotations

import json
import os
import pickle

import pytest
from benchmark_fixtures import RESULTS, case, measured, strip_spread, write
from benchmarks import compare as cmp
from benchmarks.harness import Median, median
from benchmarks.store import ResultsError, family, load, load_all

LAUNCH, COPY = case("launch"), case("copy", "GB/s", "GB/s", better="higher")


def _pair(tmp_path, old: dict, new: dict, **new_env):
    """Write OLD and NEW runtime results into two directories; compare them."""
    (tmp_path / "old").mkdir(parents=True)
    (tmp_path / "new").mkdir()
    write(tmp_path / "old", "runtime", old)
    write(tmp_path / "new", "runtime", new, **{"date": "2026-11-22", **new_env})
    return cmp.compare(load_all(str(tmp_path / "old")), load_all(str(tmp_path / "new")))


def _verdicts(result) -> dict[tuple[str, str], str]:
    return {(r.case, r.impl): r.verdict for r in result.rows}


# ------------------------------------------------------------------ Median and the file format
def test_median_keeps_the_range_of_its_samples():
    m = median([3.0, 1.0, 2.0, 10.0, 2.5])
    assert (float(m), m.lo, m.hi, m.n) == (2.5, 1.0, 10.0, 5)
    assert type(m * 2) is float  # arithmetic drops the range rather than keep a wrong one
    gbs = m.map(lambda us: 100 / us)  # decreasing: the range turns round
    assert (float(gbs), gbs.lo, gbs.hi) == (40.0, 10.0, 100.0)
    assert pickle.loads(pickle.dumps(m)).hi == 10.0
    assert json.loads(json.dumps({"us": m})) == {"us": 2.5}
    with pytest.raises(ValueError, match="at least one"):
        median([])


def test_result_files_store_the_spread_next_to_the_median(tmp_path):
    path = write(tmp_path, "runtime", {"l": (LAUNCH, {"ember": {"us": measured(4.0)}})})
    data = json.load(open(path))
    assert data["cases"]["launch"]["results"]["ember"] == {"us": 4.0}
    assert data["cases"]["launch"]["spread"]["ember"]["us"] == {"min": 3.96, "max": 4.04, "n": 7}
    value = load(path).value("launch", "ember")
    assert (value.median, value.lo, value.hi, value.n) == (4.0, 3.96, 4.04, 7)
    assert value.noise() == pytest.approx(0.01)
    assert os.path.exists(path[:-5] + ".md")


def test_plain_floats_are_stored_without_a_spread(tmp_path):
    path = write(tmp_path, "runtime", {"l": (LAUNCH, {"ember": {"us": 4.0, "x_raw": 1.2}})})
    value = load(path).value("launch", "ember")
    assert value.median == 4.0 and not value.spread_known and value.noise() is None


# ------------------------------------------------------------------ matching
def test_every_case_and_implementation_on_both_sides_gets_a_row(tmp_path):
    old = {
        "l": (LAUNCH, {"ember": {"us": measured(4.0)}, "raw": {"us": measured(3.0)}}),
        "c": (COPY, {"ember": {"GB/s": measured(4000)}, "torch": {"GB/s": measured(4100)}}),
        "gone": (case("gone"), {"ember": {"us": measured(1.0)}}),
    }
    new = {
        "l": (LAUNCH, {"ember": {"us": measured(4.0)}, "cupy": {"us": measured(3.5)}}),
        "c": (COPY, {"ember": {"GB/s": measured(4000)}, "torch": {"GB/s": measured(4100)}}),
        "added": (case("added"), {"ember": {"us": measured(1.0)}}),
    }
    result = _pair(tmp_path, old, new)
    assert [(r.case, r.impl) for r in result.rows] == [
        ("launch", "ember"),
        ("copy", "ember"),
        ("copy", "torch"),
    ]
    row = result.rows[0]
    assert (row.old.median, row.new.median, row.ratio) == (4.0, 4.0, 1.0)
    missing = "\n".join(result.missing)
    for text in ("launch cupy: only in NEW", "launch raw: only in OLD", "added: only in NEW"):
        assert text in missing
    assert "gone: only in OLD" in missing


def test_areas_on_one_side_only_are_listed(tmp_path):
    (tmp_path / "old").mkdir()
    write(tmp_path / "old", "runtime", {"l": (LAUNCH, {"ember": {"us": measured(4.0)}})})
    write(tmp_path / "old", "sync", {"l": (LAUNCH, {"ember": {"us": measured(4.0)}})})
    new = write(tmp_path, "runtime", {"l": (LAUNCH, {"ember": {"us": measured(4.0)}})})
    result = cmp.compare(load_all(str(tmp_path / "old")), load_all(new))
    assert len(result.rows) == 1
    assert result.missing == ["nvidia-h200: area(s) only in OLD: sync"]


def test_a_directory_gives_the_newest_run_of_each_area(tmp_path):
    write(tmp_path, "runtime", {"l": (LAUNCH, {"ember": {"us": measured(9.0)}})})
    write(tmp_path, "runtime", {"l": (LAUNCH, {"ember": {"us": measured(4.0)}})}, date="2026-12-01")
    result = cmp.compare(load_all(str(tmp_path)), load_all(str(tmp_path)))
    assert [r.old.median for r in result.rows] == [4.0]


def test_a_changed_metric_is_not_compared(tmp_path):
    old = {"l": (LAUNCH, {"ember": {"us": measured(4.0)}})}
    new = {"l": (case("launch", "ms"), {"ember": {"ms": measured(0.004)}})}
    result = _pair(tmp_path, old, new)
    assert not result.rows and "metric changed (us -> ms)" in result.missing[0]


# ------------------------------------------------------------------ noise marks
def test_marks_only_changes_beyond_the_range_of_the_repeats(tmp_path):
    old = {
        "l": (LAUNCH, {
            "ember": {"us": measured(4.0)},  # -> 3.0: faster, ranges apart
            "raw": {"us": measured(3.0)},  # -> 3.03: ranges overlap
            "cupy": {"us": measured(3.0, noise=0.2)},  # -> 3.6: inside the old noise
            "torch": {"us": measured(5.0)},  # -> 6.0: slower
        }),
        "c": (COPY, {
            "ember": {"GB/s": measured(4000)},  # -> 3000 GB/s: worse (higher is better)
            "torch": {"GB/s": measured(4000)},  # -> 5000 GB/s: better
        }),
    }  # fmt: skip
    new = {
        "l": (LAUNCH, {
            "ember": {"us": measured(3.0)}, "raw": {"us": measured(3.03)},
            "cupy": {"us": measured(3.6)}, "torch": {"us": measured(6.0)},
        }),
        "c": (COPY, {"ember": {"GB/s": measured(3000)}, "torch": {"GB/s": measured(5000)}}),
    }  # fmt: skip
    verdicts = _verdicts(_pair(tmp_path, old, new))
    assert verdicts == {
        ("launch", "ember"): cmp.BETTER,
        ("launch", "raw"): cmp.NOISE,
        ("launch", "cupy"): cmp.NOISE,
        ("launch", "torch"): cmp.WORSE,
        ("copy", "ember"): cmp.WORSE,
        ("copy", "torch"): cmp.BETTER,
    }


def test_old_files_without_a_spread_say_the_noise_is_unknown(tmp_path):
    (tmp_path / "old").mkdir()
    old = write(tmp_path / "old", "runtime", {"l": (LAUNCH, {"ember": {"us": 4.0}})})
    strip_spread(old)
    new = write(tmp_path, "runtime", {"l": (LAUNCH, {"ember": {"us": measured(2.0)}})})
    result = cmp.compare(load_all(old), load_all(new))
    row = result.rows[0]
    assert row.ratio == 0.5 and row.verdict == cmp.UNKNOWN
    text = cmp.markdown(result)
    assert (
        "| launch | ember | us/launch | 4.00 | 2.00 | 0.500 | ? / ±1.0% | noise unknown |" in text
    )


def test_errors_are_rows_marked_error(tmp_path):
    old = {"l": (LAUNCH, {"numba-cuda": {"error": "AttributeError: row_stack"}})}
    new = {"l": (LAUNCH, {"numba-cuda": {"us": measured(4.0)}})}
    row = _pair(tmp_path, old, new).rows[0]
    assert row.verdict == cmp.ERROR and row.old.error == "AttributeError: row_stack"


def test_the_committed_results_read_and_compare_with_themselves():
    runs = load_all(RESULTS)
    result = cmp.compare(runs, runs)
    assert result.rows and not result.missing
    assert all(r.ratio == 1.0 or r.verdict == cmp.ERROR for r in result.rows)
    assert {r.verdict for r in result.rows} <= {cmp.NOISE, cmp.UNKNOWN, cmp.ERROR}


# ------------------------------------------------------------------ devices, output, errors
def test_device_kinds_are_not_mixed_unless_asked(tmp_path):
    old = {"l": (LAUNCH, {"ember": {"us": measured(4.0)}})}
    result = _pair(tmp_path, old, old, device="NVIDIA H100 80GB HBM3")
    assert not result.rows
    assert result.notes == [
        "no OLD results for device kind nvidia-h100-80gb-hbm3: nothing to compare it with"
    ]
    assert "Nothing to compare" in cmp.markdown(result)
    both = cmp.compare(
        load_all(str(tmp_path / "old")), load_all(str(tmp_path / "new")), any_device=True
    )
    assert len(both.rows) == 1


def test_changes_only_leaves_out_the_rows_within_the_noise(tmp_path):
    old = {
        "l": (LAUNCH, {
            "ember": {"us": measured(4.0)}, "raw": {"us": measured(3.0)}, "cupy": {"us": 3.0},
        }),
    }  # fmt: skip
    new = {
        "l": (LAUNCH, {
            "ember": {"us": measured(5.0)}, "raw": {"us": measured(3.0)},
            "cupy": {"us": measured(3.0)},
        }),
    }  # fmt: skip
    text = cmp.markdown(_pair(tmp_path, old, new), changes_only=True)
    assert "| launch | ember |" in text and "**worse**" in text
    assert "| launch | raw |" not in text
    assert "| launch | cupy |" in text and "noise unknown" in text  # may be a change
    assert "0 better and 1 worse beyond the run-to-run noise, 1 within it, 1 with" in text
    same = cmp.markdown(_pair(tmp_path / "again", old, old), changes_only=True)
    assert "| launch | ember |" not in same


def test_command_line(tmp_path, capsys):
    path = write(tmp_path, "runtime", {"l": (LAUNCH, {"ember": {"us": measured(4.0)}})})
    out = tmp_path / "cmp.md"
    assert cmp.main([path, str(tmp_path), "--out", str(out)]) == 0
    assert "| launch | ember |" in capsys.readouterr().out
    assert "| launch | ember |" in out.read_text()
    assert cmp.main([path, str(tmp_path / "nowhere")]) == 2
    assert "no such result file or directory" in capsys.readouterr().err
    (tmp_path / "other.json").write_text('{"x": 1}')
    with pytest.raises(ResultsError, match="not a benchmark result file"):
        load(str(tmp_path / "other.json"))


def test_families_of_implementations():
    names = ["raw", "raw (pageable)", "ember.empty", "Pool.allocate", "cupy-expr", "numba-cuda"]
    assert [family(n) for n in names] == ["floor", "floor", "ember", "ember", "peer", "peer"]
    assert family("idle loop (no kernel)") == "baseline"
    assert isinstance(measured(1.0), Median)
