"""docs/fft.md runs: every ```python block, as written, as its own program, on the default
backend (the worked examples check their own answers)."""

from __future__ import annotations

import pathlib
import re
import runpy
import warnings

import pytest

import ember
from ember.runtime import backend as registry

DOC = pathlib.Path(__file__).parents[2] / "docs" / "fft.md"
BLOCK = re.compile(r"^```python[^\n]*\n(.*?)^```", re.S | re.M)


def _blocks() -> list:
    text = DOC.read_text()
    return [
        pytest.param(text[: m.start()].count("\n") + 2, m.group(1), id=f"fft.md:{i}")
        for i, m in enumerate(BLOCK.finditer(text))
    ]


def test_the_doc_has_worked_examples():
    assert len(_blocks()) >= 3


@pytest.mark.parametrize("line, code", _blocks())
def test_doc_block_runs(line, code, tmp_path, capsys):
    try:
        registry.get()
    except Exception as exc:
        pytest.skip(f"no default backend: {str(exc).splitlines()[0]}")
    path = tmp_path / "fft_md.py"
    path.write_text("\n" * (line - 1) + code)  # errors point at the doc's lines
    with warnings.catch_warnings():
        warnings.simplefilter("error", ember.ScalarIndexingWarning)  # no slow paths shown
        warnings.simplefilter("ignore", ember.EmberPerformanceWarning)
        runpy.run_path(str(path), run_name="__main__")
    assert capsys.readouterr().out  # every example shows its result
