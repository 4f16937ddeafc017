"""Run-time checks the user asked for (boundscheck=True) are no slow path to announce at the
first launch; kernel.report() still lists them."""

from __future__ import annotations

import warnings

import ember


@ember.kernel(boundscheck=True)
def unguarded(x, y):
    i = ember.global_id()
    y[ember.int32(x[i])] = x[i]


@ember.kernel(boundscheck=True)
def unguarded_printing(x):
    i = ember.global_id()
    x[i] = 1
    print(i)


N = 64


def _first_launch(kernel, *args) -> list:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel[1, N](*args)  # a block a GPU runs at full occupancy: no launch-shape advice
    return [w for w in caught if w.category is ember.EmberPerformanceWarning]


def test_requested_checks_are_not_announced(backend):
    x, y = ember.zeros(N, ember.float32), ember.zeros(N, ember.float32)
    assert _first_launch(ember.kernel(unguarded.py_func, boundscheck=True), x, y) == []
    kinds = {i.kind for i in unguarded.report(x, y)}
    assert kinds == {"bounds-check", "checked-conversion"}


def test_other_slow_paths_still_are(backend):
    [warning] = _first_launch(unguarded_printing, ember.zeros(N, ember.float32))
    text = str(warning.message)
    assert "pulls in 1 slow path" in text and "[print]" in text and "bounds" not in text
