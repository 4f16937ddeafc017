"""``ember.fft`` against ``numpy.fft`` on every backend, by each engine it has (``engine``:
the backend's choice - cuFFT on CUDA - and, where that is a vendor library, Ember's own
kernels too, as ``EMBER_FFT=ember`` selects).  Tolerances: tests/array/fft_common.py."""

from __future__ import annotations

import numpy as np
import pytest
from fft_common import check, complex_sample, real_sample, wide
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember.array.fft import plan as planning

F = ember.fft
SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 16, 25, 49, 64, 11, 13, 97, 360, 1000, 2048, 4096, 6000]
DTYPES = ["complex64", "complex128"]


@pytest.fixture(params=["auto", "kernels"])
def engine(request, backend):
    """The backend, computing with its default engine or with Ember's kernels."""
    if request.param == "auto":
        yield backend
        return
    if backend.fft() is None:
        pytest.skip("no vendor FFT here: 'auto' already ran Ember's kernels")
    with ember.config.override(fft="ember"):
        yield backend


@pytest.fixture
def kernels(backend):
    """The backend, computing with Ember's kernels."""
    with ember.config.override(fft="ember"):
        yield backend


@pytest.fixture
def multipass(monkeypatch):
    """Plans as if a block held 16 points: every length above 16 takes several passes of
    radix <= 8 (the same compiled kernels; only the host's planning changes)."""
    real = planning.geometry

    def small(be, ct):
        g = real(be, ct)
        return planning.Geometry(g.cap, g.block, 16, 8)

    monkeypatch.setattr(planning, "geometry", small)
    planning.plan.cache_clear()
    yield
    planning.plan.cache_clear()


@pytest.mark.parametrize("dtype", DTYPES)
def test_c2c_lengths_and_round_trips(engine, dtype):
    for n in SIZES:
        h = complex_sample((3, n), dtype, seed=n)
        x = ember.asarray(h)
        y = F.fft(x)
        check(y, np.fft.fft(wide(h)), dtype, n)
        check(F.ifft(x), np.fft.ifft(wide(h)), dtype, n)
        check(F.ifft(y), wide(h), dtype, n)


@pytest.mark.parametrize("dtype", DTYPES)
def test_multipass_and_bluestein_chains(kernels, dtype, multipass):
    for n in [17, 32, 48, 81, 128, 210, 343, 512, 23, 101]:
        h = complex_sample((2, n), dtype, seed=n)
        check(F.fft(ember.asarray(h)), np.fft.fft(wide(h)), dtype, n)
    h = complex_sample((40, 3, 37), dtype)  # a long batch axis first, every axis
    x = ember.asarray(h)
    for axis in range(3):
        check(F.ifft(x, axis=axis, norm="ortho"), np.fft.ifft(wide(h), axis=axis, norm="ortho"),
              dtype, h.shape[axis])  # fmt: skip
    rt = "float32" if dtype == "complex64" else "float64"
    for n in (32, 50, 64, 33):  # half length in one pass, in several, and full length
        r = real_sample((3, n), rt, seed=n)
        check(F.rfft(ember.asarray(r)), np.fft.rfft(wide(r)), dtype, n)
        s = np.fft.rfft(wide(r)).astype(dtype)
        check(F.irfft(ember.asarray(s), n=n), np.fft.irfft(wide(s), n=n), rt, n)
        check(F.hfft(ember.asarray(s), n=n), np.fft.hfft(wide(s), n=n), rt, n)


@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
def test_every_axis_norm_and_length(engine, norm):
    h = complex_sample((3, 5, 7), "complex64")
    x = ember.asarray(h)
    for axis in (0, 1, 2, -1, -3):
        for n in (None, 4, 9):
            ref = np.fft.fft(wide(h), n=n, axis=axis, norm=norm)
            check(F.fft(x, n=n, axis=axis, norm=norm), ref, "complex64", ref.shape[axis])
            ref = np.fft.ifft(wide(h), n=n, axis=axis, norm=norm)
            check(F.ifft(x, n, axis, norm), ref, "complex64", ref.shape[axis])


