"""The operators of the reduction kernels: a :class:`Reducer` per reduction and dtype.

A reduction keeps a *state* per thread: a tuple of one to three numbers (a sum; a Kahan
pair; a value and its index; Welford's count, mean and squared deviations).  A reducer
is the set of plain Python device functions the generic kernels of
:mod:`ember.array.reduce_kernels` call on it:

``pre(x)``
    the element as the compute dtype ``ct`` (a cast; ``x != 0`` for ``count_nonzero``; the
    user's function for :func:`ember.mapreduce`; NaN to the identity for ``nansum``).
``init()``
    the state of no elements (the neutral element; threads with no work keep it).
``step(s, v, j)`` and ``step4(s, v0, v1, v2, v3, j0, j1, j2, j3)``
    add one element (four) of index ``j`` along the reduced axis to the state.
``combine(a, b)``
    merge two states: associative and commutative (the trees and the second pass merge in
    any order; ``argmax`` breaks ties by the index, so it still finds the first).
``final(d0, d1, o, s, n, p1, p2)``
    write output ``o`` from the final state; ``n`` is the number of reduced elements, ``p1``
    and ``p2`` are per-launch scalars (``initial=``; ``ddof``).

The factories are memoized, so a reducer is made once per (operation, dtype) and the
kernels made from it are too.  Accuracy: float16/float32 sums (and means) accumulate in
float32 with Kahan compensation per thread (four elements are added pairwise first), then
combine across threads and blocks as a tree of compensated pairs, so the error does not
grow with the length of the array; float64 sums add per thread, then as a tree
(NumPy's pairwise summation has the same order of error).  Variances use Welford's update
per element and Chan, Golub & LeVeque's merge (1979) for four-element groups and across
threads - never ``E[x**2] - E[x]**2``.

Complex data: sums and means accumulate in their own dtype (complex64 with Kahan pairs: the
compensation is exact part by part); a complex variance keeps a real count, a complex mean
and a real sum of squared moduli ``|x - mean|**2``, so ``var`` and ``std`` are real (NumPy's
and the Array API's dtypes).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import ember
from ember import dtypes
from ember.dtypes import DType

INDEX_NONE = (1 << 63) - 1  # the index of "no element yet" in argmin/argmax states
F32, F64, I64, U64 = dtypes.float32, dtypes.float64, dtypes.int64, dtypes.uint64


@dataclass(frozen=True, eq=False)
class Reducer:
    """The device functions of one reduction for one compute dtype (see the module doc).

    ``state`` holds the dtypes of the state's components; ``p1`` and ``p2`` the dtypes of
    the scalars passed to ``final``.  Reducers compare by identity: each is made once.
    """

    name: str
    ct: DType
    state: tuple[DType, ...]
    pre: Callable
    init: Callable
    step: Callable
    step4: Callable
    combine: Callable
    final: Callable
    p1: DType
    p2: DType
    identity: Any = None  # the value of no elements, where the reduction has one


def _named(prefix: str, **fns) -> dict:
    """C names that cannot meet OpenCL built-ins (``step``, ``all``, ``max``...)."""
    for key, fn in fns.items():
        fn.__name__ = fn.__qualname__ = f"rd_{prefix}_{key}"
    return fns


def _cast(CT) -> Callable:
    def pre(x):
        return CT(x)

    return pre


def _steps(STEP) -> Callable:
    def step4(s, v0, v1, v2, v3, j0, j1, j2, j3):
        return STEP(STEP(STEP(STEP(s, v0, j0), v1, j1), v2, j2), v3, j3)

    return step4


def _by_combine(COMBINE) -> Callable:
    def step(s, v, j):
        return COMBINE(s, (v,))

    return step


def make(
    name, ct, state, p1, pre=None, step=None, step4=None, p2=None, identity=None, **fns
) -> Reducer:
    """A :class:`Reducer` from its device functions (``step`` defaults to combining with a
    one-element state, ``step4`` to four steps, ``pre`` to a cast to ``ct``)."""
    step = step or _by_combine(fns["combine"])
    fns = _named(name, pre=pre or _cast(ct), step=step, step4=step4 or _steps(step), **fns)
    return Reducer(name, ct, tuple(state), p1=p1, p2=p2 or p1, identity=identity, **fns)


def float_acc(dt: DType) -> DType:
    """The accumulation dtype of a float sum or statistic: float32 for float16 data; a
    complex dtype accumulates in itself."""
    if dt.is_complex:
        return dt
    return F32 if dt.itemsize <= 4 else F64


# --------------------------------------------------------------------- sums and products
def _plain_sum(ACC):
    def init():
        return (ACC(0),)

    def step(s, v, j):
        return (s[0] + v,)

    def step4(s, v0, v1, v2, v3, j0, j1, j2, j3):
        return (s[0] + ((v0 + v1) + (v2 + v3)),)

    def combine(a, b):
        return (a[0] + b[0],)

    return {"init": init, "step": step, "step4": step4, "combine": combine}


def _kahan_add(ACC):
    """Kahan's step on a ``(sum, c)`` pair (the value ``sum - c``), adding ``v``."""

    def add(s, v):
        y = v - s[1]
        t = s[0] + y
        c = (t - s[0]) - y
        if t - t != 0:  # t is inf or NaN: c would be NaN and poison the next step
            c = ACC(0)
        return (t, c)

    return _named("kahan", add=add)["add"]


