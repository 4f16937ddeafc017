"""NumPy's ``poly`` (a polynomial from its roots), ``polydiv`` (polynomial long division)
and ``sort_complex``, in the style of :mod:`ember.array.polynomials` (coefficients highest
power first, on the device).

- ``poly`` multiplies out ``prod(x - z_i)`` by repeated convolution, as NumPy does: one
  :func:`~ember.array.polynomials.polymul` (``ember.convolve``) per root with the pair
  ``[1, -z_i]``, the pairs made at once as one ``(n, 2)`` array.  A square matrix gives
  its characteristic polynomial through ``ember.linalg.eigvals`` (which runs on the host,
  as :func:`ember.roots` notes).  Complex roots that come in conjugate pairs give real
  coefficients, checked by comparing the sorted roots with their sorted conjugates on the
  device (one boolean read back).
- ``polydiv`` is NumPy's long division: a host loop over the ``len(u) - len(v) + 1``
  quotient terms, each a few device operations on 0-d and 1-d arrays (so ``u`` and ``v``
  are never read back), then the remainder's leading near-zeros (``|r| <= 1e-8``, NumPy's
  ``allclose`` test) are counted on the device and dropped (one int read back).
- ``sort_complex`` sorts along the last axis by real part, then imaginary part: a stable
  ``ember.lexsort`` of the two parts and one gather (``ember.sort`` refuses complex
  numbers); real input is sorted as it is and converted to NumPy's complex dtype.
"""

from __future__ import annotations

import ember
from ember import dtypes
from ember.array import manipulation
from ember.array.creation import operand as _arr
from ember.array.ndarray import ndarray
from ember.array.polynomials import polymul
from ember.array.signal import _vector

C64, C128 = dtypes.complex64, dtypes.complex128


def sort_complex(a) -> ndarray:
    """A copy of ``a`` sorted along its last axis in lexicographic order (real part, then
    imaginary part), complex (NumPy's ``sort_complex``): int8, int16, uint8 and uint16
    input give complex64, other real dtypes complex128, complex ones keep their dtype."""
    x = _arr(a, "sort_complex")
    if x.ndim == 0:
        raise ValueError("ember.sort_complex: a 0-d array cannot be sorted; pass an array of "
                         "at least one dimension")  # fmt: skip
    if not x.dtype.is_complex:
        to = C64 if x.dtype.name in ("int8", "int16", "uint8", "uint16") else C128
        return manipulation.astype(ember.sort(x, axis=-1), to)
    order = ember.lexsort((ember.imag(x), ember.real(x)), axis=-1)
    return ember.take_along_axis(x, order, axis=-1)


def _zeros_dtype(dt: dtypes.DType) -> dtypes.DType:
    """NumPy's ``mintypecode`` for ``poly``'s roots: float32 and the complex dtypes stay,
    every other dtype becomes float64."""
    return dt if dt in (dtypes.float32, C64, C128) else dtypes.float64


def poly(seq_of_zeros):
    """The coefficients (highest power first, leading 1) of the monic polynomial whose
    roots are ``seq_of_zeros`` (NumPy's ``poly``); a non-empty square matrix gives its
    characteristic polynomial (its eigenvalues by ``ember.linalg.eigvals``, on the host).

    Multiplied out by repeated convolution on the device; float64 for integer roots
    (float32 and complex roots keep their dtype), real when complex roots come in
    conjugate pairs.  No roots give the Python float ``1.0``, as NumPy."""
    z = _arr(seq_of_zeros, "poly")
    z = manipulation.reshape(z, (1,)) if z.ndim == 0 else z
    if z.ndim == 2 and z.shape[0] == z.shape[1] and z.shape[0] != 0:
        z = ember.linalg.eigvals(z)
    elif z.ndim == 1:
        z = manipulation.astype(z, _zeros_dtype(z.dtype), copy=False)
    else:
        raise ValueError(f"ember.poly: input must be 1d or non-empty square 2d array, got "
                         f"shape {z.shape}")  # fmt: skip
    n = z.shape[0]
    if n == 0:
        return 1.0
    pairs = manipulation.stack([ember.ones(n, z.dtype, device=z.backend), -z], axis=1)
    a = ember.ones(1, z.dtype, device=z.backend)
    for i in range(n):
        a = polymul(a, pairs[i])
    if a.dtype.is_complex:
        roots = manipulation.astype(z, C128, copy=False)
        if bool(ember.all(sort_complex(roots) == sort_complex(ember.conj(roots)))):
            a = manipulation.astype(ember.real(a), a.dtype.real)
    return a


def polydiv(u, v) -> tuple[ndarray, ndarray]:
    """The quotient and remainder of the polynomial division ``u / v`` (coefficients
    highest power first; NumPy's ``polydiv``): ``(q, r)`` with ``u = q * v + r``, float
    (float64 for integers) of the promoted dtype.  NumPy's long division, one quotient
    term per step on the device; the remainder's leading terms with ``|r| <= 1e-8`` are
    dropped (at least one stays).  A zero leading coefficient of ``v`` divides by zero
    (inf/NaN results, as NumPy's)."""
    u, v = _vector(u, "polydiv", "u"), _vector(v, "polydiv", "v")
    if u.shape[0] == 0 or v.shape[0] == 0:
        raise ValueError("ember.polydiv: u and v must have at least one coefficient")
    u = manipulation.astype(u, ember.result_type(u, 0.0), copy=False)
    v = manipulation.astype(v, ember.result_type(v, 0.0), copy=False)
    w = ember.result_type(u, v)
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = 1.0 / v[:1]  # (one-element slices: no scalar is read back)
    q = ember.zeros(max(m - n + 1, 1), w, device=u.backend)
    r = manipulation.astype(u, w)
    for k in range(m - n + 1):
        d = scale * r[k : k + 1]
        q[k : k + 1] = d
        seg = r[k : k + n + 1]
        ember.subtract(seg, d * v, out=seg)
    small = manipulation.astype(ember.abs(r) <= 1e-8, dtypes.int64)
    lead = int(ember.sum(ember.cumprod(small)))  # the leading run of near-zeros
    return q, r[min(lead, r.shape[0] - 1) :]


__all__ = ["sort_complex", "poly", "polydiv"]
