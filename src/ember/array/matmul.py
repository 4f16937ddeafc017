"""The matrix-multiply family: ``matmul`` (``@``), ``tensordot``, ``vecdot``, ``outer``,
``dot``, ``inner`` and ``einsum``.

Every product ends in :func:`gemm`: a batch of ``(M, K) @ (K, N)`` products whose operands
are strided views (transposes and broadcast batch axes cost no copy).  It runs the device's
vendor BLAS where the backend offers one (``backend.blas()``: cuBLAS on CUDA, see
:mod:`ember.backends.cuda.blas`) for float16/32/64, bfloat16 and complex64/128, and Ember's
own tiled kernel (:mod:`ember.array.gemm`; 16-bit floats accumulate in float32) otherwise -
other dtypes, other devices, or ``EMBER_BLAS=ember``.  float32 products on the vendor path
are IEEE float32 unless ``EMBER_MATMUL_TF32=1`` allows TF32 tensor cores (about 10 bits of
mantissa: faster, less accurate than NumPy).

Result dtypes follow NumPy (``int8 @ int8`` is int8 and wraps; ``bool @ bool`` is a
logical or of ands); integers are accumulated in 64 bits and wrapped to the result type,
which gives NumPy's results exactly.
"""

from __future__ import annotations

import math

from ember import dtypes
from ember.array import broadcast
from ember.array.core import make as _make
from ember.array.ndarray import ndarray, not_on_device
from ember.errors import axis_error
from ember.runtime.memory import allocate

# (the vendor binding's TYPES table)
VENDOR_DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128")


# --------------------------------------------------------------------- matmul
def matmul(x1: ndarray, x2: ndarray, /, *, out: ndarray | None = None) -> ndarray:
    """The matrix product with NumPy's (and the Array API's) rules: a 1-d first operand
    is a row, a 1-d second operand a column (their axis is removed from the result), the
    last two axes multiply and the others broadcast as a batch.  ``out`` (NumPy's): an
    ember array of the result's shape that receives it, cast to its dtype.

    Raises
    ------
    ValueError
        For 0-d operands or when the contracted axes differ in length.
    """
    if out is not None:
        from ember.array.manipulation import into

        return into(out, matmul(x1, x2), "matmul")
    if (
        type(x1) is ndarray and type(x2) is ndarray and (x1._c or x1.c_strided)
        and (x2._c or x2.c_strided) and x1.backend is x2.backend
    ):  # the small-product path (views too: c_strided computes _c once)  # fmt: skip
        run = _FAST.get((x1.dtype, x2.dtype, x1.backend))
        if run is None:
            run = _fast_entry(x1, x2)
        if run and len(x1.shape) == 2 == len(x2.shape) and x1.shape[1] == x2.shape[0] > 0:
            return run(x1, x2)
    _check(x1, x2, "matmul")
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError("matmul: operands must have at least 1 dimension (use * for scalars)")
    a = x1.reshape(1, x1.shape[0]) if x1.ndim == 1 else x1
    b = x2.reshape(x2.shape[0], 1) if x2.ndim == 1 else x2
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(
            f"matmul: input operand 1 has a mismatch in its core dimension 0, with gufunc "
            f"signature (n?,k),(k,m?)->(n?,m?) (size {b.shape[-2]} is different from "
            f"{a.shape[-1]}); shapes {x1.shape} and {x2.shape}"
        )
    batch = broadcast.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    out = gemm(a, b, batch)
    shape = (
        batch + ((a.shape[-2],) if x1.ndim > 1 else ()) + ((b.shape[-1],) if x2.ndim > 1 else ())
    )
    return out if out.shape == shape else out.reshape(shape)


_FAST: dict = {}  # (dtype, dtype, backend) -> the 2-d product (see _fast_entry), or False
SMALL_PRODUCT = 64 * 64 * 64  # multiply-adds up to which a 2-d product is Ember's kernel