def _kahan_sum(ACC):
    """Kahan's compensated sum: the state is ``(sum, c)``, the value ``sum - c``."""
    add = _kahan_add(ACC)

    def init():
        return (ACC(0), ACC(0))

    def step(s, v, j):
        return add(s, v)

    def step4(s, v0, v1, v2, v3, j0, j1, j2, j3):
        return add(s, (v0 + v1) + (v2 + v3))

    def combine(a, b):
        return add(a, b[0] - b[1])

    return {"init": init, "step": step, "step4": step4, "combine": combine}


def _sum_parts(acc: DType) -> tuple[dict, tuple, Callable]:
    """The sum's functions, state dtypes and ``total(s)`` (the state's value)."""
    if acc.is_inexact and acc.real.itemsize == 4:  # float32 and complex64
        return _kahan_sum(acc), (acc, acc), _named("kahan", total=_kahan_total)["total"]
    return _plain_sum(acc), (acc,), _plain_total


def _kahan_total(s):
    return s[0] - s[1]


def _plain_total(s):
    return s[0]


@functools.cache
def sum_(acc: DType, out: DType, pre: Callable | None = None, tag: str = "sum") -> Reducer:
    """``sum`` accumulating in ``acc`` (Kahan pairs for float32), written as ``out``;
    ``pre`` maps elements first (``count_nonzero``, ``nansum``)."""
    fns, state, TOTAL = _sum_parts(acc)

    def final(d0, d1, o, s, n, p1, p2):
        d0[o] = d0.dtype(TOTAL(s) + p1)

    return make(f"{tag}_{acc.name}", acc, state, acc, pre=pre, final=final, **fns)


@functools.cache
def mean(acc: DType, out: DType, pre: Callable | None = None, tag: str = "mean") -> Reducer:
    """``mean``: the sum in ``acc`` divided by the number of elements (NaN when none)."""
    fns, state, TOTAL = _sum_parts(acc)
    ACC = acc

    def final(d0, d1, o, s, n, p1, p2):
        d0[o] = d0.dtype(TOTAL(s) / ACC(n))

    return make(f"{tag}_{acc.name}", acc, state, acc, pre=pre, final=final, **fns)


@functools.cache
def nanmean(acc: DType, out: DType) -> Reducer:
    """``nanmean``: NumPy's ``nansum / count`` of the elements that are not NaN (NaN when
    there are none), the sum compensated (Kahan) and the count in the state.  (Welford's
    running mean made ``inf - inf``, so NaN, of data with infinities.)"""
    ACC, N = acc, acc.real
    add = _kahan_add(ACC)

    def init():
        return (ACC(0), ACC(0), N(0))

    def step(s, v, j):
        if v != v:
            return s
        t = add((s[0], s[1]), v)
        return (t[0], t[1], s[2] + 1)

    def combine(a, b):
        t = add((a[0], a[1]), b[0] - b[1])
        return (t[0], t[1], a[2] + b[2])

    def final(d0, d1, o, s, n, p1, p2):
        d0[o] = d0.dtype((s[0] - s[1]) / s[2])  # 0 / 0: NaN where no element counted

    return make(
        f"nanmean_{acc.name}", acc, (acc, acc, N), acc, init=init, step=step, combine=combine,
        final=final,
    )  # fmt: skip


