"""``ember.fft`` on the backend's vendor library (``Backend.fft()``: cuFFT on CUDA).

:func:`prepare` turns a call's signature (input shape, strides and dtype, axes, lengths,
kind, direction) into a :class:`Recipe`: the plans, made once, and what to do around them.
A recipe is kept per signature (:mod:`.dispatch`), so a repeated call is an allocation, the
library call(s) and at most one scaling kernel.

How arrays map onto cuFFT's advanced layout (``b * dist + i * stride`` for 1-d; nested
``embed`` lengths for 2-d and 3-d):

* transforms over the trailing ``k <= 3`` axes (c2c in any order; r2c/c2r in order) whose
  strides nest: one rank-``k`` plan, the leading axes one batch stride (``fftn`` of a
  C-contiguous array, ``rfft`` of rows);
* other axis sets: one rank-1 plan per axis (the first out of place, the rest in place on
  the output); along an inner axis the batch is the axes after it (stride 1, ``dist`` 1) and
  the axes before it are looped over (at most :data:`LOOP_MAX` calls), else the axis is
  moved last through a copy;
* ``c2r`` overwrites its input in cuFFT: it always reads a copy (``hfft``: the conjugate;
  ``irfftn``: the complex transforms of the other axes, written out of place);
* zero-padding copies into a zeroed array, cropping is a view; inputs of other dtypes are
  converted first (real input of ``fft``: a complex copy, as CuPy and PyTorch do);
* cuFFT does not normalize: ``norm`` is one multiplication afterwards (``ihfft`` also
  conjugates there).
"""

from __future__ import annotations

import math

from ember.array import launch
from ember.array.core import make as _make
from ember.array.fft import args as _args
from ember.array.fft import engine
from ember.array.ndarray import ndarray
from ember.runtime.memory import allocate

LOOP_MAX = 16  # library calls worth making for one axis before a transposing copy is cheaper


class Step:
    """One library call: the plan of ``key`` (looked up in the library's plan cache at
    every call: a plan the cache dropped is made again) from ``src`` (``"x"``, ``"t"`` or
    ``"y"``) to ``dst``, at byte offsets ``offsets`` (one pair per call of a loop)."""

    __slots__ = ("key", "src", "dst", "offsets", "inverse")

    def __init__(self, key, src, dst, offsets, inverse):
        self.key, self.src, self.dst = key, src, dst
        self.offsets, self.inverse = offsets, inverse


class Recipe:
    """How one call signature runs on the library (see the module docstring)."""

    def __init__(self, lib, shape, dtype, prep, temp, steps, factor, conj):
        self.lib, self.shape, self.dtype, self.prep, self.temp = lib, shape, dtype, prep, temp
        self.steps, self.factor, self.conj = steps, factor, conj

    def __call__(self, x: ndarray, out: ndarray | None) -> ndarray:
        for f in self.prep:
            x = f(x)
        be = x.backend
        direct = out is not None and out.c_strided and out.offset % (2 * out.dtype.itemsize) == 0
        y = out if direct else launch.new(be, self.shape, self.dtype)
        arrays = {"x": x, "y": y}
        if self.temp is not None:
            arrays["t"] = self.temp(x)
        lib = self.lib
        stream, execute, ptr = be.default_stream, lib.execute, be.native_pointer
        for s in self.steps:
            src, dst = arrays[s.src], arrays[s.dst]
            ps, pd = ptr(src.buffer, src.offset), ptr(dst.buffer, dst.offset)
            plan = lib.plan(*s.key)
            for os, od in s.offsets:
                execute(plan, ps + os, pd + od, s.inverse, stream)
        if self.conj or self.factor != 1.0:
            self._finish(y)
        if out is not None and y is not out:
            out[...] = y
            return out
        return y

    def fast(self):
        """A function doing what the recipe does for ``(x, None)``: for one library call
        with nothing around it (most calls), with every lookup done beforehand.  The
        library's ``run`` (plan lookup and execution under one lock), where it has one."""
        if self.prep or self.temp is not None or len(self.steps) != 1:
            return self
        (step,) = self.steps
        if len(step.offsets) != 1 or step.offsets[0] != (0, 0):
            return self
        lib, key, inverse, shape, dtype = self.lib, step.key, step.inverse, self.shape, self.dtype
        finish = self._finish if self.conj or self.factor != 1.0 else None
        nbytes, strides = math.prod(shape) * dtype.itemsize, _c_strides(shape, dtype.itemsize)
        execute = getattr(lib, "run", None) or _plan_and_execute(lib)

        def run(x: ndarray, out: None = None) -> ndarray:
            be = x.backend
            # launch.new(be, shape, dtype) without its frames
            y = _make(ndarray, allocate(be, nbytes), shape, strides, dtype, be, 0, True)
            ptr = be.native_pointer
            execute(key, ptr(x.buffer, x.offset), ptr(y.buffer), inverse, be.default_stream)
            if finish is not None:
                finish(y)
            return y

        return run

    def _finish(self, y: ndarray) -> None:
        from ember.array import ufuncs

        if self.conj:
            ufuncs.conj(y, out=y)
        if self.factor != 1.0:
            ufuncs.multiply(y, self.factor, out=y)