def _fast_entry(a: ndarray, b: ndarray):
    """For C-contiguous 2-d operands of one dtype: a function doing ``a @ b`` with no layout
    analysis, so a small product costs an allocation and one launch or library call.  False
    for operands of two dtypes.

    With ``EMBER_BLAS=auto`` and a vendor BLAS, products of more than :data:`SMALL_PRODUCT`
    multiply-adds go to the library (``C^T = B^T A^T``, both op N) and smaller ones to
    Ember's kernel, whose bound launch costs less host time than a cuBLAS call (H100,
    64 x 64 float32: ~11 us against ~18, PyTorch ~19); without one, or with
    ``EMBER_BLAS=ember``, every product is Ember's kernel.  The setting is read per call."""
    from ember.config import settings

    be, dt = a.backend, a.dtype
    if b.dtype is not dt:
        _FAST[(a.dtype, b.dtype, be)] = False
        return False
    kernel = _kernel_entry(a)
    values = settings.values
    blas = _installed(be, dt)  # (whatever the setting: it is read per call)
    if blas is None:
        _FAST[(a.dtype, b.dtype, be)] = kernel
        return kernel
    name, stream = dt.name, be.default_stream
    pointer, gemm_call = be.native_pointer, blas.gemm

    def run(a: ndarray, b: ndarray) -> ndarray:
        m, k = a.shape
        n = b.shape[1]
        if m * n * k <= SMALL_PRODUCT or values["blas"] != "auto":
            return kernel(a, b)
        out = _matrix(be, dt, m, n)
        if m and n:
            gemm_call(name, "N", "N", n, m, k, pointer(b.buffer, b.offset), n, 0,
                      pointer(a.buffer, a.offset), k, 0, pointer(out.buffer, 0), n, 0,
                      1, stream, values["matmul_tf32"])  # fmt: skip
        return out

    _FAST[(a.dtype, b.dtype, be)] = run
    return run


def _kernel_entry(a: ndarray):
    """:func:`_fast_entry`'s products by Ember's kernel: per ``(M, K, N)`` the kernel's
    launch bound after the first product (:meth:`Specialization.bind`: every argument
    fixed but the three addresses), so a small product costs an allocation and one launch."""
    be, dt = a.backend, a.dtype
    isz = dt.itemsize
    bound: dict = {}  # (M, K, N) -> the bound launch

    def run(a: ndarray, b: ndarray) -> ndarray:
        m, k = a.shape
        n = b.shape[1]
        go = bound.get((m, k, n))
        if go is None or a.offset % isz or b.offset % isz:
            return first(a, b, m, k, n)
        out = _matrix(be, dt, m, n)
        go(out, a, b)
        return out

    def first(a: ndarray, b: ndarray, m: int, k: int, n: int) -> ndarray:
        """The checked launch; it binds the launch when it read ``a`` and ``b`` in place."""
        if not (m and n and k) or a.offset % isz or b.offset % isz:
            return _general(a, b)
        out = ndarray((m, n), dt, allocate(be, m * n * isz), be)
        kernel, grid, block, args = _kernel_call(a, b, out, ())
        kernel[grid, block](*args)
        in_place = all(v.buffer is x.buffer and v.offset == x.offset
                       for v, x in zip(args[:3], (out, a, b), strict=True))  # fmt: skip
        if in_place and (m, k, n) not in bound:
            go = kernel.dispatch(args).bind(args, grid, block, {0: (0, 0), 1: (1, 0), 2: (2, 0)})
            if go is not None:
                if len(bound) >= BOUND_KEPT:
                    bound.clear()
                bound[(m, k, n)] = go
        return out

    run.bound = bound  # (what tests look at)
    return run


BOUND_KEPT = 256  # bound shapes per (dtype, backend)


def _matrix(be, dt: dtypes.DType, m: int, n: int) -> ndarray:
    """A new C-contiguous ``(m, n)`` array, made without ``ndarray.__init__``'s checks (the
    fast paths' output: every slot is set here)."""
    buffer = allocate(be, m * n * dt.itemsize)
    return _make(ndarray, buffer, (m, n), (n * dt.itemsize, dt.itemsize), dt, be, 0, True)


def _general(a: ndarray, b: ndarray) -> ndarray:
    return gemm(a, b, ())


def _check(x1, x2, what: str) -> None:
    for x in (x1, x2):
        if not isinstance(x, ndarray):
            raise not_on_device(x, f"ember.{what}")
    if x1.backend is not x2.backend:
        raise ValueError(f"ember.{what}: the operands live on different devices")


def result_dtype(a: ndarray, b: ndarray) -> dtypes.DType:
    from ember.frontend.types import promote_strong

    return promote_strong(a.dtype, b.dtype)


