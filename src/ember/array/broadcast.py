"""Broadcasting and the layout arithmetic of the strided kernels (host side, pure Python).

* :func:`broadcast_shapes`: NumPy's rule (align trailing axes; 1 stretches);
* :func:`stretch`: an operand's element strides for the broadcast shape (0 on stretched
  axes);
* :func:`coalesce`: merge axes that every operand walks as one (and drop length-1 axes), so
  a contiguous N-d operation becomes 1-d and most others 2-d;
* :func:`magic`: the multiplier and shift that divide by a constant (``uint32`` indices).
"""

from __future__ import annotations

import functools


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The shape all ``shapes`` broadcast to (NumPy's message when they do not)."""
    if len(shapes) == 2 and shapes[0] == shapes[1]:
        return shapes[0]
    ndim = max(map(len, shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for k, n in enumerate(shape, ndim - len(shape)):
            if n != out[k]:
                if out[k] == 1:
                    out[k] = n
                elif n != 1:
                    raise shape_error(shapes)
    return tuple(out)


def shape_error(shapes) -> ValueError:
    listed = " ".join(str(tuple(s)) for s in shapes)
    return ValueError(f"operands could not be broadcast together with shapes {listed}")


def stretch(shape, strides, out_shape) -> tuple[int, ...]:
    """Strides (any unit) of an operand of ``shape`` broadcast to ``out_shape``."""
    pad = len(out_shape) - len(shape)
    return (0,) * pad + tuple(0 if n == 1 else s for n, s in zip(shape, strides, strict=True))


def coalesce(shape, strides_list):
    """Merge adjacent axes that are contiguous with each other for every operand.

    ``strides_list`` holds one stride tuple per operand (same length as ``shape``).
    Returns the new shape and stride tuples; length-1 axes are dropped, and a shape with
    no axes left becomes ``(1,)`` for a 0-d or 1-element operation (``(0,)`` if empty).
    """
    keep = [k for k, n in enumerate(shape) if n != 1]
    if not keep:
        return (0 if 0 in shape else 1,), [(0,) for _ in strides_list]
    dims = [shape[keep[0]]]
    strides = [[s[keep[0]]] for s in strides_list]
    for k in keep[1:]:
        n = shape[k]
        if all(st[-1] == s[k] * n for st, s in zip(strides, strides_list, strict=True)):
            dims[-1] *= n
            for st, s in zip(strides, strides_list, strict=True):
                st[-1] = s[k]
        else:
            dims.append(n)
            for st, s in zip(strides, strides_list, strict=True):
                st.append(s[k])
    return tuple(dims), [tuple(st) for st in strides]


def span(shape, strides) -> tuple[int, int]:
    """Lowest and highest offset (in stride units) an operand touches (for ``size > 0``)."""
    low = high = 0
    for n, s in zip(shape, strides, strict=True):
        if s < 0:
            low += s * (n - 1)
        else:
            high += s * (n - 1)
    return low, high


@functools.lru_cache(maxsize=1024)
def magic(d: int) -> tuple[int, int]:
    """``(m, k)`` with ``r // d == (r * m) >> k`` for every ``0 <= r < 2**31``.

    Round-up method (Granlund & Montgomery 1994, theorem 4.2): with ``l = ceil(log2 d)``,
    ``k = 31 + l`` and ``m = ceil(2**k / d)``, the error ``m*d - 2**k < d <= 2**l`` keeps
    the quotient exact below ``2**31``; ``r * m < 2**64``, so the product fits ``uint64``.
    """
    if d <= 0:
        raise ValueError(f"cannot divide by {d}")
    k = 31 + (d - 1).bit_length()
    return -(-(1 << k) // d), k


def divisors(shape) -> tuple[int, ...]:
    """The ``dims`` argument of the strided kernels: ``(d, m, k)`` for every axis."""
    out: list[int] = []
    for d in shape:
        m, k = magic(max(d, 1))
        out += (d, m, k)
    return tuple(out)