def _plan_and_execute(lib):
    """``run(key, src, dst, inverse, stream)`` of a library without one of its own."""
    plan, execute = lib.plan, lib.execute

    def run(key, src, dst, inverse, stream):
        execute(plan(*key), src, dst, inverse, stream)

    return run


# --------------------------------------------------------------------- layouts
def _elements(x: ndarray) -> tuple[int, ...] | None:
    """``x``'s strides in elements, or None when one is not a whole number of them."""
    isz = x.dtype.itemsize
    if any(s % isz for s in x.strides):
        return None
    return tuple(s // isz for s in x.strides)


def nd_layout(x: ndarray, k: int) -> tuple[list[int], int, int, int] | None:
    """``(embed, stride, dist, batch)`` of ``x``'s last ``k`` axes as cuFFT's advanced
    layout (the leading axes as one batch stride), or None (length-1 axes may have any
    stride: they get the nested one)."""
    strides = _elements(x)
    if strides is None:
        return None
    tail, ts = x.shape[-k:], list(strides[-k:])
    if tail[-1] == 1:
        ts[-1] = 1
    for j in range(k - 2, -1, -1):
        if tail[j] == 1:
            ts[j] = ts[j + 1] * tail[j + 1]
    embed = [tail[0]]  # (cuFFT reads embed[0] for nothing but its presence)
    for j in range(1, k):
        if ts[j] <= 0 or ts[j - 1] % ts[j] or ts[j - 1] // ts[j] < tail[j]:
            return None
        embed.append(ts[j - 1] // ts[j])
    if ts[-1] <= 0:
        return None
    dims = [(n, s) for n, s in zip(x.shape[:-k], strides[:-k], strict=True) if n != 1]
    batch = math.prod(n for n, _ in dims)
    dist = engine._collapse(dims)
    if dist is None or (batch > 1 and dist <= 0):
        return None
    if batch <= 1:
        dist = ts[0] * tail[0]
    return embed, ts[-1], dist, batch


def axis_layout(x: ndarray, axis: int):
    """``(s1, s2, si)`` of ``x`` along ``axis`` in elements (:func:`engine.layout`'s
    decomposition), or None."""
    strides = _elements(x)
    if strides is None:
        return None
    dims = list(zip(x.shape, strides, strict=True))
    s1, s2 = engine._collapse(dims[:axis]), engine._collapse(dims[axis + 1 :])
    if s1 is None or s2 is None:
        return None
    return s1, s2, strides[axis]


# --------------------------------------------------------------------- recipes
class _Probe:
    """The shape and strides an array will have after the recipe's preparation (enough
    for the layout functions, which read nothing else)."""

    def __init__(self, shape, dtype, strides):
        self.shape, self.dtype, self.strides = tuple(shape), dtype, tuple(strides)


def _c_strides(shape, itemsize: int) -> tuple[int, ...]:
    out, acc = [], itemsize
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def prepare(lib, x: ndarray, axes, lengths, kind: str, inverse: bool, scales, shape,
            dtype) -> Recipe | None:  # fmt: skip
    """The recipe of this call's signature on ``lib``, or None when the library cannot
    describe it (Ember's kernels run it then)."""
    if dtype.name not in ("float32", "float64", "complex64", "complex128"):
        return None  # (float16 results: computed in float32 by Ember's path)
    if min(lengths) < 2 or min(x.shape[a] for a in axes) < 2:
        # cuFFT refuses one-point transforms and one-point inputs along a transformed axis
        # (rfft/irfft: CUFFT_INVALID_VALUE); Ember's kernels run these trivial cases
        return None
    ct = _args.complex_of(x.dtype)
    if kind == "r2c" and x.offset % (2 * ct.real.itemsize) and x.dtype is ct.real:
        return None  # a real input view not aligned to the complex type: cuFFT refuses it
    precision = "single" if ct.itemsize == 8 else "double"
    want = ct.real if kind == "r2c" else ct
    sizes = list(lengths)
    if kind == "c2r":
        sizes[-1] = lengths[-1] // 2 + 1
    prep, copied = [], False
    if x.dtype is not want:
        prep.append(lambda a: a.astype(want))
        copied = True
    fit = _fitter(x.shape, axes, sizes)
    if fit is not None:
        prep.append(fit)
        copied = copied or fit.pads
    xshape = list(x.shape)
    for a, n in zip(axes, sizes, strict=True):
        xshape[a] = n
    strides = _c_strides(xshape, want.itemsize) if copied else x.strides
    probe = _Probe(xshape, want, strides)
    if not copied and _needs_copy(probe):
        prep.append(_contiguous)
        probe = _Probe(xshape, want, _c_strides(xshape, want.itemsize))
    build = _Builder(lib, precision, probe, shape, dtype, ct)
    steps = build.steps(axes, lengths, kind, inverse)
    if steps is None:
        return None
    factor = math.prod(scales)
    return Recipe(lib, shape, dtype, prep, build.temp, steps, factor, kind == "r2c" and inverse)


def _needs_copy(x) -> bool:
    strides = _elements(x)
    return strides is None or any(s <= 0 for s, n in zip(strides, x.shape, strict=True) if n > 1)


def _contiguous(a: ndarray) -> ndarray:
    from ember.array.manipulation import ascontiguousarray

    return ascontiguousarray(a)


def _fitter(shape, axes, sizes):
    """The function cropping (a view) or zero-padding (a copy) the input to ``sizes`` along
    ``axes``, or None when it already fits."""
    if all(shape[a] == n for a, n in zip(axes, sizes, strict=True)):
        return None
    target = list(shape)
    for a, n in zip(axes, sizes, strict=True):
        target[a] = n
    crop = tuple(slice(0, min(shape[i], target[i])) for i in range(len(shape)))
    pads = any(target[i] > shape[i] for i in range(len(shape)))

    def fit(a: ndarray) -> ndarray:
        a = a[crop]
        if not pads:
            return a
        out = launch.zeroed(a.backend, tuple(target), a.dtype)
        out[crop] = a
        return out

    fit.pads = pads
    return fit


class _Builder:
    """The library calls of one recipe (:meth:`steps`), and its temporary (``temp``: a
    function making it from the prepared input, or None)."""

    def __init__(self, lib, precision, x, shape, dtype, ct):
        self.lib, self.precision, self.x, self.ct = lib, precision, x, ct
        self.y = _Probe(shape, dtype, _c_strides(shape, dtype.itemsize))
        self.temp = None

    def steps(self, axes, lengths, kind: str, inverse: bool) -> list[Step] | None:
        nd, k = len(self.x.shape), len(axes)
        trailing = list(axes) == list(range(nd - k, nd)) or (
            kind == "c2c" and sorted(axes) == list(range(nd - k, nd))
        )
        if trailing and k <= 3 and (kind != "c2r" or k == 1):
            step = self.block(kind, axes, lengths, inverse)
            if step is not None:
                return [step]
        return self.per_axis(axes, lengths, kind, inverse)

    def block(self, kind, axes, lengths, inverse) -> Step | None:
        """One rank-``k`` plan over the trailing axes (``c2r``: from a copy)."""
        k = len(axes)
        order = sorted(range(k), key=lambda i: axes[i])
        n = [lengths[i] for i in order]
        src = "x"
        if kind == "c2r":
            src = self._copy_for_c2r(inverse)
        lx = nd_layout(self.x if src == "x" else self._t_probe(), k)
        ly = nd_layout(self.y, k)
        if lx is None or ly is None or lx[3] != ly[3]:
            return None
        key = (kind, self.precision, tuple(n), tuple(lx[0]), lx[1], lx[2], tuple(ly[0]), ly[1],
               ly[2], lx[3])  # fmt: skip
        self.lib.plan(*key)  # (made now: a library refusal declines the recipe)
        return Step(key, src, "y", ((0, 0),), inverse)

    def per_axis(self, axes, lengths, kind, inverse) -> list[Step] | None:
        """A rank-1 plan per axis, in NumPy's order: out of place first, then in place."""
        order = list(range(len(axes)))
        if kind == "c2c":
            order.reverse()
        elif kind == "r2c":
            order = order[-1:] + order[:-1]
        out = []
        cur, cur_probe = "x", self.x
        for step_no, i in enumerate(order):
            a, n = axes[i], lengths[i]
            step_kind = kind if (kind == "r2c" and step_no == 0) else "c2c"
            if kind == "c2r" and i == len(axes) - 1:
                step_kind = "c2r"
            if step_kind == "c2r":
                if cur == "x":
                    cur = self._copy_for_c2r(inverse)
                    cur_probe = self._t_probe()
                dst, dst_probe = "y", self.y
            elif kind == "c2r":  # the complex axes of irfftn: into the temporary
                if self.temp is None:
                    self.temp = _new_like(self.x.shape, self.ct)
                dst, dst_probe = "t", self._t_probe()
            else:
                dst, dst_probe = "y", self.y
            step = self.axis(step_kind, a, n, cur, cur_probe, dst, dst_probe, inverse)
            if step is None:
                return None
            out.append(step)
            cur, cur_probe = dst, dst_probe
        return out

    def axis(self, kind, a, n, src, sp, dst, dp, inverse) -> Step | None:
        """The rank-1 plan along axis ``a`` from ``src`` (layout ``sp``) to ``dst``."""
        la, lb = axis_layout(sp, a), axis_layout(dp, a)
        if la is None or lb is None or la[2] <= 0 or lb[2] <= 0:
            return None
        b1, b2 = math.prod(dp.shape[:a]), math.prod(dp.shape[a + 1 :])
        inner = [(b2, la[1], lb[1]), (b1, la[0], lb[0])]  # (batch, dist in, dist out)
        if b1 > 1 and b2 > 1:
            loop_first = b1 <= b2  # loop over the smaller count
            (batch, di, do), (count, li, lo) = inner if loop_first else inner[::-1]
            if count > LOOP_MAX:
                return None
        else:
            (batch, di, do) = inner[0] if b2 > 1 else inner[1]
            count, li, lo = 1, 0, 0
        if batch > 1 and (di <= 0 or do <= 0):
            return None
        di, do = (di, do) if batch > 1 else (la[2] * sp.shape[a], lb[2] * dp.shape[a])
        key = (kind, self.precision, (n,), (sp.shape[a],), la[2], di, (dp.shape[a],), lb[2],
               do, batch)  # fmt: skip
        self.lib.plan(*key)
        isa, isb = sp.dtype.itemsize, dp.dtype.itemsize
        offsets = tuple((c * li * isa, c * lo * isb) for c in range(count))
        if kind in ("r2c", "c2r"):  # cuFFT refuses a real side not aligned to the complex type
            side, size = (0, isa) if kind == "r2c" else (1, isb)
            if any(pair[side] % (2 * size) for pair in offsets):
                return None
        return Step(key, src, dst, offsets, inverse)

    def _copy_for_c2r(self, inverse: bool) -> str:
        """cuFFT's ``c2r`` overwrites its input: it reads a C-contiguous copy (the
        conjugate for ``hfft``, which is ``irfft`` of it)."""
        ct = self.ct

        def copy(x: ndarray) -> ndarray:
            from ember.array import ufuncs

            t = launch.new(x.backend, x.shape, ct)
            if inverse:
                t[...] = x
            else:
                ufuncs.conj(x, out=t)
            return t

        self.temp = copy
        return "t"

    def _t_probe(self) -> _Probe:
        return _Probe(self.x.shape, self.ct, _c_strides(self.x.shape, self.ct.itemsize))


def _new_like(shape, dtype):
    def make(x: ndarray) -> ndarray:
        return launch.new(x.backend, tuple(shape), dtype)

    return make
