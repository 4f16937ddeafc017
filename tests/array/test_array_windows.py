"""Window functions (ember.array.windows) against NumPy: values, dtype, lengths, device=."""

from __future__ import annotations

import numpy as np
import pytest
from array_common import check

import ember


@pytest.mark.parametrize("name", ["hamming", "hanning", "bartlett", "blackman"])
def test_cosine_windows(backend, name):
    for m in (-3, 0, 1, 2, 7, 12, 6.5):
        check(getattr(ember, name)(m), getattr(np, name)(m))
    out = getattr(ember, name)(5, device=backend)
    assert out.backend is backend


def test_kaiser(backend):
    for m, beta in ((0, 5.0), (1, 3.0), (2, 0.0), (9, 5.0), (10, 14), (16, 8.6)):
        check(ember.kaiser(m, beta), np.kaiser(m, beta))
    assert ember.kaiser(4, 2.0, device=backend).backend is backend


def test_window_errors(backend):
    with pytest.raises(TypeError, match="ember.hanning: M must be a real number"):
        ember.hanning("5")
    with pytest.raises(TypeError, match="ember.kaiser: beta must be a real number"):
        ember.kaiser(5, 1j)
    with pytest.raises(TypeError, match="ember.bartlett: M must be a number"):
        ember.bartlett(ember.arange(3))
