"""User errors leave Ember with the user's frames only; EMBER_TRACEBACK=full and internal
errors keep every frame (ember/tracebacks.py).  No device: errors raised while typing."""

from __future__ import annotations

import os
import subprocess
import sys
import traceback

import numpy as np
import pytest

import ember
from ember import tracebacks
from ember.compiler import driver

EMBER_DIR = os.path.dirname(ember.__file__)


@ember.kernel
def strings(x):
    x[0] = "text"


@ember.kernel
def fine(x):
    x[0] = 1


def _files(exc: BaseException) -> list[str]:
    return [f.filename for f in traceback.extract_tb(exc.__traceback__)]


def _ember_frames(exc: BaseException) -> list[str]:
    return [f for f in _files(exc) if f.startswith(EMBER_DIR) or f.startswith("<ember")]


def _inspect(kernel):
    return kernel.inspect(np.zeros(4, np.float32), dialect="opencl")


def test_user_errors_show_only_user_frames():
    with pytest.raises(ember.KernelSyntaxError) as info:
        _inspect(strings)
    assert _ember_frames(info.value) == []
    assert _files(info.value)[-1] == __file__  # this file's call is the last frame
    assert tracebacks.NOTE in info.value.__notes__


def test_full_tracebacks_on_request():
    with ember.config.override(traceback="full"):
        with pytest.raises(ember.KernelSyntaxError) as info:
            _inspect(strings)
    assert len(_ember_frames(info.value)) >= 5
    assert tracebacks.NOTE not in getattr(info.value, "__notes__", ())


def test_internal_errors_keep_every_frame(monkeypatch):
    def broken(*args, **kwargs):
        raise ember.InternalError("generated code does not compile")

    monkeypatch.setattr(driver, "source_of", broken)
    with pytest.raises(ember.InternalError) as info:
        _inspect(fine)
    assert len(_ember_frames(info.value)) >= 2


def test_bugs_keep_every_frame():
    """An exception Ember did not raise on purpose (here a TypeError from iterating None
    inside Ember's code) is a bug: not filtered."""
    try:
        tracebacks._chain(None)
    except TypeError as exc:
        assert not tracebacks.is_user_error(exc)
        tracebacks.hide_internal_frames(exc)
        assert _ember_frames(exc)
    else:
        pytest.fail("expected a TypeError")


def test_deliberate_type_errors_are_user_errors():
    with pytest.raises(TypeError, match="out= must be an ember array") as info:
        ember.sin(np.zeros(3, np.float32), out=np.zeros(3, np.float32))
    assert _ember_frames(info.value) == []


def test_interrupts_pass_untouched():
    assert not tracebacks.is_user_error(KeyboardInterrupt())


SCRIPT = """
import ember

@ember.kernel
def bad(x):
    x[0] = "text" + 1

def main():
    bad.inspect(__import__("numpy").zeros(2), dialect="opencl")

main()
"""


@pytest.mark.parametrize("mode", ["filtered", "full"])
def test_printed_traceback(tmp_path, mode):
    script = tmp_path / "user_script.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, EMBER_TRACEBACK=mode)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    lines = [ln for ln in out.stderr.splitlines() if ln.lstrip().startswith('File "')]
    assert "KernelSyntaxError: strings are not supported" in out.stderr
    ours = [ln for ln in lines if EMBER_DIR in ln]
    if mode == "filtered":
        assert len(lines) == 2 and not ours, out.stderr  # <module> and main(), nothing else
        assert "EMBER_TRACEBACK=full" in out.stderr
    else:
        assert len(ours) >= 5, out.stderr
