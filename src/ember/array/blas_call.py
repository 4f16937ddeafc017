"""Row-major batched products on a column-major vendor BLAS (``backend.blas()``).

``C = A @ B`` with C row-major ``(M, N)`` is, read column-major, ``C^T = B^T @ A^T``: an
``N x M`` product whose first operand is B and second A.  A row-major operand whose last
axis is contiguous is a column-major matrix transposed (op ``N`` on the transpose); one
whose second-to-last axis is contiguous is op ``T``.  Anything else (both strides > 1,
negative strides, leading dimensions the library refuses) is copied first.  Batch axes
coalesce to one stride per operand (0 for broadcast); two levels run one batched call per
outer index.
"""

from __future__ import annotations

from ember.array.ndarray import ndarray


def _operand(x: ndarray, rows: int, cols: int) -> tuple[ndarray, str, int]:
    """``(x, op, ld)`` describing the transpose of the row-major ``rows x cols`` matrix
    ``x`` as a column-major ``cols x rows`` operand (copying ``x`` when it must)."""
    isz = x.dtype.itemsize
    s_r, s_c = (s // isz for s in x.strides[-2:])
    if cols == 1:
        s_c = 1
    if rows == 1:
        s_r = max(cols, 1) if s_c == 1 else 1
    if s_c == 1 and s_r >= max(1, cols):
        return x, "N", s_r
    if s_r == 1 and s_c >= max(1, rows):
        return x, "T", s_c
    x = x.copy()
    return x, "N", max(1, cols)


def run(blas, a: ndarray, b: ndarray, out: ndarray, batch) -> bool:
    """``out = a @ b`` on the vendor library (True when done)."""
    from ember.array.matmul import batch_strides
    from ember.config import settings

    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if any(s < 0 for s in (*a.strides, *b.strides)):
        a, b = (x.copy() if any(s < 0 for s in x.strides) else x for x in (a, b))
    x, opx, ldx = _operand(b, k, n)  # the first column-major operand: B^T (N x K)
    y, opy, ldy = _operand(a, m, k)  # the second: A^T (K x M)
    layout = batch_strides(y, x, batch)
    if layout is None:  # three or more batch axes that do not coalesce: materialize them
        from ember.array.manipulation import astype, broadcast_to

        a = astype(broadcast_to(a, batch + a.shape[-2:]), a.dtype)
        b = astype(broadcast_to(b, batch + b.shape[-2:]), b.dtype)
        x, opx, ldx = _operand(b, k, n)
        y, opy, ldy = _operand(a, m, k)
        layout = batch_strides(y, x, batch)
    (nb0, nb1), (sa0, sa1), (sb0, sb1) = layout
    be = out.backend
    ptr_x = be.native_pointer(x.buffer, x.offset)
    ptr_y = be.native_pointer(y.buffer, y.offset)
    ptr_c = be.native_pointer(out.buffer, out.offset)
    isz = out.dtype.itemsize
    stream = be.default_stream
    tf32 = settings.matmul_tf32
    name = out.dtype.name
    for i in range(nb0):  # one call per outer batch index (usually one call in all)
        blas.gemm(
            name, opx, opy, n, m, k,
            ptr_x + i * sb0 * isz, ldx, sb1,
            ptr_y + i * sa0 * isz, ldy, sa1,
            ptr_c + i * nb1 * m * n * isz, n, m * n,
            nb1, stream, tf32,
        )  # fmt: skip
    return True