@functools.cache
def prod(acc: DType, out: DType, pre: Callable | None = None, tag: str = "prod") -> Reducer:
    ACC = acc

    def init():
        return (ACC(1),)

    def step(s, v, j):
        return (s[0] * v,)

    def step4(s, v0, v1, v2, v3, j0, j1, j2, j3):
        return (s[0] * ((v0 * v1) * (v2 * v3)),)

    def combine(a, b):
        return (a[0] * b[0],)

    def final(d0, d1, o, s, n, p1, p2):
        d0[o] = d0.dtype(s[0] * p1)

    return make(
        f"{tag}_{acc.name}", acc, (acc,), acc, pre=pre, init=init, step=step, step4=step4,
        combine=combine, final=final,
    )  # fmt: skip


@functools.cache
def nan_to(CT, value) -> Callable:
    """``pre`` of the nan-functions: NaN becomes ``value`` (the identity)."""
    V = value

    def pre(x):
        v = CT(x)
        if ember.isnan(v):
            return CT(V)
        return v

    return pre


# --------------------------------------------------------------------- min and max
def extreme(ct: DType, largest: bool):
    """The identity of ``max`` (the smallest value of ``ct``) or of ``min``."""
    if ct.kind == "b":
        return not largest
    if ct.is_float:
        return ct.numpy.type(-np.inf if largest else np.inf)
    info = np.iinfo(ct.numpy)
    return ct.numpy.type(info.min if largest else info.max)


def _pick(largest: bool, skip_nan: bool) -> Callable:
    """``pick(a, b)``: the larger (smaller) of two values; NaN wins (``max``) or loses
    (``nanmax``: a NaN ``a`` is only kept when ``b`` is NaN too).  NaN tests are
    ``ember.isnan`` (the constant False on integers), not ``a != a``: C compilers warn about a
    self-comparison in every integer specialization.  ``|``, not ``or``: a short-circuit
    compiled to a branch per element (H100, 1 GiB float32: nanmax 2839 -> 2890 GB/s; max
    within the noise, ~2850)."""
    if largest and not skip_nan:

        def pick(a, b):
            if (a > b) | ember.isnan(a):
                return a
            return b
    elif not skip_nan:

        def pick(a, b):
            if (a < b) | ember.isnan(a):
                return a
            return b
    elif largest:

        def pick(a, b):
            if (a > b) | ember.isnan(b):
                return a
            return b
    else:

        def pick(a, b):
            if (a < b) | ember.isnan(b):
                return a
            return b

    return pick


@functools.cache
def extremum(ct: DType, out: DType, largest: bool, skip_nan: bool = False) -> Reducer:
    """``max``/``min`` (``nanmax``/``nanmin``: identity NaN, so an all-NaN slice is NaN)."""
    PICK = _pick(largest, skip_nan)
    IDENT = ct.numpy.type(np.nan) if (skip_nan and ct.is_float) else extreme(ct, largest)

    def init():
        return (IDENT,)

    def step(s, v, j):
        return (PICK(s[0], v),)

    def step4(s, v0, v1, v2, v3, j0, j1, j2, j3):
        return (PICK(s[0], PICK(PICK(v0, v1), PICK(v2, v3))),)

    def combine(a, b):
        return (PICK(a[0], b[0]),)

    def final(d0, d1, o, s, n, p1, p2):
        d0[o] = d0.dtype(PICK(s[0], p1))

    tag = ("nan" if skip_nan else "") + ("max" if largest else "min")
    _named(tag, pick=PICK)
    return make(
        f"{tag}_{ct.name}", ct, (ct,), ct, init=init, step=step, step4=step4,
        combine=combine, final=final, identity=IDENT,
    )  # fmt: skip


