"""Settings parsing and dtype normalization (no device)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember import config


def test_bad_environment_value_warns_and_uses_default():
    env = dict(os.environ, EMBER_BOUNDSCHECK="maybe")
    code = "import ember; print(ember.config.settings.boundscheck)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "False"
    assert "ignoring EMBER_BOUNDSCHECK='maybe'" in out.stderr


def test_override_restores():
    before = config.settings.boundscheck
    with config.override(boundscheck=not before):
        assert config.settings.boundscheck is (not before)
    assert config.settings.boundscheck is before


def test_override_rejects_unknown_names():
    with pytest.raises(TypeError, match="unknown Ember setting"):
        with config.override(no_such_thing=1):
            pass


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("float32", ember.float32), ("f8", ember.float64), (np.int16, ember.int16),
        (np.dtype("uint8"), ember.uint8), (bool, ember.bool_), (float, ember.float64),
        (ember.int32, ember.int32), ("half", ember.float16), (complex, ember.complex128),
        ("c8", ember.complex64), (np.complex64, ember.complex64), ("complex128", ember.complex128),
    ],
)  # fmt: skip
def test_dtype_normalization(spec, expected):
    assert ember.dtype(spec) is expected


def test_unsupported_dtype_message():
    with pytest.raises(TypeError, match="does not support dtype 'bytes32'.*complex128"):
        ember.dtype(np.dtype("S4"))


def test_dtype_numpy_and_call():
    assert ember.float16.numpy == np.float16
    assert ember.float32(2) == np.float32(2.0)
    assert repr(ember.uint64) == "ember.uint64"
