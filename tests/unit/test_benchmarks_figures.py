"""The README's table of figures is made from the committed results, not typed."""

from __future__ import annotations

import pytest
from benchmark_fixtures import RESULTS, case, measured, write
from benchmarks import figures
from benchmarks.store import ResultsError, load_all


def test_the_readme_table_is_the_one_the_committed_results_give():
    diff = figures.check(figures.README, RESULTS)
    assert not diff, "run python -m benchmarks figures --write\n" + "\n".join(diff)


@pytest.fixture
def results(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    copy = case("array_copy", "gbs", "GB/s", better="higher")
    write(d, "arrays", {"c": (copy, {"ember": {"gbs": measured(4238.4)}, "cupy": {"gbs": 1692}})})
    launch = case("launch_3args")
    write(d, "runtime", {"k": (launch, {"ember.kernel": {"us": 4.97}, "raw": {"us": 4.111}})})
    write(  # another device, fewer lines filled: not the one shown
        d,
        "arrays",
        {"c": (copy, {"ember": {"gbs": 3000.0}})},
        device="NVIDIA H100",
        date="2027-01-01",
    )
    return d


def test_lines_come_from_the_cases_and_implementations_named(results):
    text = figures.table(load_all(str(results)))
    lines = text.splitlines()
    assert lines[0].startswith("Measured on an NVIDIA H200 (2026-11-21;")
    assert "| copy 1 GiB (GB/s) | 4238 |  | 1692 |  |" in lines
    assert "| launch, 3-arg `@ember.kernel` (µs) | 4.97 | 4.11 |  |  |" in lines
    assert "| `import` (s) |  |  |  |  |" in lines  # no startup results: blank, not made up
    assert len(lines) == 5 + len(figures.ROWS)  # two lines of text, a blank, the header


def test_write_and_check_on_a_readme(results, tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\nintro\n\n{figures.BEGIN}\nold table\n{figures.END}\n\nmore\n")
    args = ["--results", str(results), "--readme", str(readme)]
    assert figures.main([*args, "--check"]) == 1
    assert "-old table" in capsys.readouterr().out
    assert figures.main([*args, "--write"]) == 0
    text = readme.read_text()
    assert text.startswith("# Title\n\nintro\n\n" + figures.BEGIN + "\nMeasured on")
    assert text.endswith(figures.END + "\n\nmore\n") and "old table" not in text
    assert figures.main([*args, "--check"]) == 0


def test_a_readme_without_the_markers_is_an_error(results, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# no table here\n")
    with pytest.raises(ResultsError, match="no figures block"):
        figures.check(str(readme), str(results))