def test_views_as_input(engine):
    h = complex_sample((6, 8, 10), "complex128")
    x = ember.asarray(h)
    views = [
        (x[:, ::2, ::-1], h[:, ::2, ::-1]),
        (x.T, h.T),
        (x[1:5, 3, 2:], h[1:5, 3, 2:]),
        (ember.moveaxis(x, 0, 2), np.moveaxis(h, 0, 2)),
        (x.real, h.real),
        (x[::-2, ::3, 1::2].imag, h[::-2, ::3, 1::2].imag),
    ]
    for v, hv in views:
        for axis in range(v.ndim):
            check(F.fft(v, axis=axis), np.fft.fft(wide(hv), axis=axis), "complex128",
                  hv.shape[axis])  # fmt: skip
        check(F.fftn(v), np.fft.fftn(wide(hv)), "complex128", max(hv.shape))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_real_transforms(engine, dtype):
    ct = "complex64" if dtype == "float32" else "complex128"
    r = real_sample((4, 5, 12), dtype)
    x = ember.asarray(r)
    for axis in (0, 1, 2):
        for n in (None, 7, 16):
            for norm in ("backward", "ortho", "forward"):
                ref = np.fft.rfft(wide(r), n, axis, norm)
                nn = ref.shape[axis] if n is None else n
                check(F.rfft(x, n, axis, norm), ref, ct, nn)
                check(F.ihfft(x, n, axis, norm), np.fft.ihfft(wide(r), n, axis, norm), ct, nn)
    s = complex_sample((4, 7), ct)  # not Hermitian: the Nyquist and zero imaginary parts
    xs = ember.asarray(s)
    for n in (None, 1, 2, 11, 12, 30):
        for norm in ("backward", "ortho", "forward"):
            ref = np.fft.irfft(wide(s), n, norm=norm)
            check(F.irfft(xs, n, norm=norm), ref, dtype, ref.shape[-1])
            ref = np.fft.hfft(wide(s), n, norm=norm)
            check(F.hfft(xs, n, norm=norm), ref, dtype, ref.shape[-1])
    check(F.irfft(xs, axis=0), np.fft.irfft(wide(s), axis=0), dtype, 6)


def test_n_dimensional(engine):
    h = complex_sample((4, 6, 5), "complex64")
    x = ember.asarray(h)
    cases = [
        {}, {"axes": (0, 2)}, {"s": (3, 8), "axes": (1, 2)}, {"s": (3, -1), "axes": (2, 0)},
        {"axes": (1, 1)}, {"s": (7, 2, 4), "axes": (0, 1, 2)}, {"axes": [-1]},
        {"norm": "ortho", "axes": (1, 0)},
    ]  # fmt: skip
    for kw in cases:
        ref = np.fft.fftn(wide(h), **kw)
        check(F.fftn(x, **kw), ref, "complex64", max(ref.shape))
        ref = np.fft.ifftn(wide(h), **kw)
        check(F.ifftn(x, **kw), ref, "complex64", max(ref.shape))
    # s without axes: the last len(s) axes (NumPy 2 still does this, with a warning)
    check(F.fftn(x, s=(3, 8)), np.fft.fftn(wide(h), s=(3, 8), axes=(1, 2)), "complex64", 8)
    r = real_sample((4, 6, 5), "float64")
    xr = ember.asarray(r)
    for kw in [{}, {"axes": (0, 2)}, {"axes": (2, 0)}, {"s": (3, 8), "axes": (1, 2)},
               {"norm": "forward"}]:  # fmt: skip
        ref = np.fft.rfftn(wide(r), **kw)
        check(F.rfftn(xr, **kw), ref, "complex128", max(ref.shape))
        spec = ref.astype(np.complex128)
        back = np.fft.irfftn(spec, **kw)
        check(F.irfftn(ember.asarray(spec), **kw), back, "float64", max(back.shape))
    assert F.fftn(x, axes=()) is x  # no axes: the input itself, as NumPy


def test_two_dimensional_is_n_dimensional_over_the_last_two_axes(backend):
    h = complex_sample((3, 4, 6), "complex64")
    x = ember.asarray(h)
    check(F.fft2(x), np.fft.fft2(wide(h)), "complex64", 6)
    check(F.ifft2(x, axes=(0, 2)), np.fft.ifft2(wide(h), axes=(0, 2)), "complex64", 6)
    r = real_sample((3, 4, 6), "float64")
    ref = np.fft.rfft2(wide(r), s=(5, 6))
    check(F.rfft2(ember.asarray(r), s=(5, 6)), ref, "complex128", 6)
    back = np.fft.irfft2(ref.astype(np.complex128))
    check(F.irfft2(ember.asarray(ref.astype(np.complex128))), back, "float64", 6)
    assert np.fft.fft2(x).dtype == ember.complex64  # NumPy's own function stays on the device


