"""Random Dask arrays drawn on the device, chunk by chunk.

``ember.dask.default_rng(seed)`` has the draws of :class:`ember.random.Generator` with a
``chunks=`` argument.  Each chunk gets its own Philox key, spawned from the seed when the
graph is built (:meth:`ember.random.Generator.spawn`): a task draws its chunk on its
worker's device from that key, so only the key crosses the network, the result depends
on the seed and the chunking only (not on which worker runs which chunk, or in what
order), and chunks are independent streams.
"""

from __future__ import annotations

import math
from typing import Any

import ember
from ember.array.random import Generator as _EmberGenerator
from ember.array.random import default_rng as _ember_rng


class Generator:
    """Dask arrays of random numbers drawn on the device (see the module docstring)."""

    def __init__(self, seed=None):
        self._rng = _ember_rng(seed)

    def __repr__(self) -> str:
        return f"ember.dask.Generator({self._rng!r})"

    def _draw(self, method: str, size, chunks, dtype, *args: Any):
        import dask.array as da
        from dask.base import tokenize

        from ember.dask import meta

        dt = ember.dtype(dtype)
        shape = (size,) if isinstance(size, int) else tuple(size)
        chunks = da.core.normalize_chunks(chunks, shape, dtype=dt.numpy)
        grid = tuple(len(c) for c in chunks)
        keys = self._rng.spawn(math.prod(grid))
        name = f"ember-{method}-" + tokenize(keys[0].key if keys else 0, method, shape, chunks,
                                             str(dt), args)  # fmt: skip
        graph = {}
        for flat, index in enumerate(_indices(grid)):
            block = tuple(c[i] for c, i in zip(chunks, index, strict=True))
            graph[(name, *index)] = (_chunk, keys[flat].key, method, block, str(dt), args)
        return da.Array(graph, name, chunks, meta=meta(dt, len(shape)))

    def random(self, size, chunks="auto", dtype=ember.float64):
        """Uniform numbers in [0, 1) (``rng.random``)."""
        return self._draw("random", size, chunks, dtype)

    def uniform(self, low=0.0, high=1.0, size=None, chunks="auto", dtype=ember.float64):
        """Uniform numbers in [low, high)."""
        return self._draw("uniform", size, chunks, dtype, float(low), float(high))

    def standard_normal(self, size, chunks="auto", dtype=ember.float64):
        """Standard normal numbers."""
        return self._draw("standard_normal", size, chunks, dtype)

    def normal(self, loc=0.0, scale=1.0, size=None, chunks="auto", dtype=ember.float64):
        """Normal numbers of mean ``loc`` and standard deviation ``scale``."""
        return self._draw("normal", size, chunks, dtype, float(loc), float(scale))

    def exponential(self, scale=1.0, size=None, chunks="auto", dtype=ember.float64):
        """Exponential numbers of mean ``scale``."""
        return self._draw("exponential", size, chunks, dtype, float(scale))

    def integers(self, low, high=None, size=None, chunks="auto", dtype=ember.int64):
        """Integers in [low, high) (in [0, low) when ``high`` is None)."""
        return self._draw("integers", size, chunks, dtype, int(low),
                          None if high is None else int(high))  # fmt: skip


def default_rng(seed=None) -> Generator:
    """A :class:`Generator` of random Dask arrays; ``seed`` as :func:`ember.random.default_rng`."""
    return Generator(seed)


def _indices(grid: tuple[int, ...]):
    if not grid:
        yield ()
        return
    for i in range(grid[0]):
        for rest in _indices(grid[1:]):
            yield (i, *rest)


def _chunk(key, method: str, shape, dtype: str, args: tuple):
    """One chunk, drawn on the device of the process (thread) that runs the task."""
    rng = _EmberGenerator(key)
    dt = ember.dtype(dtype)
    if method == "integers":
        low, high = args
        return rng.integers(low, high, size=shape, dtype=dt)
    if method in ("random", "standard_normal"):
        return getattr(rng, method)(shape, dtype=dt)
    return getattr(rng, method)(*args, size=shape, dtype=dt)
