"""Errors at launch and at sync leave Ember with the user's frames only (ember/tracebacks.py)."""

from __future__ import annotations

import os
import traceback
import warnings

import pytest

import ember

EMBER_DIR = os.path.dirname(ember.__file__)


@ember.kernel
def two(x, y):
    x[0] = y[0]


@ember.kernel(boundscheck=True)
def out_of_bounds(x):
    x[ember.global_id() + 10] = 1


def _ember_frames(exc: BaseException) -> list[str]:
    files = [f.filename for f in traceback.extract_tb(exc.__traceback__)]
    return [f for f in files if f.startswith(EMBER_DIR) or f.startswith("<ember")]


def test_launch_errors(backend):
    x = ember.zeros(4, ember.float32)
    launches = (
        lambda: two[1, 1](x),  # wrong argument count
        lambda: two.launch(1)(x, [1.0]),  # a list
        lambda: two[1, 1, 2, 3, 4](x, x),  # a bad configuration
        lambda: two(x, x),  # called like a function
    )
    for launch in launches:
        with pytest.raises((ember.ArgumentError, ember.LaunchError)) as info:
            launch()
        assert _ember_frames(info.value) == [], info.value


def test_device_errors_at_sync(backend):
    x = ember.zeros(4, ember.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # checks asked for are no slow path to report
        out_of_bounds.launch(4)(x)
    with pytest.raises(ember.KernelError) as info:
        ember.synchronize()
    assert _ember_frames(info.value) == []