def gemm(a: ndarray, b: ndarray, batch: tuple[int, ...]) -> ndarray:
    """``a @ b`` for ``a`` of shape ``(..., M, K)`` and ``b`` of ``(..., K, N)`` whose
    batch axes broadcast to ``batch``: a new C-contiguous ``batch + (M, N)`` array."""
    dt = result_dtype(a, b)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    be = a.backend
    shape = batch + (m, n)
    out = ndarray(shape, dt, allocate(be, math.prod(shape) * dt.itemsize), be)
    if out.size == 0:
        return out
    if k == 0:
        out.backend.fill_zero(out.buffer, out.offset, out.nbytes)
        return out
    if a.dtype is not dt:  # NumPy casts to the common type first (and one kernel per dtype)
        a = a.astype(dt)
    if b.dtype is not dt:
        b = b.astype(dt)
    blas = vendor(be, dt)
    if blas is not None:
        from ember.array import blas_call

        if blas_call.run(blas, a, b, out, batch):
            return out
    _ember_gemm(a, b, out, batch)
    return out


def vendor(be, dt: dtypes.DType):
    """The backend's vendor BLAS when it should compute a ``dt`` product, else None."""
    from ember.config import settings

    if settings.blas == "ember":
        return None
    return _installed(be, dt)


def _installed(be, dt: dtypes.DType):
    """The backend's vendor BLAS when it can compute a ``dt`` product, else None."""
    if dt.name not in VENDOR_DTYPES:
        return None
    lib = be.blas()
    if lib is None:
        _warn_missing(be, "blas")
    return lib


_warned: set = set()


def _warn_missing(be, what: str) -> None:
    """Once per backend: the vendor library is absent, Ember's own code runs instead."""
    reason = be.vendor_missing.get(what)
    if reason and (id(be), what) not in _warned:
        import warnings

        from ember.errors import EmberPerformanceWarning

        _warned.add((id(be), what))
        warnings.warn(
            f"{reason}; matrix products run Ember's own (slower) kernel meanwhile",
            EmberPerformanceWarning,
            stacklevel=4,
        )


# --------------------------------------------------------------------- the Ember kernel
def compute_dtype(dt: dtypes.DType) -> dtypes.DType:
    """What the kernel accumulates in: float32 for 16-bit floats (float16, bfloat16), int64
    for integers and bools (complex: its own dtype)."""
    if dt.is_inexact:
        return dtypes.float32 if dt.is_narrow else dt
    return dtypes.int64


