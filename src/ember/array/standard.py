"""Ember's standard precompiled set: the array kernels common programs run first.

``ember precompile`` (:mod:`ember.precompile`) specializes every
``(kernel, example_args)`` pair :func:`standard_kernels` yields, so that
``import ember; x = ember.ones(n); y = x * 2 + 1`` in a fresh process compiles nothing.

The examples are made by the same code the array functions run (type rules, scalar
conversion, kernel factories), so each example has exactly the argument signature of the
real call: NumPy arrays stand for device arrays of their dtype (1-d, contiguous) and
Python scalars for the converted scalar operands.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ember import dtypes

DTYPES = ("bool", "int32", "int64", "float32", "float64")
ARITHMETIC = ("add", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow")
COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
OTHER_BINARY = ("maximum", "minimum", "logical_and", "logical_or")
FLOAT_UNARY = ("sqrt", "exp", "log", "sin", "cos", "tanh", "abs", "negative", "floor", "isnan")
INT_UNARY = ("abs", "negative")
STRIDED_2D = ("add", "subtract", "multiply", "divide")
N = 64  # example length: only dtype, ndim and layout matter
REDUCTIONS = ("sum", "max", "argmax", "mean")  # every common pass (reduce.COMMON_PASSES)
ONE_PASS = ("min", "argmin")  # one pass along the fast axis or a slow one


def _example(dtype, kind: str):
    """An operand: an array of ``dtype``, or a Python scalar of the matching kind."""
    import numpy as np

    if kind == "a":
        return np.zeros(N, dtypes.dtype(dtype).numpy)
    return {"b": True, "i": 1, "u": 1, "f": 1.0}[dtypes.dtype(dtype).kind]


def contiguous_example(ufunc, operands: tuple, fp64: bool = True):
    """``(kernel, args)`` of the contiguous kernel ``ufunc`` runs on ``operands`` (NumPy
    arrays for device arrays, Python scalars for scalars), or None where the dtypes are
    refused (``-bool``)."""
    import numpy as np

    from ember.array import kernels
    from ember.array.elementwise import converter
    from ember.array.rules import scalar_type
    from ember.frontend.types import scalar

    kinds = tuple(isinstance(x, np.ndarray) for x in operands)
    types = tuple(
        scalar(dtypes.dtype(x.dtype)) if k else scalar_type(x)
        for x, k in zip(operands, kinds, strict=True)
    )
    try:
        res = ufunc.rule(types)
    except TypeError:
        return None
    args: list[Any] = [N, np.zeros(N, res.out.numpy)]
    for i, (x, k) in enumerate(zip(operands, kinds, strict=True)):
        ct = res.c0 if (i == 0 and res.c0) else res.ct
        conv = None if k else converter(ct, type(x), ufunc, i, fp64)
        args.append(x if conv is None else conv(x))
    return kernels.contiguous(res.op, res.ct, kinds, res.c0), tuple(args)


def _binary(names: Iterable[str], dts: Iterable[str], kinds=("aa", "as", "sa")) -> Iterator:
    from ember.array import ufuncs

    for name in names:
        for dt in dts:
            for kind in kinds:
                yield getattr(ufuncs, name), (_example(dt, kind[0]), _example(dt, kind[1]))


def _unary(names: Iterable[str], dts: Iterable[str]) -> Iterator:
    from ember.array import ufuncs

    for name in names:
        for dt in dts:
            yield getattr(ufuncs, name), (_example(dt, "a"),)


def _casts(dts: Iterable[str]) -> Iterator:
    """Fills (``ones``, ``full``: a scalar into an array) and ``astype`` between dtypes."""
    from ember.array.manipulation import _cast

    dts = tuple(dts)
    for dt in dts:
        cast = _cast(dtypes.dtype(dt))
        yield cast, (_example(dt, "s"),)
        yield cast, (1,)  # ones(n, dtype) fills a Python int
        for src in dts:
            if src != dt:
                yield cast, (_example(src, "a"),)


def _strided(names: Iterable[str], dts: Iterable[str]) -> Iterator[tuple[Any, tuple]]:
    """2-d broadcasts (a row over a matrix) and transposed copies."""
    import numpy as np

    from ember.array import broadcast, kernels, ufuncs

    dims = broadcast.divisors((4, 16))
    for dt in dts:
        res_dt = dtypes.dtype(dt)
        matrix = np.zeros(64, res_dt.numpy)
        st = (0, 16, 1)
        for name in names:
            res = getattr(ufuncs, name).rule((_scalar(res_dt), _scalar(res_dt)))
            k = kernels.strided(res.op, res.ct, (True, True), 2, False, res.c0)
            out = np.zeros(64, res.out.numpy)
            yield k, (64, dims, out, st, matrix, st, matrix, (0, 0, 1))
        yield kernels.transpose2(res_dt), (np.zeros((4, 16), res_dt.numpy), _transposed(dt))


def _reductions(dts: Iterable[str]) -> Iterator[tuple[Any, tuple]]:
    """The reduction passes of ``sum max argmax mean`` (all four kinds), ``min argmin``
    (one pass), ``any all`` of booleans and ``var std`` of floats."""
    from ember.array import reduce as red
    from ember.array import reducers
    from ember.array import reductions as r

    one = (red.COMMON_PASSES[0], red.COMMON_PASSES[3])
    for name in dts:
        dt = dtypes.dtype(name)
        found = {
            "sum": r.sum_reducer("sum", dt), "max": (r.extremum_reducer(dt, True), dt),
            "argmax": (r.arg_reducer(dt, True), dtypes.int64),
            "mean": r.stat_reducer("mean", dt), "min": (r.extremum_reducer(dt, False), dt),
            "argmin": (r.arg_reducer(dt, False), dtypes.int64),
        }  # fmt: skip
        for fn in REDUCTIONS + ONE_PASS:
            R, out = found[fn]
            yield from red.examples(R, dt, out, passes=None if fn in REDUCTIONS else one)
        if dt.kind == "b":
            for any_ in (True, False):
                yield from red.examples(reducers.logical(any_), dt, dt)
        if dt.is_float:
            for what in ("var", "std"):
                R, out = r.stat_reducer(what, dt)
                yield from red.examples(R, dt, out)


def _scalar(dt):
    from ember.frontend.types import scalar

    return scalar(dt)


class _transposed:
    """Stands for a transposed (strided) 2-d array in an example: made on the device."""

    def __init__(self, dtype):
        self.dtype = dtype


def _device(args: tuple) -> tuple:
    """Example arguments as device arrays where the kernel needs a strided view."""
    out = []
    for a in args:
        if isinstance(a, _transposed):
            from ember.array.creation import zeros

            a = zeros((16, 4), a.dtype).T
        out.append(a)
    return tuple(out)


def standard_kernels(dtypes_: Iterable[str] = DTYPES, fp64: bool | None = None, backend=None):
    """Yield ``(kernel, example_args)`` for Ember's standard precompiled set.

    The set: ``+ - * / // % **``, comparisons, ``maximum``/``minimum``, ``logical_and/or``
    on arrays and with Python scalars on either side; common math (``sqrt exp log sin cos
    tanh abs negative floor isnan``) on floats; ``abs``/``negative`` on integers; fills
    (``ones``, ``full``) and ``astype`` between the dtypes; 2-d broadcasts of ``+ - * /`` and
    transposed copies for float32/float64; reductions (``sum max min argmax argmin mean``,
    ``any all`` of booleans, ``var std`` of floats) along the fast axis (one pass, or a
    split and its second pass) and along a slow axis; ``cumsum``/``cumprod``, ``x[mask]``,
    ``nonzero`` and (but for bool) ``sort``/``argsort`` of 1-d arrays, in the designs the
    current device runs (:mod:`ember.array.standard_sort`).  ``dtypes_`` defaults to bool,
    int32, int64, float32, float64.  Example arrays are NumPy arrays (precompile copies them to the
    device) except transposed views, which are made on the current device.  ``backend`` (default:
    the current one) is the device whose scan and sort designs and tile shapes are listed.
    """
    from ember.array import elementwise

    dts = tuple(dtypes_)
    if fp64 is None:
        from ember.runtime import backend as registry

        fp64 = elementwise._has_fp64(registry.current())
    floats = tuple(d for d in dts if dtypes.dtype(d).is_float)
    ints = tuple(d for d in dts if dtypes.dtype(d).is_integer)
    examples = [
        *_binary(ARITHMETIC + OTHER_BINARY, dts),
        *_binary(COMPARISONS, dts, ("aa", "as")),
        *_unary(FLOAT_UNARY, floats),
        *_unary(INT_UNARY, ints),
        *_casts(dts),
    ]
    seen: set = set()
    for ufunc, operands in examples:
        found = contiguous_example(ufunc, operands, fp64)
        if found is None:
            continue
        kernel, args = found
        key = (kernel, tuple(_signature(a) for a in args))
        if key not in seen:
            seen.add(key)
            yield kernel, args
    for kernel, args in _strided(STRIDED_2D, floats):
        yield kernel, _device(args)
    for kernel, args in _reductions(dts):  # second passes read states: shared by dtypes
        key = (kernel, tuple(_signature(a) for a in args))
        if key not in seen:
            seen.add(key)
            yield kernel, args
    yield from _scans_and_sorts(dts, fp64, backend)


def _scans_and_sorts(dts, fp64: bool, be=None) -> Iterator:
    """Cumulative sums and products, ``x[mask]``/``nonzero`` and sorts (standard_sort.py)."""
    from ember.array import standard_sort
    from ember.runtime import backend as registry

    usable = tuple(d for d in dts if fp64 or d != "float64")
    seen: set = set()
    for kernel, args in standard_sort.examples(be or registry.current(), usable):
        key = (kernel, tuple(_signature(a) for a in args))
        if key not in seen:
            seen.add(key)
            yield kernel, args


def _signature(a) -> Any:
    dt = getattr(a, "dtype", None)
    return (str(dt), getattr(a, "ndim", None)) if dt is not None else type(a)
