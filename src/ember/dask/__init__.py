"""Dask arrays of Ember chunks: work larger than one device, or one machine.

Dask schedules; Ember computes each chunk on the device.  Chunks are ember arrays, so
Dask's own algorithms (elementwise operations, tree reductions, rechunking, ``map_blocks``,
``blockwise``) run Ember's functions through NumPy's protocols (``numpy.sum(chunk)`` is
``ember.sum(chunk)``), and nothing leaves the device until ``compute()`` hands back the
result - an ember array - or :func:`to_host` asks for NumPy chunks::

    import dask.array as da
    import ember, ember.dask                 # registers Ember with Dask's dispatch

    x = ember.dask.default_rng(0).standard_normal((40_000, 40_000), chunks=(5_000, 5_000),
                                               dtype=ember.float32)  # drawn on the device
    m = (x * x).mean(axis=1).compute()       # an ember array
    y = da.from_array(ember.arange(10.0), chunks=5, asarray=False)

What this module adds to Dask (importing it registers all of it):

* Dask's dispatch tables for ember arrays, as ``dask/array/backends.py`` does for CuPy:
  ``concatenate``, ``take``, ``tensordot``, ``einsum``, ``empty``, element counts
  (``numel``/``nannumel``, for ``mean``/``var``/``std`` on the device), ``percentile``
  and ``to_numpy``; and the ``"ember"`` array backend
  (``dask.config.set({"array.backend": "ember"})``: ``da.ones``/``da.zeros``/
  ``da.arange``... make ember chunks);
* :func:`meta` (the empty ember array Dask carries to know the chunk type),
  :func:`from_array`, :func:`to_device` / :func:`to_host` (NumPy chunks to ember chunks
  and back), :func:`default_rng` (random chunks drawn on the device, one independent
  Philox stream per chunk: nothing large crosses the bus);
* :mod:`ember.dask.cluster`: ``ember.dask.LocalCluster``, one worker process per
  device.

Each chunk task runs on the device current in the thread that runs it (the process's
default device: ``EMBER_DEVICE`` per worker on a cluster).  ``docs/scaling.md`` is the guide.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import ember
from ember.array.ndarray import ndarray
from ember.dask.random import Generator, default_rng
from ember.dask.registry import register

__all__ = [
    "Generator", "LocalCluster", "Nanny", "default_rng", "from_array", "meta", "register",
    "to_device", "to_host",
]  # fmt: skip


def meta(dtype: Any = None, ndim: int = 0, device=None) -> ndarray:
    """The empty ember array (shape ``(0,) * ndim``) Dask keeps as an array's ``_meta``: it
    tells Dask the chunk type, so results of its operations stay ember arrays."""
    dt = ember.float64 if dtype is None else ember.dtype(dtype)
    return ember.empty((0,) * ndim, dtype=dt, device=device)


def from_array(x: ndarray, chunks: Any = "auto", **kwargs: Any):
    """A Dask array over an ember array, its chunks views of ``x`` on its device
    (``dask.array.from_array(x, chunks, asarray=False)`` with an ember ``meta``)."""
    import dask.array as da

    kwargs.setdefault("asarray", False)
    kwargs.setdefault("meta", meta(x.dtype, x.ndim, x.device))
    return da.from_array(x, chunks=chunks, **kwargs)


def to_device(x, device=None):
    """Dask array ``x`` with each chunk copied to the device (``ember.asarray`` per
    chunk, on the worker that holds it; ``device``: a device of that worker's process)."""
    return x.map_blocks(
        ember.asarray, device=device, dtype=x.dtype, meta=meta(x.dtype, x.ndim, device)
    )


def to_host(x):
    """Dask array ``x`` with NumPy chunks (each ember chunk copied to the host), e.g. to
    ``store`` it or to hand it to a library that needs NumPy."""
    return x.map_blocks(ember.asnumpy, dtype=x.dtype, meta=np.empty((0,) * x.ndim, x.dtype))


def chunk_bytes(x) -> int:
    """Bytes of the largest chunk of Dask array ``x`` (what one task holds on a device)."""
    return math.prod(max(c) if c else 0 for c in x.chunks) * x.dtype.itemsize


def __getattr__(name: str):
    if name in ("LocalCluster", "Nanny"):
        from ember.dask import cluster

        return getattr(cluster, name)
    raise AttributeError(f"module 'ember.dask' has no attribute {name!r}")


register()
