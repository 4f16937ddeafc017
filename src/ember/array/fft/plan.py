"""Plans of Ember's own FFT (host side, no device work): how a length ``n`` is cut into
passes of the kernel in :mod:`.kernels`, and the twiddle tables they read.

A *smooth* length (prime factors 2, 3, 5, 7 only) is ``n = R_1 * ... * R_P`` with the
fewest passes whose radices fit a block (:class:`Geometry`), the factors spread evenly.
Every other length is done by Bluestein's algorithm (1970; chirp-z): with
``w[j] = exp(-i pi j^2 / n)``, ``X[k] = w[k] * sum_j (x[j] w[j]) conj(w[k - j])``, a
convolution done as two power-of-two FFTs of length ``M >= 2n - 1``, the FFT of the chirp
(``conj(w)``, wrapped) precomputed here.

Tables are computed in float64 (``j^2 mod 2n`` in integers, so the chirp's angles are exact
before rounding) and cast to the transform's dtype; a plan keeps them in one array, uploaded
once per device.  A pass's global twiddles ``W_L^e`` (``e < L``, up to ``n``) come from two
tables of about ``sqrt(L)`` entries each (``W_L^(hQ) * W_L^l`` for ``e = hQ + l``): a few KiB
that stay in cache instead of an ``n``-entry table read as much as the data.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ember.array.fft import kernels as k
from ember.dtypes import DType

BLUESTEIN_POW2 = True  # Bluestein's inner transforms have power-of-two length


@dataclass(frozen=True)
class Geometry:
    """How the pass kernel is shaped on a device: ``cap`` complex elements per shared buffer
    (two buffers), ``block`` threads; lengths up to ``single`` take one pass, longer ones
    passes of radix at most ``rmax`` (so a block holds ``cap / rmax`` lines, enough adjacent
    elements per row of lines for whole memory transactions); ``fixed``: passes run the
    kernel specialized for their shape (:mod:`.fixed`) where it fits (GPUs: a compile per
    pass shape buys fewer instructions per element)."""

    cap: int
    block: int
    single: int
    rmax: int
    fixed: bool = False


def geometry(be, ct: DType) -> Geometry:
    """The pass kernel's shape for complex dtype ``ct`` on backend ``be``'s device.

    GPUs: two shared buffers of 16 KiB (2048 complex64 or 1024 complex128), 256 threads,
    global passes of radix <= 256 (8 complex64 / 4 complex128 lines per block: 64-byte
    rows).  CPU devices (work-groups run as loops; local memory is ordinary memory):
    4096-element buffers, 64 work-items, no coalescing constraint."""
    dev = be.device
    if dev.kind == "CPU":
        cap, block = 4096, min(64, dev.max_threads_per_block)
        return Geometry(cap, block, cap, cap)
    cap, block = 16384 // ct.itemsize, min(256, dev.max_threads_per_block)
    while cap > 64 and 2 * k.shared_size(cap, block) * ct.itemsize > dev.shared_memory_per_block:
        cap //= 2
    return Geometry(cap, block, cap, cap // max(1, 64 // ct.itemsize), fixed=True)


# --------------------------------------------------------------------- factoring
def factors(n: int) -> list[int] | None:
    """The prime factors of ``n`` (ascending) when they are all 2, 3, 5 or 7, else None."""
    out = []
    for p in (2, 3, 5, 7):
        while n % p == 0:
            out.append(p)
            n //= p
    return out if n == 1 else None


def split(n: int, rmax: int) -> list[int]:
    """``n`` (smooth) as the fewest factors ``<= rmax`` (more for primes above ``rmax``
    cannot happen: 7 <= rmax), as even as a greedy fill makes them, largest first."""
    primes = factors(n) or []
    parts = max(1, math.ceil(math.log(n) / math.log(rmax) - 1e-9)) if n > 1 else 1
    while True:
        bins = [1] * parts
        for p in sorted(primes, reverse=True):
            i = min(range(parts), key=lambda b: bins[b])
            if bins[i] * p > rmax:
                break
            bins[i] *= p
        else:
            return sorted(bins, reverse=True)
        parts += 1


def stages(r: int) -> list[int]:
    """The butterfly radices of an ``r``-point block DFT: 7s, 5s, 3s, then the power of
    two as 8s with one 4 or 2 (or two 4s instead of 8 and 2)."""
    out = []
    for p in (7, 5, 3):
        while r % p == 0:
            out.append(p)
            r //= p
    e = r.bit_length() - 1
    eights, rest = divmod(e, 3)
    if rest == 1 and eights:
        out += [8] * (eights - 1) + [4, 4]
    else:
        out += [8] * eights + ([1 << rest] if rest else [])
    return out


def unpack(code: int) -> tuple[int, ...]:
    """The radices packed in ``code`` (:func:`pack`), first stage first."""
    out = []
    while code:
        out.append(code & ((1 << k.RADIX_BITS) - 1))
        code >>= k.RADIX_BITS
    return tuple(out)


def pack(radices: list[int]) -> int:
    """The radices packed 4 bits each, the first stage lowest (the kernel's ``code``)."""
    code = 0
    for i, r in enumerate(radices):
        code |= r << (k.RADIX_BITS * i)
    return code


# --------------------------------------------------------------------- tables
def roots(length: int, count: int, step: int = 1) -> np.ndarray:
    """``exp(-2 pi i (e * step mod length) / length)`` for ``e < count``, in complex128."""
    e = (np.arange(count, dtype=np.int64) * step) % length
    angle = (2 * np.pi / length) * e
    return np.exp(-1j * angle)


@dataclass(frozen=True)
class Pass:
    """One launch of the pass kernel: radix ``r`` after ``ns`` points are done
    (``ns`` 1: no global twiddles), butterfly stages ``code``; ``gq`` (log2 of ``Q``),
    ``gc``/``gf`` (offsets of the coarse and fine twiddle tables) and ``iw`` (the block
    stages' ``W_r`` table) index the plan's table."""

    r: int
    ns: int
    code: int
    gq: int
    gc: int
    gf: int
    iw: int


class _Tables:
    """Tables appended to one complex128 array; offsets are element indices."""

    def __init__(self):
        self.parts: list[np.ndarray] = []
        self.size = 0

    def add(self, values: np.ndarray) -> int:
        at = self.size
        self.parts.append(values)
        self.size += len(values)
        return at

    def array(self) -> np.ndarray:
        return np.concatenate(self.parts) if self.parts else np.ones(1, np.complex128)


def _passes(n: int, g: Geometry, tables: _Tables) -> tuple[Pass, ...]:
    radices = [n] if n <= g.single else split(n, g.rmax)
    passes, ns = [], 1
    for r in radices:
        st = stages(r) if r > 1 else []
        iw = tables.add(roots(r, r)) if len(st) > 1 else 0
        gq = gc = gf = 0
        if ns > 1:
            length = ns * r
            gq = max(1, (length.bit_length() + 1) // 2)
            q = 1 << gq
            gc = tables.add(roots(length, -(-length // q), q))
            gf = tables.add(roots(length, q))
        passes.append(Pass(r, ns, pack(st), gq, gc, gf, iw))
        ns *= r
    return tuple(passes)


@dataclass(frozen=True, eq=False)
class Plan:
    """How to transform length ``n``: ``passes`` (smooth ``n``), or Bluestein's
    ``passes`` (length ``m``) with the chirp tables at ``w``, ``wconj`` (``n`` entries,
    zero-padded to ``m``) and ``kernel`` (the chirp's FFT, conjugated, divided by ``m``);
    a *half* plan (:func:`half_plan`) has the passes of ``n / 2`` and ``W_n^k``, ``k < n/2``,
    at ``extra``.  ``table`` holds every table (complex128; the engine casts and uploads)."""

    n: int
    m: int
    passes: tuple[Pass, ...]
    table: np.ndarray
    bluestein: bool = False
    w: int = 0
    wconj: int = 0
    kernel: int = 0
    extra: int = 0

    @property
    def launches(self) -> int:
        return len(self.passes) * (2 if self.bluestein else 1)


@functools.lru_cache(maxsize=128)
def plan(n: int, g: Geometry) -> Plan:
    """The plan of a length-``n`` transform on a device of geometry ``g`` (cached)."""
    tables = _Tables()
    if factors(n) is not None:
        passes = _passes(n, g, tables)
        return Plan(n, n, passes, tables.array())
    m = 1 << (2 * n - 2).bit_length()  # the power of two >= 2n - 1
    passes = _passes(m, g, tables)
    j = np.arange(n, dtype=np.int64)
    chirp = np.exp(-1j * np.pi * ((j * j) % (2 * n)) / n)
    pad = np.zeros(m - n, np.complex128)
    w = tables.add(np.concatenate([chirp, pad]))
    wconj = tables.add(np.concatenate([chirp.conj(), pad]))
    b = np.zeros(m, np.complex128)
    b[:n] = chirp.conj()
    b[m - n + 1 :] = chirp[1:][::-1].conj()
    kernel = tables.add(np.fft.fft(b).conj() / m)
    return Plan(n, m, passes, tables.array(), True, w, wconj, kernel)


def halvable(n: int, g: Geometry, one_pass: bool) -> bool:
    """Whether a real transform of length ``n`` can run as a complex one of ``n / 2``
    (even, smooth half; ``one_pass``: the half fits one pass, which the ``r2c``
    post-processing needs)."""
    if n % 2 or n < 4 or factors(n // 2) is None:
        return False
    return not one_pass or n // 2 <= g.single


@functools.lru_cache(maxsize=64)
def half_plan(n: int, g: Geometry) -> Plan:
    """The plan of a real length-``n`` transform done at length ``n / 2`` (see
    :func:`halvable`), with ``W_n^k`` for ``k < n / 2`` at ``extra``."""
    tables = _Tables()
    passes = _passes(n // 2, g, tables)
    extra = tables.add(roots(n, n // 2))
    return Plan(n, n // 2, passes, tables.array(), extra=extra)