def _elements(x: ndarray, shape) -> tuple[int, ...]:
    return tuple(s // x.dtype.itemsize for s in broadcast.stretch(x.shape, x.strides, shape))


def _flat(x: ndarray) -> ndarray:
    """A 1-d view from ``x``'s first element to its last (non-negative strides)."""
    _, high = x._extent()
    n = max(1, high // x.dtype.itemsize)
    v = ndarray((n,), x.dtype, x.buffer, x.backend, (x.dtype.itemsize,), x.offset)
    v._c = True
    return v


def batch_strides(a: ndarray, b: ndarray, batch) -> tuple[tuple, tuple, tuple] | None:
    """The batch coalesced to at most two axes: ``(dims, a strides, b strides)`` in
    elements, or None when more than two axes remain."""
    full_a = _elements(a, batch + a.shape[-2:])[: len(batch)]
    full_b = _elements(b, batch + b.shape[-2:])[: len(batch)]
    c_strides = []
    step = a.shape[-2] * b.shape[-1]
    for n in reversed(batch):
        c_strides.append(step)
        step *= n
    dims, (sa, sb, _) = broadcast.coalesce(
        batch or (1,), [full_a or (0,), full_b or (0,), tuple(reversed(c_strides)) or (0,)]
    )
    if len(dims) > 2:
        return None
    if len(dims) == 1:
        return (1, dims[0]), (0, sa[0]), (0, sb[0])
    return dims, sa, sb


def _ember_gemm(a: ndarray, b: ndarray, out: ndarray, batch) -> None:
    kernel, grid, block, args = _kernel_call(a, b, out, batch)
    kernel[grid, block](*args)


def _kernel_call(a: ndarray, b: ndarray, out: ndarray, batch) -> tuple:
    """``(kernel, grid, block, args)`` of Ember's GEMM computing ``out = a @ b``."""
    from ember.array import gemm as g
    from ember.array.manipulation import astype, broadcast_to

    gpu = _is_gpu(a.backend)
    a, b = _usable(a, gpu, "a"), _usable(b, gpu, "b")
    layout = batch_strides(a, b, batch)
    if layout is None:  # three or more batch axes that do not coalesce: materialize
        a = astype(broadcast_to(a, batch + a.shape[-2:]), a.dtype)
        b = astype(broadcast_to(b, batch + b.shape[-2:]), b.dtype)
        layout = batch_strides(a, b, batch)
    (nb0, nb1), (sa0, sa1), (sb0, sb1) = layout
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    sam, sak = (s // a.dtype.itemsize for s in a.strides[-2:])
    sbk, sbn = (s // b.dtype.itemsize for s in b.strides[-2:])
    ct = compute_dtype(out.dtype)
    kernel = g.gemm_kernel(ct, gpu, _fast(a, -1), _fast(b, -1))
    ts, _, tile, _ = g.geometry(gpu, ct.itemsize > 4, ct.itemsize > 8, ct.is_complex)
    nz = nb0 * nb1
    grid = (-(-n // tile), -(-m // tile), min(nz, 65535))
    args = (_flat(out), _flat(a), _flat(b), m, n, k, sam, sak, sbk, sbn, nz, nb1, sa0, sa1,
            sb0, sb1)  # fmt: skip
    return kernel, grid, (ts, ts, 1), args


def _fast(x: ndarray, axis: int) -> bool:
    """Whether ``axis`` of the matrix ``x`` is the one to walk fastest when loading."""
    return x.strides[axis] == x.dtype.itemsize or x.shape[axis] == 1


def _usable(x: ndarray, gpu: bool, which: str) -> ndarray:
    """``x`` as the kernel can read it: non-negative strides (it indexes from the first
    element) and, on CPU devices, rows contiguous (one kernel layout there: fewer
    compiles; a copy costs little next to the product)."""
    if any(s < 0 for s in x.strides) or (not gpu and not _fast(x, -1)):
        return x.copy()
    return x


def _is_gpu(be) -> bool:
    return be.device.is_gpu


# --------------------------------------------------------------------- the family
def _axes(axes, ndim: int, what: str) -> list[int]:
    out = []
    for ax in axes:
        k = int(ax.__index__())
        if not -ndim <= k < ndim:
            raise axis_error(f"{what}: axis {k} is out of bounds for an array of {ndim} dimensions")
        out.append(k % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: repeated axis in {tuple(axes)}")
    return out


def tensordot(x1: ndarray, x2: ndarray, /, axes=2) -> ndarray:
    """Sum of products over the last ``axes`` axes of ``x1`` and the first ``axes`` of
    ``x2`` (an int), or over the axes pairs ``axes = (axes1, axes2)``."""
    from ember.array.manipulation import permute_dims

    _check(x1, x2, "tensordot")
    if isinstance(axes, int) or hasattr(axes, "__index__"):
        n = int(axes.__index__()) if not isinstance(axes, int) else axes
        if n < 0 or n > min(x1.ndim, x2.ndim):
            raise ValueError(f"tensordot: axes={n} must be in [0, {min(x1.ndim, x2.ndim)}]")
        ax1, ax2 = list(range(x1.ndim - n, x1.ndim)), list(range(n))
    else:
        first, second = axes
        first = [first] if isinstance(first, int) else list(first)
        second = [second] if isinstance(second, int) else list(second)
        if len(first) != len(second):
            raise ValueError("tensordot: the two sequences of axes must have the same length")
        ax1, ax2 = _axes(first, x1.ndim, "tensordot"), _axes(second, x2.ndim, "tensordot")
    for i, j in zip(ax1, ax2, strict=True):
        if x1.shape[i] != x2.shape[j]:
            raise ValueError(
                f"tensordot: shape mismatch for sum: axis {i} of x1 has {x1.shape[i]} "
                f"elements, axis {j} of x2 has {x2.shape[j]}"
            )
    free1 = [k for k in range(x1.ndim) if k not in ax1]
    free2 = [k for k in range(x2.ndim) if k not in ax2]
    kdim = math.prod(x1.shape[k] for k in ax1)
    rows, cols = math.prod(x1.shape[k] for k in free1), math.prod(x2.shape[k] for k in free2)
    a = permute_dims(x1, free1 + ax1).reshape(rows, kdim)  # (explicit: kdim may be 0)
    b = permute_dims(x2, ax2 + free2).reshape(kdim, cols)
    out = gemm(a, b, ())
    return out.reshape(tuple(x1.shape[k] for k in free1) + tuple(x2.shape[k] for k in free2))


def vecdot(x1: ndarray, x2: ndarray, /, *, axis: int = -1) -> ndarray:
    """The dot product of vectors along ``axis`` (the other axes broadcast).  A negative
    ``axis`` counts from the end of both operands (the Array API's rule).  A complex first
    operand is conjugated: ``sum(conj(x1) * x2)`` (the Array API's rule, NumPy's
    ``vecdot``)."""
    from ember.array.manipulation import moveaxis

    _check(x1, x2, "vecdot")
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError("vecdot: operands must have at least 1 dimension")
    k1 = _axes((axis,), x1.ndim, "vecdot")[0]
    k2 = _axes((axis,), x2.ndim, "vecdot")[0]
    if x1.shape[k1] != x2.shape[k2]:
        raise ValueError(
            f"vecdot: the vectors differ in length along axis {axis}: "
            f"{x1.shape[k1]} and {x2.shape[k2]} (shapes {x1.shape} and {x2.shape})"
        )
    a, b = moveaxis(x1, k1, -1), moveaxis(x2, k2, -1)
    if a.dtype.is_complex:
        from ember.array.ufuncs import conj

        a = conj(a)
    batch = broadcast.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    return gemm(_row(a), _col(b), batch).reshape(batch)


def vdot(a: ndarray, b: ndarray, /) -> ndarray:
    """NumPy's ``vdot``: the dot product of the flattened arrays, the first conjugated when
    complex (a 0-d array)."""
    _check(a, b, "vdot")
    if a.size != b.size:
        raise ValueError(f"vdot: the arrays have {a.size} and {b.size} elements")
    return vecdot(a.reshape(-1), b.reshape(-1))


def _row(x: ndarray) -> ndarray:
    """``x`` of shape ``(..., K)`` viewed as ``(..., 1, K)``."""
    from ember.array.manipulation import expand_dims

    return expand_dims(x, -2)


def _col(x: ndarray) -> ndarray:
    """``x`` of shape ``(..., K)`` viewed as ``(..., K, 1)``."""
    from ember.array.manipulation import expand_dims

    return expand_dims(x, -1)


def outer(x1: ndarray, x2: ndarray, /, out: ndarray | None = None) -> ndarray:
    """The outer product of two 1-d arrays (NumPy flattens other shapes first); ``out``:
    an array of the result's shape that receives it."""
    from ember.array import ufuncs

    _check(x1, x2, "outer")
    return ufuncs.multiply(x1.reshape(-1, 1), x2.reshape(1, -1), out=out)


def dot(a: ndarray, b: ndarray, /, out: ndarray | None = None) -> ndarray:
    """NumPy's ``dot``: inner product of vectors, matrix product of matrices, and for N-d
    arrays the sum over the last axis of ``a`` and the second-to-last of ``b``; ``out``:
    an array of the result's shape that receives it (cast to its dtype)."""
    from ember.array import ufuncs

    if out is not None:
        from ember.array.manipulation import into

        return into(out, dot(a, b), "dot")
    _check(a, b, "dot")
    if a.ndim == 0 or b.ndim == 0:
        return ufuncs.multiply(a, b)
    if b.ndim == 1:
        return tensordot(a, b, axes=([-1], [0]))
    return tensordot(a, b, axes=([-1], [-2]))


def inner(a: ndarray, b: ndarray, /) -> ndarray:
    """NumPy's ``inner``: the sum of products over the last axes of ``a`` and ``b``."""
    from ember.array import ufuncs

    _check(a, b, "inner")
    if a.ndim == 0 or b.ndim == 0:
        return ufuncs.multiply(a, b)
    return tensordot(a, b, axes=([-1], [-1]))


def einsum(
    *operands,
    out: ndarray | None = None,
    dtype=None,
    order: str = "K",
    casting: str = "safe",
    optimize=False,
) -> ndarray:
    """Einstein summation (see :mod:`ember.array.einsum`), NumPy's signature:
    ``einsum(subscripts, *operands)`` or the sublist form ``einsum(op0, sublist0, op1,
    sublist1, ..., [sublist_out])`` (integers 0-51 for the letters, ``...`` for the
    broadcast axes).  ``out``: an array of the result's shape that receives it (cast to its
    dtype); ``dtype``: the operands are converted to it first, following ``casting``
    (NumPy's rules, ``'safe'`` by default: a TypeError otherwise); ``order``: the result's
    layout (``'C'``, ``'F'``; ``'K'``/``'A'`` keep the computed one); ``optimize``
    (``False``, ``True``, ``'greedy'``, ``'optimal'`` or an ``einsum_path`` list) is accepted
    and the contraction order stays Ember's (left to right, pairwise): the same result up to
    rounding."""
    from ember.array.einsum import einsum as run
    from ember.array.manipulation import into

    if not operands:
        raise TypeError("einsum() needs the subscripts and at least one operand")
    if isinstance(operands[0], str):
        subscripts, arrays = operands[0], list(operands[1:])
    else:
        subscripts, arrays = _sublists(operands)
    if order not in ("K", "A", "C", "F"):
        raise ValueError(f"einsum: order must be one of 'K', 'A', 'C', 'F', not {order!r}")
    if not (isinstance(optimize, bool | str | list | tuple)):
        raise TypeError(f"einsum: optimize must be a bool, a str or a path, not {optimize!r}")
    if dtype is not None:
        arrays = [x.astype(dtype, casting=casting) if isinstance(x, ndarray) else x for x in arrays]
    result = run(subscripts, *arrays)
    if order in ("C", "F"):
        result = result.copy(order)
    return into(out, result, "einsum")


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _sublists(args) -> tuple[str, list]:
    """NumPy's sublist form of einsum's arguments as (subscripts, operands)."""

    def letters(sub) -> str:
        if isinstance(sub, ndarray | str) or not hasattr(sub, "__iter__"):
            raise TypeError(
                "einsum: in the sublist form each operand is followed by a list of axis "
                f"labels (integers 0-51 or ...), not {type(sub).__name__}"
            )
        text = []
        for label in sub:
            if label is Ellipsis:
                text.append("...")
            elif isinstance(label, int) and not isinstance(label, bool) and 0 <= label < 52:
                text.append(_LETTERS[label])
            else:
                raise ValueError(
                    f"einsum: a subscript label must be an int in [0, 52) or ..., not {label!r}"
                )
        return "".join(text)

    arrays, inputs = list(args[0::2]), [letters(sub) for sub in args[1::2]]
    output = None
    if len(args) % 2:  # the last entry is the output's sublist
        output = letters(arrays.pop())
    spec = ",".join(inputs) + ("" if output is None else "->" + output)
    return spec, arrays


def matvec(x1: ndarray, x2: ndarray, /, *, out: ndarray | None = None) -> ndarray:
    """NumPy's ``matvec``: the matrix-vector product over the last two axes of ``x1`` and
    the last of ``x2`` (the other axes broadcast); ``out``: an array that receives it."""
    from ember.array.manipulation import into

    _check(x1, x2, "matvec")
    if x1.ndim < 2 or x2.ndim < 1:
        raise ValueError(
            f"matvec: needs a matrix and a vector (shapes {x1.shape} and {x2.shape}): at "
            "least 2 and 1 dimensions"
        )
    return into(out, matmul(x1, x2[..., None])[..., 0], "matvec")


def vecmat(x1: ndarray, x2: ndarray, /, *, out: ndarray | None = None) -> ndarray:
    """NumPy's ``vecmat``: the vector-matrix product over the last axis of ``x1``
    (conjugated when complex, as NumPy's) and the last two of ``x2`` (the other axes
    broadcast); ``out``: an array that receives it."""
    from ember.array.manipulation import into

    _check(x1, x2, "vecmat")
    if x1.ndim < 1 or x2.ndim < 2:
        raise ValueError(
            f"vecmat: needs a vector and a matrix (shapes {x1.shape} and {x2.shape}): at "
            "least 1 and 2 dimensions"
        )
    if x1.dtype.is_complex:
        from ember.array.ufuncs import conj

        x1 = conj(x1)
    return into(out, matmul(x1[..., None, :], x2)[..., 0, :], "vecmat")
