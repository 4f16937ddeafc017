"""Ember in Dask's dispatch tables (what ``dask/array/backends.py`` does for CuPy).

Most of Dask's chunk functions are NumPy functions that NumPy hands to Ember
(``__array_function__``/``__array_ufunc__``).  The tables below are Dask's own hooks
where it does not call NumPy by name, or where NumPy's answer would be a NumPy array
(an element count made with ``numpy.full`` would stop ``mean`` on the host).
"""

from __future__ import annotations

import math
from typing import Any

import ember
from ember.array.ndarray import ndarray

_done = False


def register() -> None:
    """Register ember arrays with Dask (idempotent; ``import ember.dask`` calls it)."""
    global _done
    if _done:
        return
    from dask.array import dispatch as d

    d.concatenate_lookup.register(ndarray, _concatenate)
    d.take_lookup.register(ndarray, _take)
    d.tensordot_lookup.register(ndarray, ember.tensordot)
    d.einsum_lookup.register(ndarray, _einsum)
    d.empty_lookup.register(ndarray, _empty)
    d.numel_lookup.register(ndarray, numel)
    d.nannumel_lookup.register(ndarray, nannumel)
    d.percentile_lookup.register(ndarray, _percentile)
    d.to_numpy_dispatch.register(ndarray, lambda data, **kwargs: data.to_numpy())
    _register_backend()
    _done = True


def _concatenate(arrays, axis: int = 0):
    return ember.concatenate(list(arrays), axis=axis)


def _take(a, indices, axis: int = 0):
    if not isinstance(indices, ndarray):  # Dask's indices are NumPy: a small upload
        indices = ember.asarray(indices, device=a.device)
    return ember.take(a, indices, axis=axis)


def _einsum(*operands, dtype=None, optimize=False, casting="safe", **kwargs):
    """``ember.einsum`` with Dask's keywords: ``dtype`` casts the result, ``optimize`` and
    ``casting`` (NumPy's contraction order and input casting) do not apply."""
    out = ember.einsum(*operands, **kwargs)
    return out if dtype is None else out.astype(dtype)


def _empty(shape, dtype=None, **kwargs):
    return ember.empty(shape, dtype=dtype, device=kwargs.get("device"))


def _axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axis = axis if isinstance(axis, tuple | list) else (axis,)
    return tuple(a % ndim for a in axis)


def numel(x: ndarray, axis=None, keepdims: bool = False, dtype=None, **kwargs) -> Any:
    """The number of elements of ``x`` along ``axis``, as Dask's ``mean``/``var`` chunk
    functions want it: a device array (of the reduced shape) when ``keepdims`` or an
    axis is given, a NumPy scalar for a full reduction without ``keepdims``."""
    import numpy as np

    dt = np.dtype(np.float64 if dtype is None else dtype)
    axes = _axes(axis, x.ndim)
    count = math.prod(x.shape[a] for a in axes)
    if axis is None and not keepdims:
        return dt.type(count)
    shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape) if keepdims or d not in axes)
    return ember.full(shape, count, dtype=dt, device=x.device)


def nannumel(x: ndarray, axis=None, keepdims: bool = False, dtype=None, **kwargs) -> ndarray:
    """The number of non-NaN elements of ``x`` along ``axis`` (on the device)."""
    return ember.sum(~ember.isnan(x), axis=axis, keepdims=keepdims, dtype=dtype)


def _percentile(a: ndarray, q, method: str = "linear"):
    """Percentiles of one chunk, computed on the host as NumPy does.  Dask merges the
    chunks' percentiles with NumPy code on the host (``merge_percentiles``), so they stay
    NumPy arrays: ``da.percentile`` of ember chunks gives a NumPy result."""
    import numpy as np

    return np.percentile(a.to_numpy(), ember.asnumpy(q), method=method), a.size


def _with_ember_meta(function: str, /, *args, meta=None, **kwargs):
    """``dask.array.<function>`` with an ember ``meta``: Dask makes each chunk with NumPy's
    ``*_like`` functions on the meta, which NumPy hands to Ember's (CuPy's entry point
    does the same).  ``function`` is positional-only: Dask's ``*_like`` functions pass the
    graph's ``name=`` through."""
    import dask
    import dask.array as da

    dtype = kwargs.get("dtype")
    meta = (
        ember.empty((), dtype=dtype if dtype is not None else ember.float64)
        if meta is None
        else meta
    )
    key = "like" if function == "arange" else "meta"  # (Dask's arange spells it like=)
    with dask.config.set({"array.backend": "numpy"}):
        return getattr(da, function)(*args, **{key: meta}, **kwargs)


def _register_backend() -> None:
    """The ``"ember"`` array backend: ``dask.config.set({"array.backend": "ember"})`` makes
    ``da.ones``, ``da.zeros``, ``da.empty``, ``da.full``, ``da.arange`` build ember chunks."""
    import functools

    from dask.array.backends import ArrayBackendEntrypoint, array_creation_dispatch

    class EmberBackendEntrypoint(ArrayBackendEntrypoint):
        @property
        def RandomState(self):  # noqa: N802 - Dask's name
            raise NotImplementedError(
                "the ember array backend has no legacy RandomState: use ember.dask.default_rng"
            )

        ones = staticmethod(functools.partial(_with_ember_meta, "ones"))
        zeros = staticmethod(functools.partial(_with_ember_meta, "zeros"))
        empty = staticmethod(functools.partial(_with_ember_meta, "empty"))
        full = staticmethod(functools.partial(_with_ember_meta, "full"))
        arange = staticmethod(functools.partial(_with_ember_meta, "arange"))

    if "ember" not in array_creation_dispatch._lookup:
        array_creation_dispatch.register_backend("ember", EmberBackendEntrypoint())


def entrypoint():
    """Dask's ``dask.array.backends`` entry point (pyproject.toml): registers Ember with
    Dask and returns the ``"ember"`` array backend."""
    from dask.array.backends import array_creation_dispatch

    register()
    return array_creation_dispatch._lookup["ember"]
