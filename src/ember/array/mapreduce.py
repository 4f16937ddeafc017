"""User-level reductions: ``ember.reduce(op, x)`` and ``ember.mapreduce(f, op, x)`` with
plain Python device functions, and the neutral-element registry.

::

    def sq(v):
        return v * v

    def bigger(a, b):
        return a if a > b else b

    ember.mapreduce(sq, ember.add, x)          # sum of squares, one pass, no temporary
    ember.reduce(bigger, x, axis=0)            # any associative, commutative function

``f`` and ``op`` are compiled into the generic reduction kernels
(:mod:`ember.array.reduce_kernels`) as device functions.  ``op`` must be associative and
commutative (threads and blocks merge partial results in no fixed order).  The
accumulator has ``dtype=``, else the type ``f`` returns (``x``'s dtype without ``f``),
with NumPy's upcast of small integers for ``add``/``multiply``; ``op``'s result is cast
back to it.

The *neutral element* of ``op`` (``0`` for ``add``, the lowest value for ``maximum``...)
starts each thread's accumulation.  Ember knows it for ``ember.add``, ``multiply``,
``maximum``, ``minimum``, ``fmax``, ``fmin``, ``logical_and/or/xor``,
``bitwise_and/or/xor``, their :mod:`operator` twins and Python's ``max``/``min``; give your
own with :func:`register_neutral_element`.  Without one, the state carries a "has a
value" flag instead - still correct, a little slower, and an empty reduction then needs
``initial=``.
"""

from __future__ import annotations

import builtins
import functools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ember import dtypes
from ember.array import ops, reductions
from ember.array import reducers as rd
from ember.array.creation import on_device
from ember.array.ndarray import ndarray
from ember.dtypes import DType

_NO_VALUE = object()
_NEUTRAL: dict[Any, Any] = {}  # device function -> value or callable(dtype) -> value


# --------------------------------------------------------------------- registry
def register_neutral_element(op: Callable, value) -> None:
    """Declare ``value`` the neutral element of ``op``: ``op(value, v) == v`` for every
    ``v``.  ``value`` is a number, or a function of the dtype returning one
    (``lambda dt: ember.iinfo(dt).max``).  Registering makes reductions with ``op`` faster
    and lets them reduce empty arrays without ``initial=``."""
    _NEUTRAL[_canonical(op)] = value


def neutral_element(op: Callable, dtype) -> Any:
    """The neutral element of ``op`` for ``dtype`` as a NumPy scalar, or None if unknown."""
    dt = dtypes.dtype(dtype)
    value = _NEUTRAL.get(_canonical(op))
    if value is None:
        return None
    if callable(value):
        value = value(dt)
    return dt.numpy.type(value)


def _canonical(op: Callable) -> Callable:
    """The device function of ``op`` (ember's ufuncs and Python's operators map to theirs)."""
    return _ALIASES().get(op, op)


@functools.cache
def _ALIASES() -> dict:  # noqa: N802 - a constant made on first use
    from ember.array import ufuncs as u

    table = {
        ops.add: (u.add, operator.add), ops.multiply: (u.multiply, operator.mul),
        ops.maximum: (u.maximum, builtins.max), ops.minimum: (u.minimum, builtins.min),
        ops.fmax: (u.fmax,), ops.fmin: (u.fmin,), ops.logical_and: (u.logical_and,),
        ops.logical_or: (u.logical_or,), ops.logical_xor: (u.logical_xor,),
        ops.bitwise_and: (u.bitwise_and, operator.and_),
        ops.bitwise_or: (u.bitwise_or, operator.or_),
        ops.bitwise_xor: (u.bitwise_xor, operator.xor),
    }  # fmt: skip
    return {alias: fn for fn, aliases in table.items() for alias in aliases}


def _all_ones(dt: DType):
    if dt.kind == "b":
        return True
    return np.iinfo(dt.numpy).max if dt.kind == "u" else -1


def _nan_or(largest: bool):
    return lambda dt: np.nan if dt.is_float else rd.extreme(dt, largest)


_NEUTRAL.update({
    ops.add: 0, ops.multiply: 1,
    ops.maximum: lambda dt: rd.extreme(dt, True), ops.minimum: lambda dt: rd.extreme(dt, False),
    ops.fmax: _nan_or(True), ops.fmin: _nan_or(False),
    ops.logical_and: True, ops.logical_or: False, ops.logical_xor: False,
    ops.bitwise_and: _all_ones, ops.bitwise_or: 0, ops.bitwise_xor: 0,
})  # fmt: skip

# built-in operators with a tuned reduction of their own (float32 sums are compensated)
_TUNED = {
    ops.add: reductions.sum, ops.multiply: reductions.prod, ops.maximum: reductions.max,
    ops.minimum: reductions.min, ops.logical_and: reductions.all,
    ops.logical_or: reductions.any,
}  # fmt: skip


