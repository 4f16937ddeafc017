"""Stale code in notebooks: a redefined device function or a rebound constant recompiles
the kernel at its next launch, with a note naming the name (ember/compiler/freshness.py)."""

from __future__ import annotations

import linecache
import subprocess
import sys
import textwrap
import types
import warnings

import numpy as np
import pytest

import ember
from ember.cache import lookup
from ember.compiler import freshness

CELL1 = """
import ember

N = 3

def helper(v):
    return v + N

@ember.kernel
def bump(x):
    i = ember.global_id()
    if i < x.shape[0]:
        x[i] = helper(x[i])
"""
REDEFINED = """
def helper(v):
    return v * 2
"""


class Notebook:
    """Cells run like IPython runs them: source kept in linecache under a cell file name,
    one namespace, and the pre_run_cell event (freshness.new_cell) before each cell."""

    def __init__(self):
        self.ns: dict = {"__name__": "__main__"}
        self.count = 0

    def run(self, source: str) -> None:
        self.count += 1
        name = f"<ember-test-cell-{id(self)}-{self.count}>"
        source = textwrap.dedent(source)
        linecache.cache[name] = (len(source), None, source.splitlines(True), name)
        freshness.new_cell()
        exec(compile(source, name, "exec"), self.ns)


@pytest.fixture
def notebook(monkeypatch):
    monkeypatch.setattr(freshness, "_watching", False)  # restored after: other tests unwatched
    return Notebook()


def _launch(nb: Notebook, x) -> list[str]:
    """Launch ``bump`` on ``x``; the RecompileWarning messages it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nb.ns["bump"].launch(x.shape[0])(x)
    return [str(w.message) for w in caught if issubclass(w.category, ember.RecompileWarning)]


def test_redefinitions_recompile_with_a_note(backend, notebook):
    notebook.run(CELL1)
    x = ember.zeros(4, ember.int32)
    assert _launch(notebook, x) == []
    np.testing.assert_array_equal(x.to_numpy(), [3] * 4)

    notebook.run("N = 10")
    notes = _launch(notebook, x)
    assert len(notes) == 1 and "kernel 'bump' recompiles: 'N' changed (3 -> 10)" in notes[0]
    np.testing.assert_array_equal(x.to_numpy(), [13] * 4)

    notebook.run(REDEFINED)
    notes = _launch(notebook, x)
    assert len(notes) == 1 and "'helper' was redefined" in notes[0]
    np.testing.assert_array_equal(x.to_numpy(), [26] * 4)


def test_unchanged_cells_cost_no_recompile(backend, notebook):
    notebook.run(CELL1)
    x = ember.zeros(4, ember.int32)
    _launch(notebook, x)
    before = lookup.stats.compiles
    notebook.run("y = 1")  # a cell that changes nothing the kernel reads
    notebook.run(REDEFINED.replace("v * 2", "v + N"))  # the same helper, defined again
    assert _launch(notebook, x) == [] and _launch(notebook, x) == []
    assert lookup.stats.compiles == before
    assert notebook.ns["bump"]._last.backend is not None  # the inline cache is back


def test_ipython_event_registration(monkeypatch):
    registered = []
    shell = types.SimpleNamespace(
        events=types.SimpleNamespace(register=lambda *a: registered.append(a))
    )
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: shell
    monkeypatch.setitem(sys.modules, "IPython", fake)
    monkeypatch.setattr(freshness, "_watching", False)
    freshness.watch_ipython()
    freshness.watch_ipython()
    assert registered == [("pre_run_cell", freshness.new_cell)]


def test_scripts_are_not_watched(monkeypatch):
    monkeypatch.setattr(freshness, "_watching", False)
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    freshness.watch_ipython()
    assert not freshness.watching()


IPYTHON_SESSION = """
import warnings
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
cells = [{cell1!r}, "import warnings; x = ember.zeros(2, ember.int32); bump.launch(2)(x)", "N = 5",
         "with warnings.catch_warnings(record=True) as w:\\n"
         "    warnings.simplefilter('always'); bump.launch(2)(x)",
         "print('NOTES', [str(m.message) for m in w]); print('X', x.to_numpy().tolist())"]
for cell in cells:
    shell.run_cell(cell).raise_error()
"""


def test_in_a_real_ipython_shell(backend):
    pytest.importorskip("IPython")
    code = IPYTHON_SESSION.format(cell1=CELL1)
    env_code = f"import os; os.environ['EMBER_BACKEND'] = {backend.name!r}\n" + code
    out = subprocess.run(
        [sys.executable, "-c", env_code], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert "'N' changed (3 -> 5)" in out.stdout and "X [8, 8]" in out.stdout, out.stdout