@functools.cache
def bounds(ct: DType) -> Reducer:
    """The smallest and the largest element in one pass (``d0`` gets the min, ``d1`` the
    max): the range of an integer ``unique``'s table (:mod:`ember.array.sets`)."""
    LO, HI = _pick(False, False), _pick(True, False)
    IDENT = extreme(ct, False), extreme(ct, True)

    def init():
        return IDENT

    def step(s, v, j):
        return (LO(s[0], v), HI(s[1], v))

    def step4(s, v0, v1, v2, v3, j0, j1, j2, j3):
        return (LO(s[0], LO(LO(v0, v1), LO(v2, v3))), HI(s[1], HI(HI(v0, v1), HI(v2, v3))))

    def combine(a, b):
        return (LO(a[0], b[0]), HI(a[1], b[1]))

    def final(d0, d1, o, s, n, p1, p2):
        d0[o] = d0.dtype(s[0])
        d1[o] = d1.dtype(s[1])

    _named("bounds", lo=LO, hi=HI)
    return make(
        f"bounds_{ct.name}", ct, (ct, ct), ct, init=init, step=step, step4=step4,
        combine=combine, final=final,
    )  # fmt: skip


@functools.cache
def logical(any_: bool) -> Reducer:
    """``any`` / ``all`` (the truth of each element: NaN is true, as in NumPy)."""
    B = dtypes.bool_
    IDENT = not any_

    def pre(x):
        return x != 0

    if any_:

        def combine(a, b):
            return (a[0] | b[0],)
    else:

        def combine(a, b):
            return (a[0] & b[0],)

    def init():
        return (IDENT,)

    def final(d0, d1, o, s, n, p1, p2):
        d0[o] = s[0]

    name = "any" if any_ else "all"
    return make(name, B, (B,), B, pre=pre, init=init, combine=combine, final=final)


@functools.cache
def nonzero(CT) -> Callable:
    """``pre`` of ``count_nonzero``: 1 for each element that is not 0."""

    def pre(x):
        return CT(x != 0)

    return pre


# --------------------------------------------------------------------- argmin, argmax
@functools.cache
def arg(ct: DType, largest: bool, skip_nan: bool = False) -> Reducer:
    """``argmax``/``argmin``: the state is ``(value, index)``; the better value wins, and of
    equal values the lower index (the first occurrence, as NumPy).  NaN counts as the
    extreme (NumPy); ``nanargmax`` ignores NaN and leaves ``INDEX_NONE`` for an all-NaN
    slice (the caller raises NumPy's error)."""
    IDENT = ct.numpy.type(np.nan) if (skip_nan and ct.is_float) else extreme(ct, largest)
    NONE = INDEX_NONE
    IDX = I64

    # ``&``/``|`` rather than ``and``/``or``: short-circuits compiled to branches, and the
    # per-element merge was the kernel's bound (H100, argmax of 1 GiB float32: 2020 -> 2814
    # GB/s, torch 2925)
    if not skip_nan:

        def better(v, b):  # v beats b: b is not NaN, and v is larger or NaN
            if largest:
                return not ((v <= b) | ember.isnan(b))
            return not ((v >= b) | ember.isnan(b))

        def same(v, b):
            return (v == b) | (ember.isnan(v) & ember.isnan(b))
    else:

        def better(v, b):  # v is not NaN, and larger or b is NaN
            if largest:
                return not ((v <= b) | ember.isnan(v))
            return not ((v >= b) | ember.isnan(v))

        def same(v, b):
            return v == b

    def init():
        return (IDENT, IDX(NONE))

    def combine(a, b):
        if better(b[0], a[0]) | (same(b[0], a[0]) & (b[1] < a[1])):
            return b
        return a

    def step(s, v, j):
        return combine(s, (v, IDX(j)))

    def later(a, b):
        # ``a`` holds an element before ``b``'s: ``b`` wins only by a better value
        if better(b[0], a[0]):
            return b
        return a

    def step4(s, v0, v1, v2, v3, j0, j1, j2, j3):
        # a thread's elements come in index order: three strict comparisons, then one
        # full merge with the state (which may be the identity, index INDEX_NONE)
        a = later((v0, IDX(j0)), (v1, IDX(j1)))
        b = later((v2, IDX(j2)), (v3, IDX(j3)))
        return combine(s, later(a, b))

    def final(d0, d1, o, s, n, p1, p2):
        d0[o] = s[1]

    tag = ("nanarg" if skip_nan else "arg") + ("max" if largest else "min")
    _named(tag, better=better, same=same, later=later)
    return make(
        f"{tag}_{ct.name}", ct, (ct, I64), ct, init=init, step=step, step4=step4,
        combine=combine, final=final,
    )  # fmt: skip


