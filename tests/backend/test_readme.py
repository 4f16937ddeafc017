"""README.md runs: every ```python block, as written, as its own program, on the default
backend.  A block that needs a CUDA device has the line ``<!-- readme-test: cuda -->`` right
above its fence (README.md, "Tests and benchmarks"): it is marked ``gpu`` (skipped without
a CUDA device, run on the GPU machine)."""

from __future__ import annotations

import pathlib
import re
import runpy
import warnings

import pytest

import ember
from ember.runtime import backend as registry

README = pathlib.Path(__file__).parents[2] / "README.md"
BLOCK = re.compile(r"^```python[^\n]*\n(.*?)^```", re.S | re.M)
CUDA_ONLY = "<!-- readme-test: cuda -->"


def blocks() -> list[tuple[int, str, bool]]:
    """(first code line, code, needs CUDA) of each python block."""
    text = README.read_text()
    out = []
    for m in BLOCK.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        out.append((text[: m.start()].count("\n") + 2, m.group(1), before == CUDA_ONLY))
    return out


def _params() -> list:
    return [
        pytest.param(line, code, marks=[pytest.mark.gpu] if cuda else [], id=f"README.md:{line}")
        for line, code, cuda in blocks()
    ]


def test_the_readme_has_examples():
    assert len(blocks()) >= 3


@pytest.mark.parametrize("line, code", _params())
def test_readme_block_runs(line, code, tmp_path):
    try:
        registry.get()
    except Exception as exc:
        pytest.skip(f"no default backend: {str(exc).splitlines()[0]}")
    # the block alone, at its README line numbers (errors point there; kernels read it)
    path = tmp_path / "README_md.py"
    path.write_text("\n" * (line - 1) + code)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ember.EmberPerformanceWarning)
        runpy.run_path(str(path), run_name="__main__")
