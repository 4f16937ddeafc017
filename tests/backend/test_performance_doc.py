"""Every ``python`` code block of ``docs/performance.md`` runs, in order, as one program on
each available backend (the guide's examples assert what they claim)."""

from __future__ import annotations

import pathlib
import re
import runpy
import warnings

import ember

DOC = pathlib.Path(__file__).parents[2] / "docs" / "performance.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def blocks() -> list[tuple[int, str]]:
    text = DOC.read_text()
    return [(text[: m.start()].count("\n") + 2, m.group(1)) for m in BLOCK.finditer(text)]


def test_the_guide_has_examples():
    assert len(blocks()) >= 10


def test_performance_guide_examples_run(backend, tmp_path, capsys):
    # One file whose lines are those of the guide (the prose blanked), so that a failure
    # points at the guide's own line numbers and kernels can read their source.
    lines = [""] * (DOC.read_text().count("\n") + 1)
    for start, code in blocks():
        for k, line in enumerate(code.splitlines()):
            lines[start - 1 + k] = line
    path = tmp_path / "performance_md.py"
    path.write_text("\n".join(lines) + "\n")
    with warnings.catch_warnings(), ember.config.override(boundscheck=False):
        warnings.simplefilter("ignore", ember.EmberPerformanceWarning)
        runpy.run_path(str(path), run_name="performance_md")
    out = capsys.readouterr().out
    assert "is out of bounds for axis 0 of " in out and "with size 1000" in out