# --------------------------------------------------------------------- variance
def _welford(ACC, skip_nan: bool) -> dict:
    """Welford's update per element, Chan et al.'s merge of ``(n, mean, m2)`` states."""

    def init():
        return (ACC(0), ACC(0), ACC(0))

    def combine(a, b):
        if b[0] == 0:
            return a
        if a[0] == 0:
            return b
        n = a[0] + b[0]
        d = b[1] - a[1]
        f = b[0] / n
        return (n, a[1] + d * f, (a[2] + b[2]) + d * d * a[0] * f)

    def step(s, v, j):
        if skip_nan and ember.isnan(v):
            return s
        n = s[0] + 1
        d = v - s[1]
        m = s[1] + d / n
        return (n, m, s[2] + d * (v - m))

    def step4(s, v0, v1, v2, v3, j0, j1, j2, j3):
        m = ((v0 + v1) + (v2 + v3)) * ACC(0.25)
        e0, e1, e2, e3 = v0 - m, v1 - m, v2 - m, v3 - m
        return combine(s, (ACC(4), m, (e0 * e0 + e1 * e1) + (e2 * e2 + e3 * e3)))

    fns = {"init": init, "combine": combine, "step": step}
    if not skip_nan:  # nanvar steps one element at a time (a NaN must not enter a group)
        fns["step4"] = step4
    return fns


def _welford_complex(ACC, RT, skip_nan: bool) -> dict:
    """:func:`_welford` for complex data: ``(n, mean, m2)`` with a real ``n`` and ``m2``
    (the sum of ``|x - mean|**2``: the variance of the real and imaginary parts added)."""

    def norm(d):
        return d.real * d.real + d.imag * d.imag

    def init():
        return (RT(0), ACC(0), RT(0))

    def combine(a, b):
        if b[0] == 0:
            return a
        if a[0] == 0:
            return b
        n = a[0] + b[0]
        d = b[1] - a[1]
        f = b[0] / n
        return (n, a[1] + d * f, (a[2] + b[2]) + norm(d) * a[0] * f)

    def step(s, v, j):
        if skip_nan and v != v:
            return s
        n = s[0] + 1
        d = v - s[1]
        m = s[1] + d * (1 / n)
        e = v - m
        return (n, m, s[2] + (d.real * e.real + d.imag * e.imag))

    def step4(s, v0, v1, v2, v3, j0, j1, j2, j3):
        m = ((v0 + v1) + (v2 + v3)) * RT(0.25)
        return combine(s, (RT(4), m, (norm(v0 - m) + norm(v1 - m)) + (norm(v2 - m) + norm(v3 - m))))

    _named("cwelford", norm=norm)
    fns = {"init": init, "combine": combine, "step": step}
    if not skip_nan:
        fns["step4"] = step4
    return fns


@functools.cache
def moments(acc: DType, out: DType, what: str, skip_nan: bool = False) -> Reducer:
    """``var``/``std`` (``p2`` is the correction) and ``var_mean``/``std_mean`` (``d1`` gets
    the mean); ``skip_nan``: of the elements that are not NaN (NumPy's nanvar: NaN, not
    inf, when there are no more of them than the correction)."""
    ACC = acc.real  # the count and the squared deviations are real
    root = what.startswith("std")
    with_mean = what.endswith("_mean")

    def spread(s, p2):
        dof = s[0] - ACC(p2)
        if skip_nan and dof <= ACC(0):
            return dof / ACC(0) * ACC(0)  # NaN
        v = s[2] / max(dof, ACC(0))  # NumPy's var: inf or NaN when n <= ddof
        if root:
            v = ember.sqrt(v)
        return v

    tag = ("nan" if skip_nan else "") + what
    _named(tag, spread=spread)
    if with_mean:  # (d1 is of the mean's dtype only here: complex data's is complex)

        def final(d0, d1, o, s, n, p1, p2):
            d0[o] = d0.dtype(spread(s, p2))
            if s[0] > 0:
                d1[o] = d1.dtype(s[1])
            else:
                d1[o] = d1.dtype(s[0] / s[0])
    else:

        def final(d0, d1, o, s, n, p1, p2):
            d0[o] = d0.dtype(spread(s, p2))

    if acc.is_complex:
        fns, state = _welford_complex(acc, ACC, skip_nan), (ACC, acc, ACC)
    else:
        fns, state = _welford(ACC, skip_nan), (acc, acc, acc)
    return make(f"{tag}_{acc.name}", acc, state, acc, final=final, p2=ACC, **fns)
