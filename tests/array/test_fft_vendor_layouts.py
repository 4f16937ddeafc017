"""The vendor path's layouts (ember/array/fft/vendor.py) without a GPU: a fake cuFFT that
does what cuFFT's advanced layout says (``b * dist + ((i0 * embed1 + i1) * embed2 + i2) *
stride``, unnormalized, c2r overwriting its input) with NumPy, on the OpenCL CPU device's
memory.  What runs on cuFFT on the GPU machine is then only the library itself
(test_fft_cuda.py)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from fft_common import check, complex_sample, real_sample, wide

import ember
from ember.array.fft import dispatch

F = ember.fft
TYPES = {"single": (np.float32, np.complex64), "double": (np.float64, np.complex128)}


class FakeCufft:
    """cuFFT's contract, computed by NumPy on the host copies of device buffers."""

    def __init__(self, be):
        self.be = be
        self.buffers: list = []
        self.plans: list[SimpleNamespace] = []  # every plan made, in order
        self.cached: dict = {}
        self.calls = 0

    def pointer(self, buffer, offset=0):
        """A fake device address: the buffer's index in the high bits, the byte offset low."""
        self.buffers.append(buffer)
        return ((len(self.buffers) - 1) << 40) + offset

    def plan(self, kind, precision, n, inembed, istride, idist, onembed, ostride, odist, batch):
        key = (kind, precision, n, inembed, istride, idist, onembed, ostride, odist, batch)
        if key not in self.cached:
            p = SimpleNamespace(kind=kind, precision=precision, n=tuple(n), inembed=tuple(inembed),
                                istride=istride, idist=idist, onembed=tuple(onembed),
                                ostride=ostride, odist=odist, batch=batch)  # fmt: skip
            self.plans.append(p)
            self.cached[key] = p
        return self.cached[key]

    def _host(self, address):
        buf = self.buffers[address >> 40]
        raw = np.empty(buf.nbytes, np.uint8)
        self.be.copy_to_host(raw, buf, 0)
        return buf, raw, address & ((1 << 40) - 1)

    @staticmethod
    def _index(shape, embed, stride, dist, batch):
        grid = np.indices((batch, *shape)).reshape(len(shape) + 1, -1)
        flat = grid[1].copy()
        for j in range(1, len(shape)):
            flat = flat * embed[j] + grid[j + 1]
        return grid[0] * dist + flat * stride

    def execute(self, plan, src, dst, inverse, stream):
        self.calls += 1
        real, cplx = TYPES[plan.precision]
        n = plan.n
        half = (*n[:-1], n[-1] // 2 + 1)
        in_shape, out_shape = {"c2c": (n, n), "r2c": (n, half), "c2r": (half, n)}[plan.kind]
        in_t = real if plan.kind == "r2c" else cplx
        out_t = real if plan.kind == "c2r" else cplx
        buf, raw, off = self._host(src)
        data = np.frombuffer(raw.tobytes(), in_t, offset=off)
        idx = self._index(in_shape, plan.inembed, plan.istride, plan.idist, plan.batch)
        x = data[idx].reshape((plan.batch, *in_shape)).astype(np.complex128)
        axes = tuple(range(1, len(n) + 1))
        if plan.kind == "c2c":
            y = np.fft.ifftn(x, axes=axes) * math.prod(n) if inverse else np.fft.fftn(x, axes=axes)
        elif plan.kind == "r2c":
            y = np.fft.rfftn(x.real, axes=axes)
        else:
            y = np.fft.irfftn(x, s=n, axes=axes) * math.prod(n)
            scribbled = np.frombuffer(raw.tobytes(), in_t, offset=off).copy()
            scribbled[idx] = np.nan  # cuFFT's c2r overwrites its input
            raw[off : off + scribbled.nbytes] = scribbled.view(np.uint8)[: len(raw) - off]
            self.be.copy_from_host(buf, 0, raw)
        dbuf, draw, doff = self._host(dst)
        out = np.frombuffer(draw.tobytes(), out_t, offset=doff).copy()
        out[self._index(out_shape, plan.onembed, plan.ostride, plan.odist, plan.batch)] = y.astype(
            out_t
        ).reshape(-1)
        draw[doff : doff + out.nbytes] = out.view(np.uint8)[: len(draw) - doff]
        self.be.copy_from_host(dbuf, 0, draw)


@pytest.fixture
def fake(backend, monkeypatch):
    """The fake library as the backend's vendor FFT (recipes made afresh)."""
    lib = FakeCufft(backend)
    monkeypatch.setattr(dispatch, "vendor_library", lambda be: lib)
    monkeypatch.setattr(backend, "native_pointer", lib.pointer)
    fast = ember.fft._FAST  # calls seen before go straight to their recipe: the fake's too
    dispatch._RECIPES.clear()
    fast.clear()
    yield lib
    dispatch._RECIPES.clear()
    fast.clear()  # (a later test's call with the same signature ran the fake: IndexError)


def test_trailing_axes_take_one_plan(fake):
    h = complex_sample((3, 4, 6, 5), "complex64")
    x = ember.asarray(h)
    check(F.fftn(x, axes=(1, 2, 3)), np.fft.fftn(wide(h), axes=(1, 2, 3)), "complex64", 6)
    assert [p.n for p in fake.plans] == [(4, 6, 5)] and fake.plans[0].batch == 3
    check(F.ifftn(x, axes=(3, 2)), np.fft.ifftn(wide(h), axes=(3, 2)), "complex64", 6)
    assert fake.plans[-1].n == (6, 5) and fake.plans[-1].batch == 12
    r = real_sample((5, 8, 6), "float64")
    check(F.rfftn(ember.asarray(r), axes=(1, 2)), np.fft.rfftn(wide(r), axes=(1, 2)),
          "complex128", 8)  # fmt: skip
    assert fake.plans[-1].kind == "r2c" and fake.plans[-1].n == (8, 6)
    calls = fake.calls
    F.fftn(x, axes=(1, 2, 3))  # a repeated call: the same recipe, one library call
    assert fake.calls == calls + 1 and len(fake.plans) == 3


def test_one_axis_everywhere(fake):
    h = complex_sample((3, 5, 7), "complex128")
    x = ember.asarray(h)
    for axis in range(3):
        for n in (None, 4, 9):
            for norm in ("backward", "ortho", "forward"):
                ref = np.fft.fft(wide(h), n, axis, norm)
                check(F.fft(x, n, axis, norm), ref, "complex128", ref.shape[axis])
                ref = np.fft.ifft(wide(h), n, axis, norm)
                check(F.ifft(x, n, axis, norm), ref, "complex128", ref.shape[axis])
    loops = [p for p in fake.plans if p.batch == 7 and p.n == (5,)]
    assert loops, "the middle axis: batch over the last axis, a loop over the first"


def test_views_and_dtypes(fake):
    h = complex_sample((6, 8, 10), "complex64")
    x = ember.asarray(h)
    for v, hv in [(x[:, ::2, ::-1], h[:, ::2, ::-1]), (x.T, h.T), (x.real, h.real),
                  (x[::-2, 3], h[::-2, 3]), (ember.broadcast_to(x[0, 0], (4, 10)),
                  np.broadcast_to(h[0, 0], (4, 10)))]:  # fmt: skip
        for axis in range(v.ndim):
            check(F.fft(v, axis=axis), np.fft.fft(wide(hv), axis=axis), "complex64",
                  hv.shape[axis])  # fmt: skip
        check(F.fftn(v), np.fft.fftn(wide(hv)), "complex64", max(hv.shape))
    i = np.arange(24).reshape(4, 6)
    check(F.fft(ember.asarray(i)), np.fft.fft(i.astype(np.float64)), "complex128", 6)


def test_real_transforms_read_copies(fake):
    s = complex_sample((4, 7), "complex64")
    xs = ember.asarray(s)
    for n in (None, 5, 12, 13):
        for axis in (0, 1):
            ref = np.fft.irfft(wide(s), n, axis)
            check(F.irfft(xs, n, axis), ref, "float32", ref.shape[axis])
            ref = np.fft.hfft(wide(s), n, axis, "ortho")
            check(F.hfft(xs, n, axis, "ortho"), ref, "float32", ref.shape[axis])
    np.testing.assert_array_equal(xs.to_numpy(), s)  # c2r never overwrote the input
    r = real_sample((6, 5), "float32")
    xr = ember.asarray(r)
    for n in (None, 4, 9):
        check(F.rfft(xr, n, 0), np.fft.rfft(wide(r), n, 0), "complex64", 9)
        check(F.ihfft(xr, n), np.fft.ihfft(wide(r), n), "complex64", 9)
    spec = complex_sample((3, 4, 5), "complex128")
    for kw in [{}, {"axes": (0, 2)}, {"axes": (2, 0)}, {"s": (5, 6), "axes": (1, 2)}]:
        ref = np.fft.irfftn(wide(spec), **kw)
        check(F.irfftn(ember.asarray(spec), **kw), ref, "float64", max(ref.shape))
    np.testing.assert_array_equal(ember.asarray(spec).to_numpy(), spec)


def test_declined_layouts_run_embers_kernels(fake):
    h = complex_sample((20, 4, 18), "complex64")  # a middle axis with > 16 calls either way
    calls = fake.calls
    check(F.fft(ember.asarray(h), axis=1), np.fft.fft(wide(h), axis=1), "complex64", 4)
    assert fake.calls == calls
    out = ember.zeros((20, 4, 18), dtype=ember.complex64)
    F.fft(ember.asarray(h), axis=2, out=out)
    check(out, np.fft.fft(wide(h), axis=2), "complex64", 18)
    big = ember.zeros((20, 4, 36), dtype=ember.complex64)
    F.fft(ember.asarray(h), axis=2, out=big[:, :, ::2])
    check(big[:, :, ::2], np.fft.fft(wide(h), axis=2), "complex64", 18)


@pytest.mark.parametrize("with_run", [False, True], ids=["plan+execute", "run"])
def test_repeated_calls_take_the_fast_path(fake, monkeypatch, with_run):
    """A repeated call of one signature goes straight to its recipe's fast function, which
    uses the library's ``run`` (plan lookup and execution in one) where it has one; every
    call computes on its own input, with its scaling."""
    runs = []
    if with_run:

        def run(key, src, dst, inverse, stream):
            runs.append(key)
            fake.execute(fake.plan(*key), src, dst, inverse, stream)

        monkeypatch.setattr(fake, "run", run, raising=False)
    for k in range(3):
        h = complex_sample((3, 8), "complex64") * (k + 1)
        x = ember.asarray(h)
        for norm in ("backward", "ortho"):
            check(F.fft(x, norm=norm), np.fft.fft(wide(h), norm=norm), "complex64", 8)
        check(F.ifft(x[1]), np.fft.ifft(wide(h[1])), "complex64", 8)
    assert fake.calls == 9 and len(fake.plans) == 2
    assert len(runs) == (6 if with_run else 0)  # (the first call of each signature: execute)
