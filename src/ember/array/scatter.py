"""``ufunc.at``: unbuffered in-place updates, ``a[indices] op= b`` where repeated indices
all count (NumPy's ``numpy.add.at(a, idx, b)``, the scatter-add of histogramming and
finite-element assembly).

``indices`` select elements of ``a`` as ``a[indices]`` would (ints, slices, index arrays,
masks, tuples of them, NumPy's broadcasting); the selection is made on an array of ``a``'s
element offsets, so it is checked and shaped by Ember's indexing (an index out of range
raises ``IndexError`` at the next synchronization).  ``b`` is broadcast to the selection's
shape and cast to the dtype the update computes in.  One kernel then applies every update
with a device atomic (``atomic_add``, ``atomic_sub``, ``atomic_min``, ``atomic_max``,
``atomic_and``, ``atomic_or``, ``atomic_xor``), so any order of the updates gives the same
result: exact for integers; float sums are rounded in the order the device runs them.

Atomics exist for 32- and 64-bit integers and floats (64-bit ones where the device has
``int64_atomics``).  Narrower integers and float16 are updated in a 32-bit copy written back
once (integers wrap as NumPy's do; float16 sums round once instead of after each update).

Every other ufunc of one or two operands (``multiply``, ``divide``, ``fmax``, ``power``,
``logical_and``..., and any ufunc on bool arrays) updates by a compare-and-swap loop
(:func:`cas_kernel`): read the element, compute the update in the ufunc's dtype, round or
wrap it to the array's dtype, swap it in if the element is unchanged, else retry with
the value found.  Complex arrays raise ``TypeError`` (a swap moves at most 8 bytes).
"""

from __future__ import annotations

import functools

import ember
from ember import dtypes
from ember.array import kernels, launch, manipulation
from ember.array.ndarray import ndarray, not_on_device

BLOCK = 256
# ufunc name -> (code in the kernel, integers only)
OPS = {
    "add": (0, False), "subtract": (1, False), "minimum": (2, False), "maximum": (3, False),
    "bitwise_and": (4, True), "bitwise_or": (5, True), "bitwise_xor": (6, True),
}  # fmt: skip
ATOMIC = {dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64, dtypes.float32,
          dtypes.float64}  # fmt: skip


@functools.cache
def update_kernel(code: int, dt: dtypes.DType):
    """``view[pos[i]] op= vals[i]`` for every ``i``, atomically."""
    OP = code  # noqa: N806 - a compile-time constant: the other branches fold away

    def scatter_update(n, view, pos, vals):
        i = ember.global_id()
        while i < n:
            j = pos[i]
            v = vals[i]
            if OP == 0:
                ember.atomic_add(view, j, v)
            elif OP == 1:
                ember.atomic_sub(view, j, v)
            elif OP == 2:
                ember.atomic_min(view, j, v)
            elif OP == 3:
                ember.atomic_max(view, j, v)
            elif OP == 4:
                ember.atomic_and(view, j, v)
            elif OP == 5:
                ember.atomic_or(view, j, v)
            else:
                ember.atomic_xor(view, j, v)
            i += ember.global_size()

    return kernels._named(scatter_update, f"scatter_{code}_{dt.name}")


@functools.cache
def cas_kernel(op, ct: dtypes.DType, adt: dtypes.DType, work: dtypes.DType, unary: bool):
    """``view[pos[i]] = op(view[pos[i]], vals[i])`` for every ``i`` by a compare-and-swap
    loop, for the ufuncs no device atomic computes (``multiply``, ``divide``, ``fmax``,
    ``logical_and``...): the update is computed in ``ct`` from the element read as the
    array's dtype ``adt`` and stored back (rounded, wrapped) as ``adt``, in ``work``, the
    dtype of ``view`` (``adt`` itself, or a 32-bit copy of narrower types: a CAS swaps 4 or
    8 bytes); the swap compares bit patterns, so NaN elements do not loop forever."""
    OP, CT, ADT, WORK, UNARY = op, ct, adt, work, unary  # noqa: N806 - compile-time constants
    BITS = dtypes.uint32 if work.itemsize == 4 else dtypes.uint64  # noqa: N806

    def scatter_cas(n, view, pos, vals):
        i = ember.global_id()
        while i < n:
            j = pos[i]
            v = vals[i]
            old = view[j]
            done = False
            while not done:
                if UNARY:
                    new = WORK(ADT(OP(CT(ADT(old)))))
                else:
                    new = WORK(ADT(OP(CT(ADT(old)), v)))
                seen = ember.atomic_cas(view, j, old, new)
                done = ember.bitcast(seen, BITS) == ember.bitcast(old, BITS)
                old = seen
            i += ember.global_size()

    opname = getattr(op, "__name__", "op").removeprefix("ew_")
    return kernels._named(scatter_cas, f"scatter_cas_{opname}_{ct.name}_{adt.name}")


def _offsets(view_base: int, shape: tuple[int, ...], strides: tuple[int, ...], be) -> ndarray:
    """An int64 array of ``shape``: each element's offset in the flat view."""
    off = ember.full(shape, view_base, dtype=dtypes.int64, device=be)
    for k, (n, s) in enumerate(zip(shape, strides, strict=True)):
        if n > 1 and s:
            step = ember.arange(n, dtype=dtypes.int64, device=be) * s
            off = off + manipulation.reshape(step, (n,) + (1,) * (len(shape) - k - 1))
    return off


