"""NumPy's ``where=`` of the reductions (``sum(x, where=mask)``...): only the elements where
the mask (broadcast to ``x``) is true take part.

Each reduction runs on a masked copy of ``x``, as NumPy defines it: the other elements
replaced by the reduction's identity (``sum``/``nansum`` 0, ``prod``/``nanprod`` 1, ``any``
0, ``all`` 1), or by ``initial`` for ``max``/``min``, which have none (NumPy's ValueError
without it).  The statistics (``mean``, ``var``, ``std`` and their ``nan`` forms) reduce
the copy with NaN in the other places through the ``nan`` forms, so counts and degrees of
freedom are per slice; for ``mean``/``var``/``std`` a NaN among the chosen elements then
gives NaN, as in NumPy.  An elementwise pass more than the plain reduction.
"""

from __future__ import annotations

import math

from ember import dtypes
from ember.array.ndarray import ndarray

IDENTITY = {"sum": 0, "nansum": 0, "prod": 1, "nanprod": 1, "any": 0, "all": 1}
EXTREMA = {"max": "maximum", "min": "minimum", "nanmax": "maximum", "nanmin": "minimum"}


def mask_of(x: ndarray, where) -> ndarray:
    """``where`` as a bool array of ``x``'s shape (an ember array, or host data copied)."""
    from ember.array import manipulation
    from ember.array.creation import asarray

    m = where if isinstance(where, ndarray) else asarray(where, device=x.backend)
    if m.dtype is not dtypes.bool_:
        raise TypeError(f"where= must be a boolean array, got {m.dtype}")
    return manipulation.broadcast_to(m, x.shape)


def identity_masked(kind: str, x: ndarray, where, initial) -> ndarray:
    """``x`` with the elements outside ``where`` replaced for the reduction ``kind``."""
    from ember.array.ufuncs import where as choose

    fill = IDENTITY.get(kind)
    if fill is None:
        if initial is None:
            raise ValueError(
                f"reduction operation '{EXTREMA[kind]}' does not have an identity, so to use "
                "a where mask one has to specify 'initial'"
            )
        fill = initial
    if x.dtype is dtypes.bool_:
        fill = bool(fill)
    return choose(mask_of(x, where), x, fill)


def masked_statistic(stat, kind: str, x: ndarray, where, axis, keepdims: bool, out, **kw):
    """``mean``/``var``/``std`` (``stat``: the ``nan`` form of ``kind``'s reduction) of the
    elements of ``x`` where ``where`` is true."""
    import ember
    from ember.array import manipulation
    from ember.array.ufuncs import isnan
    from ember.array.ufuncs import where as choose

    m = mask_of(x, where)
    xf = x if x.dtype.is_inexact else x.astype(dtypes.float64)
    res = stat(choose(m, xf, math.nan), axis=axis, keepdims=keepdims, **kw)
    if not kind.startswith("nan") and x.dtype.is_inexact:  # a chosen NaN gives NaN
        res = choose(ember.any(m & isnan(x), axis=axis, keepdims=keepdims), math.nan, res)
    return manipulation.into(out, res, kind)


__all__ = ["identity_masked", "masked_statistic", "mask_of"]