def test_dtypes_follow_numpy(engine):
    cases = {
        "float16": ("complex64", "float16"), "float32": ("complex64", "float32"),
        "float64": ("complex128", "float64"), "int32": ("complex128", "float64"),
        "bool": ("complex128", "float64"), "uint8": ("complex128", "float64"),
    }  # fmt: skip
    for dt, (ct, rt) in cases.items():
        h = (np.arange(12) % 5 > 1).astype(dt) if dt == "bool" else (np.arange(12) % 7).astype(dt)
        x = ember.asarray(h)
        assert F.fft(x).dtype == ember.dtype(ct), dt
        assert F.rfft(x).dtype == ember.dtype(ct), dt
        assert F.irfft(x).dtype == ember.dtype(rt), dt
        check(F.fft(x), np.fft.fft(h.astype(np.float64)), ct, 12)
        ref = np.fft.irfft(h.astype(np.float64))
        got = F.irfft(x)
        assert got.dtype == ember.dtype(np.fft.irfft(h).dtype)
        np.testing.assert_allclose(got.to_numpy().astype(np.float64), ref, atol=5e-3, rtol=5e-3)


def test_out_and_empty(engine):
    h = complex_sample((3, 8), "complex64")
    x = ember.asarray(h)
    out = ember.zeros((3, 8), dtype=ember.complex64)
    assert F.fft(x, out=out) is out
    check(out, np.fft.fft(wide(h)), "complex64", 8)
    big = ember.zeros((3, 16), dtype=ember.complex64)
    F.ifft(x, out=big[:, ::2])
    check(big[:, ::2], np.fft.ifft(wide(h)), "complex64", 8)
    assert np.all(big[:, 1::2].to_numpy() == 0)
    with pytest.raises(ValueError, match="out has shape"):
        F.fft(x, out=ember.zeros((3, 9), dtype=ember.complex64))
    empty = F.fft(ember.zeros((0, 5), dtype=ember.complex64))
    assert empty.shape == (0, 5) and empty.dtype == ember.complex64
    padded = F.fft(ember.zeros((2, 0), dtype=ember.float32), n=4)
    np.testing.assert_array_equal(padded.to_numpy(), np.zeros((2, 4), np.complex64))


def test_numpy_functions_run_on_the_device(engine):
    h = complex_sample((4, 6), "complex64")
    x = ember.asarray(h)
    for name, kw in [("fft", {}), ("ifft", {"n": 5}), ("fftn", {}), ("rfftn", {}),
                     ("fftshift", {}), ("ifftshift", {"axes": 0})]:  # fmt: skip
        arg = x.real if name == "rfftn" else x
        got = getattr(np.fft, name)(arg, **kw)
        assert isinstance(got, ember.ndarray), name
        ref = getattr(np.fft, name)(wide(h.real if name == "rfftn" else h), **kw)
        check(got, ref, "complex64", 6)


def test_frequencies_and_shifts(backend):
    for n in (1, 2, 7, 8):
        for d in (1.0, 0.25):
            np.testing.assert_array_equal(F.fftfreq(n, d).to_numpy(), np.fft.fftfreq(n, d))
            np.testing.assert_array_equal(F.rfftfreq(n, d).to_numpy(), np.fft.rfftfreq(n, d))
    assert F.fftfreq(4, dtype=ember.float32).dtype == ember.float32
    h = np.arange(35).reshape(5, 7)
    x = ember.asarray(h)
    for axes in (None, 0, 1, (0, 1), [1, 0]):
        np.testing.assert_array_equal(F.fftshift(x, axes).to_numpy(), np.fft.fftshift(h, axes))
        np.testing.assert_array_equal(F.ifftshift(x, axes).to_numpy(), np.fft.ifftshift(h, axes))