def _work_dtype(dt: dtypes.DType, name: str) -> dtypes.DType:
    if dt in ATOMIC:
        return dt
    if dt.kind == "b" or dt.is_complex:
        raise TypeError(
            f"ember.{name}.at: {dt.name} arrays have no atomic updates; update a copy "
            "(x.astype(ember.int32) or the real and imaginary parts) and write it back"
        )
    if dt.is_integer:
        return dtypes.uint32 if dt.kind == "u" else dtypes.int32
    return dtypes.float32  # float16, bfloat16


def at(uf, a, indices, b=None) -> None:
    """``uf.at(a, indices, b)``: see the module docstring."""
    name = uf.__name__
    if not isinstance(a, ndarray):
        raise not_on_device(a, f"ember.{name}.at")
    if uf.nin == 2 and b is None:
        raise TypeError(f"ember.{name}.at: {name} takes a second operand b")
    if uf.nin == 1 and b is not None:
        raise TypeError(f"ember.{name}.at: {name} takes one operand, no b")
    if name not in OPS or a.dtype.kind == "b":
        return _at_cas(uf, a, indices, b)
    code, integers_only = OPS[name]
    if integers_only and not a.dtype.is_integer:
        raise TypeError(f"ember.{name}.at: {a.dtype.name} arrays have no {name}")
    be = a.backend
    if not isinstance(b, ndarray | bool | int | float):
        b = ember.asarray(b, device=be)  # NumPy scalars and nested lists
    out_dt = ember.result_type(a, b)  # NEP 50: Python numbers are weak
    if not _same_kind(out_dt, a.dtype):
        raise TypeError(
            f"ember.{name}.at: cannot cast the {name} of {a.dtype.name} and {out_dt.name} "
            f"back to {a.dtype.name} (same_kind); pass b as {a.dtype.name}"
        )
    work = _work_dtype(a.dtype, name)
    direct = work is a.dtype
    target = a if direct else manipulation.astype(a, work)
    view, base, strides = launch.flat(target)
    pos = _offsets(base, target.shape, strides, be)[indices]
    pos = manipulation.ascontiguousarray(pos)
    vals = b if isinstance(b, ndarray) else ember.full((), b, dtype=work, device=be)
    vals = manipulation.ascontiguousarray(
        manipulation.astype(manipulation.broadcast_to(vals, pos.shape), work)
    )
    n = pos.size
    if n:
        args = (n, view, launch.flat1(pos), launch.flat1(vals))
        launch.run(update_kernel(code, work), launch.grid(be, n, BLOCK, whole=True), BLOCK, args)
    if not direct:
        manipulation.copy_into(a, target)


def _at_cas(uf, a, indices, b) -> None:
    """``uf.at`` by :func:`cas_kernel`: any ufunc of one or two operands with one result."""
    from ember.array import rules

    name = uf.__name__
    if a.dtype.is_complex:
        raise TypeError(
            f"ember.{name}.at: {a.dtype.name} arrays have no atomic updates (a swap moves at "
            "most 8 bytes); update the real and imaginary parts, or a host copy"
        )
    be = a.backend
    if b is not None and not isinstance(b, ndarray | bool | int | float):
        b = ember.asarray(b, device=be)  # NumPy scalars and nested lists
    operands = (rules.scalar(a.dtype),) + (() if b is None else (_kernel_type(b),))
    res = uf.rule(operands)
    if not _same_kind(res.out, a.dtype):
        raise TypeError(
            f"ember.{name}.at: cannot cast its {res.out.name} results back to {a.dtype.name} "
            f"(same_kind); pass b as {a.dtype.name}"
        )
    if b is not None and res.ct.kind == "i" and name in ("pow", "power"):
        if isinstance(b, int) and b < 0:
            raise ValueError("Integers to negative integer powers are not allowed.")
    work = a.dtype if a.dtype.itemsize in (4, 8) else _work_dtype(_as_int(a.dtype), name)
    target = a if work is a.dtype else manipulation.astype(a, work)
    view, base, strides = launch.flat(target)
    pos = manipulation.ascontiguousarray(_offsets(base, target.shape, strides, be)[indices])
    if b is None:
        vals = pos
    else:
        vals = b if isinstance(b, ndarray) else ember.full((), b, dtype=res.ct, device=be)
        vals = manipulation.astype(manipulation.broadcast_to(vals, pos.shape), res.ct)
        vals = manipulation.ascontiguousarray(vals)
    n = pos.size
    if n:
        k = cas_kernel(res.op, res.ct, a.dtype, work, b is None)
        args = (n, view, launch.flat1(pos), launch.flat1(vals))
        launch.run(k, launch.grid(be, n, BLOCK, whole=True), BLOCK, args)
    if target is not a:
        manipulation.copy_into(a, target)


def _kernel_type(b):
    """``b``'s type for the ufunc's rule: an array's dtype, a Python number weak (NEP 50)."""
    from ember.array import rules

    return rules.scalar(b.dtype) if isinstance(b, ndarray) else rules.scalar_type(b)


def _as_int(dt: dtypes.DType) -> dtypes.DType:
    return dtypes.uint8 if dt.kind == "b" else dt  # bools work in a uint32 copy


def _same_kind(src: dtypes.DType, dst: dtypes.DType) -> bool:
    """NumPy's ``same_kind`` casting: safe, or within one kind (float64 -> float32)."""
    import numpy as np

    return bool(np.can_cast(src.numpy, dst.numpy, casting="same_kind"))


__all__ = ["at", "update_kernel", "OPS"]
