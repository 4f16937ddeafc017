"""Which Python objects a kernel may call, by name.

Ember's own kernel functions (:mod:`ember.lang`) carry an ``__ember_intrinsic__`` name; any
object with that attribute is recognized the same way (so an array-level ``ember.sqrt`` can
also be used in kernels).  Python builtins, the ``math`` and ``cmath`` modules and a few NumPy
functions are mapped here by identity.  Names starting with ``py_`` keep Python's semantics
(``math.floor`` returns an int), ``cmath_`` names Python's complex functions; the others
follow NumPy (``ember.floor`` returns a float).
"""

from __future__ import annotations

import builtins
import cmath
import functools
import math
from typing import Any

from ember import lang

MATH1 = frozenset(lang.MATH1)
MATH2 = frozenset(lang.MATH2)
PREDICATES = frozenset(lang.PREDICATES)
ATOMICS = frozenset(
    {"add", "sub", "min", "max", "exchange", "exch", "cas", "and", "or", "xor", "inc", "dec",
     "load"}
)  # fmt: skip

_BUILTINS = {
    builtins.abs: "py_abs", builtins.min: "py_min", builtins.max: "py_max",
    builtins.int: "py_int", builtins.float: "py_float", builtins.bool: "py_bool",
    builtins.round: "py_round", builtins.len: "py_len", builtins.pow: "py_pow",
    builtins.divmod: "py_divmod", builtins.print: "py_print", builtins.complex: "py_complex",
}  # fmt: skip

_MATH = {
    "floor": "py_floor", "ceil": "py_ceil", "trunc": "py_trunc", "log": "py_log",
    "fabs": "fabs", "pow": "pow", "gamma": "tgamma", "fsum": None, "frexp": "frexp",
    "ldexp": "ldexp",
}  # fmt: skip

_NUMPY = {
    "sqrt": "sqrt", "cbrt": "cbrt", "exp": "exp", "exp2": "exp2", "expm1": "expm1",
    "log": "log", "log2": "log2", "log10": "log10", "log1p": "log1p", "sin": "sin",
    "cos": "cos", "tan": "tan", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
    "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "arcsinh": "asinh", "arccosh": "acosh",
    "arctanh": "atanh", "floor": "floor", "ceil": "ceil", "trunc": "trunc", "rint": "rint",
    "fabs": "fabs", "abs": "py_abs", "absolute": "py_abs", "arctan2": "atan2",
    "hypot": "hypot", "copysign": "copysign", "fmod": "fmod", "fmin": "fmin", "fmax": "fmax",
    "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite", "power": "py_pow",
    "frexp": "frexp", "ldexp": "ldexp",
    "conj": "conj", "conjugate": "conj", "real": "real", "imag": "imag", "angle": "angle",
}  # fmt: skip


# cmath's functions: "cmath_<name>" (frontend/complexes.py), complex results for real
# arguments too
CMATH = (
    "sqrt", "exp", "log", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
    "cosh", "tanh", "asinh", "acosh", "atanh", "phase", "polar", "rect", "isnan", "isinf",
    "isfinite",
)  # fmt: skip


@functools.cache
def _table() -> dict[int, tuple[Any, str]]:
    table: dict[int, tuple[Any, str]] = {}
    for obj, name in _BUILTINS.items():
        table[id(obj)] = (obj, name)
    for attr in dir(math):
        obj = getattr(math, attr)
        if not callable(obj):
            continue
        name = _MATH.get(attr, attr)
        known = name and (
            name in MATH1
            or name in MATH2
            or name in PREDICATES
            or name.startswith("py_")
            or name in ("fma", "tgamma", "frexp", "ldexp")
        )
        if known:
            table[id(obj)] = (obj, name)
    for attr in CMATH:
        table[id(getattr(cmath, attr))] = (getattr(cmath, attr), "cmath_" + attr)
    import numpy as np

    for attr, name in _NUMPY.items():
        obj = getattr(np, attr, None)
        if obj is not None:
            table[id(obj)] = (obj, name)
    return table


def intrinsic_name(obj: Any) -> str | None:
    """The intrinsic ``obj`` stands for in a kernel, or None."""
    try:
        name = getattr(obj, "__ember_intrinsic__", None)
    except Exception:  # objects with odd __getattr__ (proxies, lazy modules)
        name = None
    if isinstance(name, str):
        return name
    found = _table().get(id(obj))
    if found is not None and found[0] is obj:
        return found[1]
    return None


def is_index_triple(name: str | None) -> bool:
    """``thread_idx``, ``block_idx``, ``block_dim`` and ``grid_dim`` (used as ``.x/.y/.z``)."""
    return name in ("thread_idx", "block_idx", "block_dim", "grid_dim")