def test_errors_say_what_is_wrong(backend):
    x = ember.asarray(complex_sample((4,), "complex64"))
    with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(0\)"):
        F.fft(x, n=0)
    with pytest.raises(ValueError, match="Invalid number of FFT data points"):
        F.irfft(ember.asarray(np.ones(1, np.complex64)))
    with pytest.raises(ValueError, match="Invalid norm value"):
        F.fft(x, norm="unitary")
    with pytest.raises(IndexError, match="out of bounds"):
        F.fft(x, axis=1)
    with pytest.raises(TypeError, match="takes real input"):
        F.rfft(x)
    with pytest.raises(ValueError, match="Shape and axes have different lengths"):
        F.fftn(x, s=(4, 4), axes=(0,))
    with pytest.raises(TypeError, match=r"ember\.asarray"):
        F.fft(np.ones(4))
    with pytest.raises(IndexError):
        F.fft(ember.asarray(np.float32(1.0)))


def test_kernels_compile_for_cuda():
    """The pass kernel's every variant through NVRTC (sm_90), without a GPU."""
    pytest.importorskip("ember.backends.cuda.nvrtc")
    from ember.array.fft import kernels

    for ct, rt in (("complex64", "float32"), ("complex128", "float64")):
        c = np.zeros(4, ct)
        for real_out, x, y in (
            (False, np.zeros(4, rt), c),
            (False, c, c),
            (True, c, np.zeros(4, rt)),
        ):
            k = kernels.fft_pass(ember.dtype(ct), real_out, 16384 // c.itemsize, 256)
            args = (x, 0, 1, 1, 1, 1, y, 0, 1, 1, 1, 1, 1, c, 4, 1, 4, 1, 4, 0, 1, 0, 1.0, 1,
                    0, 0, 0, 0, 0)  # fmt: skip
            try:
                ptx = k.inspect(*args, stage="ptx", dialect="cuda")
            except ember.BackendUnavailableError as exc:  # pragma: no cover - no NVRTC
                pytest.skip(str(exc))
            assert ".entry" in ptx
    from ember.array.fft import fixed

    c, f = np.zeros(4, "complex64"), np.zeros(4, "float32")
    rest = (0, 1, 1, 1, 1, 1, c, 4, 1, 4, 1, 4, 0, 1, 0, 1.0, 1, 0, 0, 0, 0, 0)
    r2c, c2r = kernels.R2C | kernels.PAIRS, kernels.C2R | kernels.PAIRS_OUT
    for radices, lj, flags, x, y in (
        ((8, 8, 4), 3, kernels.LOAD_Q | kernels.STORE_Q, c, c),
        ((8, 8, 8), 2, 0, c, c),
        ((8, 8, 8, 4), 0, r2c, f, c),  # (rfft of 4096 reals: the last stage through shared)
        ((8, 8, 8, 4), 0, c2r, c, f),
    ):
        k = fixed.fft_pass_fixed(ember.complex64, y is f, 2048, 256, radices, lj, flags)
        ptx = k.inspect(x, 0, 1, 1, 1, 1, y, *rest, stage="ptx", dialect="cuda")
        assert ".entry" in ptx and "ld.local" not in ptx  # the per-thread points in registers


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    shape=st.lists(st.integers(1, 12), min_size=1, max_size=3),
    data=st.data(),
    name=st.sampled_from(["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]),
    norm=st.sampled_from([None, "ortho", "forward"]),
    double=st.booleans(),
)
def test_one_axis_properties(backend, shape, data, name, norm, double):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    n = data.draw(st.one_of(st.none(), st.integers(1, 20)), label="n")
    real = name in ("rfft", "ihfft")
    if name in ("irfft", "hfft") and n is None and shape[axis] == 1:
        n = 2  # (the default length 2 * (1 - 1) is invalid)
    dt = ("float64" if double else "float32") if real else ("complex128" if double else "complex64")
    h = (real_sample if real else complex_sample)(tuple(shape), dt)
    ref = getattr(np.fft, name)(wide(h), n, axis, norm)
    out_dt = (
        ("float64" if double else "float32")
        if ref.dtype.kind == "f"
        else ("complex128" if double else "complex64")
    )
    got = getattr(F, name)(ember.asarray(h), n, axis, norm)
    check(got, ref, out_dt, max(ref.shape[axis], h.shape[axis]))


def test_specialized_pass_kernels_match_numpy(backend, monkeypatch):
    """The pass kernels specialized per pass shape (:mod:`ember.array.fft.fixed`, GPUs'
    default) on this backend, through a small GPU-like geometry (32 threads, 256 points per
    block, global passes of radix <= 32): multi-pass c2c both ways, along a strided axis,
    r2c / c2r through the half-length transform (one to eight lines per block), Bluestein,
    and shapes that fall back."""
    from ember.array.fft import fixed
    from ember.array.fft import kernels as k

    g = planning.Geometry(cap=256, block=32, single=256, rmax=32, fixed=True)
    monkeypatch.setattr(planning, "geometry", lambda be, ct: g)
    used = []
    real = fixed.fft_pass_fixed

    def spy(*a):
        used.append((a[4], a[6] & (k.R2C | k.C2R)))
        return real(*a)

    monkeypatch.setattr(fixed, "fft_pass_fixed", spy)
    with ember.config.override(fft="ember"):  # (CUDA would take cuFFT)
        _specialized_cases()
    assert {(8, 4), (4, 4), (8, 8, 4)} <= {r for r, _ in used}, used
    half = {((8, 4), k.R2C), ((8, 8), k.R2C), ((8, 8, 4), k.R2C), ((8, 8, 4), k.C2R)}
    assert half <= set(used), used  # the half-length passes ran specialized


def _half_length_cases():
    """``rfft`` / ``irfft`` whose one pass of the half-length transform has radices 8, 4
    (8 lines per block), 8, 8 (4 lines) and 8, 8, 4 (one line; its last stage goes
    through shared memory: ``R2C`` needs the whole line)."""
    for n, dt in ((64, "float32"), (128, "float32"), (512, "float32"), (512, "float64")):
        ct = "complex64" if dt == "float32" else "complex128"
        r = real_sample((5, n), dt, seed=n)
        check(F.rfft(ember.asarray(r)), np.fft.rfft(wide(r)), ct, n)
        s = np.fft.rfft(wide(r)).astype(ct)
        check(F.irfft(ember.asarray(s), n), np.fft.irfft(wide(s), n), dt, n)


def _specialized_cases():
    for dt in ("complex64", "complex128"):
        h = complex_sample((3, 4096), dt)
        check(F.fft(ember.asarray(h)), np.fft.fft(wide(h)), dt, 4096)
        check(F.ifft(ember.asarray(h), norm="ortho"), np.fft.ifft(wide(h), norm="ortho"), dt,
              4096)  # fmt: skip
    h = complex_sample((512, 3), "complex64")
    check(F.fft(ember.asarray(h), axis=0), np.fft.fft(wide(h), axis=0), "complex64", 512)
    _half_length_cases()
    for n in (97, 240, 7 * 64):  # Bluestein (256), stages 5, 3, 16 and 7, 8, 8: fallbacks
        h = complex_sample((2, n), "complex64")
        check(F.fft(ember.asarray(h)), np.fft.fft(wide(h)), "complex64", n)


def test_repeated_axes_are_transformed_again_in_numpys_order(engine):
    # NumPy: a repeated axis is transformed again, the complex transforms from the last
    # axis to the first, rfftn's real one first (Ember took them first to last: wrong
    # shapes and values as soon as the transforms did not commute)
    rng = np.random.default_rng(5)
    x1, x2 = np.arange(4.0), rng.standard_normal((3, 4))
    c = x2 + 1j * rng.standard_normal((3, 4))
    cases = [
        ("fftn", x1, {"s": (6, 2), "axes": (0, 0)}),
        ("rfftn", x1, {"axes": (0, 0)}),
        ("ifftn", c, {"axes": (1, 1), "s": (6, 3)}),
        ("rfftn", x2, {"axes": (0, 1, 0)}),
        ("rfft2", x2, {"axes": (1, 1)}),
        ("irfftn", c, {"axes": (0, 1, 0), "s": (4, 5, 6)}),
        ("fftn", c, {"axes": (0, 1, 0), "norm": "ortho"}),
    ]
    for name, a, kw in cases:
        want = getattr(np.fft, name)(a, **kw)
        got = getattr(F, name)(ember.asarray(a), **kw)
        assert got.shape == want.shape, (name, kw)
        np.testing.assert_allclose(got.to_numpy(), want, atol=1e-9, err_msg=name)
