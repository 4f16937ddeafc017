"""NumPy's window functions: ``hamming``, ``hanning``, ``bartlett``, ``blackman`` and
``kaiser``, made on the device.

Each is NumPy's formula composed from Ember's array operations: the sample positions come
from :func:`ember.arange` (``1 - M, 3 - M, ..., M - 1`` for the symmetric cosine windows,
``0 .. M - 1`` for Kaiser's) on the requested device, and the cosines, square roots and
``ember.i0`` run there as elementwise kernels.  Only the length ``M`` and ``beta`` live on
the host; Kaiser's normalizer ``i0(beta)`` is one host scalar.  Results are float64, as
NumPy's (``M`` is taken as a float: a length below 1 gives an empty array, 1 gives
``[1.0]``), on ``device=`` (default: the current backend), like Ember's creation functions.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

import ember
from ember import dtypes

F64 = dtypes.float64


def _length(M, what: str) -> float:  # noqa: N803 - NumPy's parameter name
    """``M`` as a float (NumPy puts it in a float64 array), refusing what is not a number."""
    if isinstance(M, ember.ndarray):
        if M.ndim:
            raise TypeError(f"ember.{what}: M must be a number (the window length), not an "
                            f"array of shape {M.shape}")  # fmt: skip
        M = M.item()
    if isinstance(M, complex | np.complexfloating) or not isinstance(M, numbers.Real):
        raise TypeError(f"ember.{what}: M must be a real number (the window length), got "
                        f"{M!r}")  # fmt: skip
    return float(M)


def _positions(M, what: str, device):  # noqa: N803
    """``(M, n)``: ``n = arange(1 - M, M, 2)`` on ``device``; None for ``M < 1`` or 1."""
    M = _length(M, what)  # noqa: N806
    if M < 1 or M == 1 or math.isnan(M):
        return M, None
    return M, ember.arange(1 - M, M, 2, dtype=F64, device=device)


def _trivial(M: float, device):  # noqa: N803
    """The window of a length below 1 (empty) or of 1 (``[1.0]``)."""
    return ember.ones(1 if M == 1 else 0, F64, device=device)


def _cosine_sum(M, coefficients, what: str, device):  # noqa: N803
    """``sum(c_k * cos(k * pi * n / (M - 1)))`` over NumPy's symmetric positions ``n``."""
    M, n = _positions(M, what, device)  # noqa: N806
    if n is None:
        return _trivial(M, device)
    phase = n * math.pi / (M - 1)  # NumPy's rounding: pi * n, then the division
    out = ember.cos(phase) * coefficients[1] + coefficients[0]
    if len(coefficients) > 2:
        out = out + ember.cos(phase * 2.0) * coefficients[2]
    return out


def hanning(M, *, device=None):  # noqa: N803
    """The Hann window of ``M`` points, ``0.5 + 0.5 cos(pi n / (M - 1))`` over
    ``n = 1 - M, 3 - M, ..., M - 1`` (NumPy's ``hanning``): float64, empty for ``M < 1``,
    ``[1.0]`` for ``M == 1``; made on ``device`` (default: the current backend)."""
    return _cosine_sum(M, (0.5, 0.5), "hanning", device)


def hamming(M, *, device=None):  # noqa: N803
    """The Hamming window of ``M`` points, ``0.54 + 0.46 cos(pi n / (M - 1))`` (NumPy's
    ``hamming``; float64 on ``device``)."""
    return _cosine_sum(M, (0.54, 0.46), "hamming", device)


def blackman(M, *, device=None):  # noqa: N803
    """The Blackman window of ``M`` points, ``0.42 + 0.5 cos(pi n / (M - 1)) + 0.08
    cos(2 pi n / (M - 1))`` (NumPy's ``blackman``; float64 on ``device``)."""
    return _cosine_sum(M, (0.42, 0.5, 0.08), "blackman", device)


def bartlett(M, *, device=None):  # noqa: N803
    """The Bartlett (triangular) window of ``M`` points, ``1 - |n| / (M - 1)`` (NumPy's
    ``bartlett``, whose ends are zero; float64 on ``device``)."""
    M, n = _positions(M, "bartlett", device)  # noqa: N806
    if n is None:
        return _trivial(M, device)
    return 1.0 - ember.abs(n) / (M - 1)


def kaiser(M, beta, *, device=None):  # noqa: N803
    """The Kaiser window of ``M`` points and shape ``beta``, ``i0(beta sqrt(1 - ((n -
    alpha) / alpha)**2)) / i0(beta)`` over ``n = 0 .. M - 1`` with ``alpha = (M - 1) / 2``
    (NumPy's ``kaiser``; float64 on ``device``, ``[1.0]`` for ``M == 1``, empty for
    ``M < 1``).  ``ember.i0`` runs on the device; ``i0(beta)`` is one host scalar."""
    M = _length(M, "kaiser")  # noqa: N806
    if isinstance(beta, ember.ndarray):
        beta = beta.item()
    if isinstance(beta, complex | np.complexfloating) or not isinstance(beta, numbers.Real):
        raise TypeError(f"ember.kaiser: beta must be a real number, got {beta!r}")
    beta = float(beta)
    if M == 1 or not M > 1:
        return _trivial(M, device)
    alpha = (M - 1) / 2.0
    t = (ember.arange(0, M, dtype=F64, device=device) - alpha) / alpha  # exactly -1 at n=0
    return ember.i0(ember.sqrt(1.0 - t * t) * beta) / float(np.i0(beta))


__all__ = ["hamming", "hanning", "bartlett", "blackman", "kaiser"]
