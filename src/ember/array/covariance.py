"""Covariance and correlation: NumPy's ``cov`` and ``corrcoef`` on the device (the
centred rows' products through :func:`ember.matmul`, NumPy 2's weights, ``ddof`` and
dtype rules)."""

from __future__ import annotations

import warnings

import numpy as np

import ember
from ember import dtypes
from ember.array import launch, manipulation
from ember.array.creation import on_device as _device
from ember.array.ndarray import ndarray
from ember.array.stats import _on, average

F64 = dtypes.float64


def _rows(m, rowvar: bool, dt, what: str) -> ndarray:
    m = _device(m, what)
    if m.ndim > 2:
        raise ValueError(f"ember.{what}: m has more than 2 dimensions")
    x = manipulation.reshape(manipulation.astype(m, dt), (1, -1) if m.ndim < 2 else m.shape)
    if not rowvar and m.ndim == 2:  # NumPy 2: a (1, n) matrix is n variables too
        x = manipulation.ascontiguousarray(manipulation.permute_dims(x, (1, 0)))
    return x


def _sample_weights(v, n: int, kind: str, be) -> ndarray:
    v = _on(v, be, "cov")
    if v.ndim > 1:
        raise RuntimeError(f"ember.cov: cannot handle multidimensional {kind}")
    if v.shape[0] != n:
        raise RuntimeError(f"ember.cov: incompatible numbers of samples and {kind}")
    if kind == "fweights" and v.dtype.kind not in "iub":
        if v.dtype.is_complex or not bool(ember.all(v == ember.floor(v))):
            raise TypeError("ember.cov: fweights must be integer")
    v = manipulation.astype(v, F64, copy=False)
    if bool(ember.any(v < 0)):
        raise ValueError(f"ember.cov: {kind} cannot be negative")
    return v


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):  # fmt: skip
    """The covariance matrix of the variables in the rows of ``m`` (columns if
    ``rowvar=False``) and of ``y``, NumPy's ``cov``: centred on the (weighted) means, then
    one ``matmul`` on the device, divided by ``N - ddof`` (``fweights``: integer repeat
    counts, ``aweights``: observation weights, as NumPy's formulas).  Float64 unless
    ``dtype`` or complex/longer input says otherwise; one variable gives a 0-d array.
    Reads a few scalars back (weight checks, the weight sum)."""
    parts = [v for v in (m, y) if v is not None]
    for v in parts:
        _device(v, "cov")
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ember.cov: ddof must be integer")
    dt = dtypes.dtype(dtype if dtype is not None
                      else np.result_type(*(v.dtype.numpy for v in parts), np.float64))  # fmt: skip
    x = _rows(m, rowvar, dt, "cov")
    if x.shape[0] == 0:
        return ember.zeros((0, 0), F64, device=x.backend)
    if y is not None:
        x = ember.concatenate([x, _rows(y, rowvar, dt, "cov")], axis=0)
    ddof = (0 if bias else 1) if ddof is None else int(ddof)
    n, be = x.shape[1], x.backend
    f = None if fweights is None else _sample_weights(fweights, n, "fweights", be)
    aw = None if aweights is None else _sample_weights(aweights, n, "aweights", be)
    w = f if aw is None else (aw if f is None else f * aw)
    if w is None:
        avg, fact = ember.mean(x, axis=1), float(n - ddof)
    else:
        avg, wsum = average(x, axis=1, weights=w, returned=True)
        wsum = float(np.real(launch.read(wsum, (0,))))
        fact = wsum - ddof
        if ddof and aw is not None:
            fact = wsum - ddof * float(ember.sum(w * aw)) / wsum
        elif not ddof:
            fact = wsum
    if fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    x = x - manipulation.reshape(avg, (-1, 1))
    xt = manipulation.permute_dims(x if w is None else x * w, (1, 0))
    c = ember.matmul(x, ember.conj(xt) if dt.is_complex else xt)
    with np.errstate(divide="ignore"):
        c = c * float(np.true_divide(1, fact))
    return ember.squeeze(c)


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """Pearson correlation coefficients (NumPy's ``corrcoef``): :func:`cov` divided by the
    outer product of the standard deviations, real parts clipped to ``[-1, 1]``.  NumPy's
    deprecated ``bias``/``ddof`` arguments are not accepted."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c
    d = manipulation.reshape(c, (-1,))[:: c.shape[0] + 1]
    std = ember.sqrt(ember.real(d) if c.dtype.is_complex else d)
    c = c / manipulation.reshape(std, (-1, 1)) / manipulation.reshape(std, (1, -1))
    if c.dtype.is_complex:
        return ember.clip(ember.real(c), -1, 1) + 1j * ember.clip(ember.imag(c), -1, 1)
    return ember.clip(c, -1, 1)


__all__ = ["cov", "corrcoef"]
