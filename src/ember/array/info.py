"""Array API namespace extras: dtype inspection and promotion, constants.

``result_type``, ``can_cast``, ``finfo``, ``iinfo``, ``isdtype``, ``bool`` (the dtype),
``newaxis``, ``e``, ``pi``, ``inf``, ``nan`` and ``__array_api_version__``.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from ember import dtypes

__array_api_version__ = "2023.12"
bool = dtypes.bool_  # noqa: A001 - the Array API's name of the dtype
newaxis = None
e = math.e
pi = math.pi
inf = math.inf
nan = math.nan

_KINDS = {
    "bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
    "real floating": "f", "complex floating": "", "numeric": "iuf",
}  # fmt: skip


def result_type(*arrays_and_dtypes) -> dtypes.DType:
    """The dtype NumPy's ``result_type`` gives for the operands (NEP 50: Python scalars are
    weak).  With more than two operands NumPy promotes them together, not pairwise
    (``int8, uint8, float16 -> float16`` where pairwise gives float32); Ember's binary
    operators are the two-operand case of the same rules."""
    import numpy as np

    if not arrays_and_dtypes:
        raise ValueError("at least one array or dtype is required")
    operands = []
    for x in arrays_and_dtypes:
        if hasattr(x, "dtype") and hasattr(x, "shape") and type(x).__module__ != "numpy":
            operands.append(dtypes.dtype(x.dtype).numpy)
        elif isinstance(x, builtins_number):
            operands.append(x)  # stays a weak Python scalar for NumPy too
        else:
            operands.append(dtypes.dtype(x).numpy)
    return dtypes.dtype(np.result_type(*operands))


builtins_number = (int, float)


def can_cast(from_, to, /, casting: str = "safe") -> bool:
    """Whether ``from_`` (a dtype or array) casts to ``to`` under NumPy's ``casting``."""
    import numpy as np

    src = from_.dtype if hasattr(from_, "shape") else dtypes.dtype(from_)
    return bool(np.can_cast(src.numpy, dtypes.dtype(to).numpy, casting))


@functools.cache
def finfo(dtype: Any):
    """NumPy's ``finfo`` of a float dtype (or array)."""
    import numpy as np

    return np.finfo(dtypes.dtype(getattr(dtype, "dtype", dtype)).numpy)


@functools.cache
def iinfo(dtype: Any):
    """NumPy's ``iinfo`` of an integer dtype (or array)."""
    import numpy as np

    return np.iinfo(dtypes.dtype(getattr(dtype, "dtype", dtype)).numpy)


def isdtype(dtype, kind) -> bool:
    """The Array API's ``isdtype``: ``kind`` is a dtype, a kind name or a tuple of them."""
    dt = dtypes.dtype(dtype)
    if isinstance(kind, tuple):
        return any(isdtype(dt, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"unknown dtype kind {kind!r}; known: {', '.join(_KINDS)}")
        return dt.kind in _KINDS[kind] if _KINDS[kind] else False
    return dt is dtypes.dtype(kind)