# --------------------------------------------------------------------- reducers
@functools.cache
def custom(op, acc: DType, f, neutral: bytes | None, has_initial: bool) -> rd.Reducer:
    """The reducer of ``op`` over ``f(x)`` accumulated in ``acc``; ``neutral`` is the
    neutral element's bytes (None: unknown, a "has a value" flag joins the state)."""
    OP, ACC, F, INITIAL = op, acc, f, has_initial

    if F is None:

        def pre(x):
            return ACC(x)
    else:

        def pre(x):
            return ACC(F(x))

    if neutral is not None:
        fns = _with_neutral(OP, ACC, np.frombuffer(neutral, acc.numpy)[0], INITIAL)
        state: tuple = (acc,)
    else:
        fns = _with_flag(OP, ACC, INITIAL)
        state = (acc, dtypes.bool_)
    name = f"user_{getattr(op, '__name__', 'op')}_{acc.name}"
    return rd.make(name, acc, state, acc, pre=pre, **fns)


def _with_neutral(OP, ACC, NEUTRAL, INITIAL) -> dict:
    def init():
        return (NEUTRAL,)

    def combine(a, b):
        return (ACC(OP(a[0], b[0])),)

    def step(s, v, j):
        return (ACC(OP(s[0], v)),)

    def final(d0, d1, o, s, n, p1, p2):
        if INITIAL:
            d0[o] = d0.dtype(OP(p1, s[0]))
        else:
            d0[o] = d0.dtype(s[0])

    return {"init": init, "combine": combine, "step": step, "final": final}


def _with_flag(OP, ACC, INITIAL) -> dict:
    def init():
        return (ACC(0), False)

    def combine(a, b):
        if not b[1]:
            return a
        if not a[1]:
            return b
        return (ACC(OP(a[0], b[0])), True)

    def step(s, v, j):
        if s[1]:
            return (ACC(OP(s[0], v)), True)
        return (v, True)

    def final(d0, d1, o, s, n, p1, p2):
        if INITIAL:
            if s[1]:
                d0[o] = d0.dtype(OP(p1, s[0]))
            else:
                d0[o] = d0.dtype(p1)
        else:
            d0[o] = d0.dtype(s[0])

    return {"init": init, "combine": combine, "step": step, "final": final}


# --------------------------------------------------------------------- the functions
def reduce(op, x, /, axis=None, *, initial=_NO_VALUE, dtype=None, keepdims=False):
    """Reduce ``x`` over ``axis`` (None: all axes; an int or a tuple) with the binary
    device function ``op`` - a plain Python function, an ember ufunc (``ember.add``) or an
    :mod:`operator` function.  ``initial`` is combined once into every result (and is
    the result of an empty reduction).  See the module doc for dtypes and neutral
    elements."""
    return mapreduce(None, op, x, axis=axis, initial=initial, dtype=dtype, keepdims=keepdims)


def mapreduce(f, op, x, /, *more, axis=None, initial=_NO_VALUE, dtype=None, keepdims=False):
    """Reduce ``f(x)`` (``f(x, *more)``, broadcast) over ``axis`` with ``op``, in one pass
    over ``x``: ``f`` runs inside the reduction kernel.  With several arrays ``f`` runs
    first as an elementwise kernel (:func:`ember.vectorize`) into a temporary."""
    if more:
        from ember.array.ufuncs import vectorize

        x, f = vectorize(f)(x, *more), None
    return _mapreduce(x, f, op, axis, initial, dtype, keepdims)


@reductions.prepared
def _mapreduce(x, f, op, axis, initial, dtype, keepdims):
    x = on_device(x, "mapreduce" if f is not None else "reduce")
    fn = _canonical(op)
    has_initial = initial is not _NO_VALUE
    if f is None and dtype is None and fn in _TUNED and not has_initial:
        return _TUNED[fn](x, axis=axis, keepdims=keepdims)
    acc = _accumulator(f, fn, x, dtype)
    neutral = neutral_element(fn, acc)
    R = custom(fn, acc, f, None if neutral is None else neutral.tobytes(), has_initial)
    empty = None
    if neutral is None and not has_initial:
        empty = (
            f"ember.reduce: an empty reduction with '{getattr(op, '__name__', op)}', whose "
            "neutral element is unknown; pass initial=..., or register it once with "
            "ember.register_neutral_element(op, value)"
        )
    p1 = acc.numpy.type(initial if has_initial else 0)
    return reductions.run(R, x, axis, keepdims, acc, "reduce", p1=p1, empty=empty)


def _accumulator(f, op, x: ndarray, dtype) -> DType:
    if dtype is not None:
        return dtypes.dtype(dtype)
    dt = x.dtype if f is None else _returns(f, x)
    if op in (ops.add, ops.multiply) and (dt.kind == "b" or (dt.is_integer and dt.itemsize < 8)):
        return dtypes.uint64 if dt.kind == "u" else dtypes.int64  # NumPy's add.reduce upcast
    return dt


def _returns(f, x: ndarray) -> DType:
    """The dtype ``f`` returns for an element of ``x`` (typed like a device function)."""
    from ember.frontend.typer import TypingContext
    from ember.frontend.types import Scalar, scalar

    fn = TypingContext(x.backend.target).specialize(f, (scalar(x.dtype),), None)
    t = fn.return_type
    if not isinstance(t, Scalar):
        raise TypeError(
            f"ember.mapreduce: f must return a number, '{getattr(f, '__name__', f)}' returns {t}"
        )
    return t.dtype
