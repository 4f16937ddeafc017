"""ember.array.grids against NumPy: index grids, log-spaced sequences, vander/kron, pad,
insert/delete, resize, trim_zeros and ediff1d, on every backend.

Kept to int64 and float64 data (each distinct kernel compiles once per run: CI's budget).
"""

from __future__ import annotations

import numpy as np
import pytest
from array_common import check, sample

import ember


def both(host: np.ndarray, view=None):
    """``host`` on the device and the same view of both (negative strides included)."""
    d = ember.asarray(host)
    return (d, host) if view is None else (view(d), view(host))


def check_all(got, want) -> None:
    assert isinstance(got, tuple) and len(got) == len(want), (type(got), len(got), len(want))
    for g, w in zip(got, want, strict=True):
        check(g, w)


# --------------------------------------------------------------------- grids
def test_tri_and_triangle_indices(backend):
    for args in [(3,), (3, 5, 1), (4, 2, -1), (0, 3), (3, 3, -5)]:
        check(ember.tri(*args), np.tri(*args))
    check(ember.tri(3, k=-1, dtype=bool), np.tri(3, k=-1, dtype=bool))
    for n, k, m in [(4, 0, None), (4, 1, 6), (5, -2, 3), (3, 5, None), (3, -9, None), (0, 0, 2)]:
        check_all(ember.tril_indices(n, k, m), np.tril_indices(n, k, m))
        check_all(ember.triu_indices(n, k, m), np.triu_indices(n, k, m))
    d, h = both(sample("float64", (3, 5)), lambda a: a[::-1])
    check_all(ember.tril_indices_from(d, k=1), np.tril_indices_from(h, k=1))
    check_all(ember.triu_indices_from(d, -1), np.triu_indices_from(h, -1))
    # the indices select what NumPy's do
    rows, cols = ember.triu_indices_from(d)
    check(d[rows, cols], h[np.triu_indices_from(h)])
    with pytest.raises(ValueError, match=r"ember\.tril_indices_from: input array must be 2-d"):
        ember.tril_indices_from(ember.zeros(3))
    with pytest.raises(ValueError, match=r"ember\.tri: M must be non-negative"):
        ember.tri(2, -1)
    with pytest.raises(TypeError, match=r"ember\.triu_indices: k must be an integer"):
        ember.triu_indices(3, 0.5)
    with pytest.raises(TypeError, match="ember.asarray"):
        ember.tril_indices_from(np.ones((2, 2)))


def test_diag_indices_indices_ix(backend):
    check_all(ember.diag_indices(4), np.diag_indices(4))
    check_all(ember.diag_indices(3, 3), np.diag_indices(3, 3))
    check_all(ember.diag_indices(0), np.diag_indices(0))
    d, h = both(np.arange(9.0).reshape(3, 3), lambda a: a[:, ::-1])
    check_all(ember.diag_indices_from(d), np.diag_indices_from(h))
    check(d[ember.diag_indices_from(d)], h[np.diag_indices_from(h)])
    check_all(
        ember.diag_indices_from(ember.zeros((2, 2, 2))), np.diag_indices_from(np.zeros((2, 2, 2)))
    )
    with pytest.raises(ValueError, match=r"ember\.diag_indices_from: all dimensions.*equal"):
        ember.diag_indices_from(ember.zeros((2, 3)))
    with pytest.raises(ValueError, match="at least 2-d"):
        ember.diag_indices_from(ember.zeros(3))
    for dims in [(2, 3), (3,), (2, 0), ()]:
        check(ember.indices(dims), np.indices(dims))
        check_all(ember.indices(dims, sparse=True), np.indices(dims, sparse=True))
    check_all(ember.indices((2, 3, 4), sparse=True), np.indices((2, 3, 4), sparse=True))
    check(ember.indices((2, 3), dtype=float), np.indices((2, 3), dtype=float))
    with pytest.raises(ValueError, match=r"ember\.indices: dimensions must be non-negative"):
        ember.indices((2, -1))
    mask = np.array([True, False, True, True])
    want = np.ix_([0, 2], mask, [])
    got = ember.ix_([0, 2], ember.asarray(mask), [])
    check_all(got, want)
    x, h = both(np.arange(12.0).reshape(3, 4), lambda a: a[::-1, ::-1])
    check(x[ember.ix_([2, 0], ember.asarray(mask))], h[np.ix_([2, 0], mask)])
    check_all(ember.ix_(ember.asarray(np.array([3, 1]))[::-1]), np.ix_(np.array([1, 3])))
    with pytest.raises(ValueError, match=r"ember\.ix_: cross index must be 1 dimensional"):
        ember.ix_(ember.zeros((2, 2)))


def test_fromfunction(backend):
    def f(i, j, scale=1):
        return (i * 10 + j) * scale

    check(ember.fromfunction(f, (3, 4)), np.fromfunction(f, (3, 4)))
    check(ember.fromfunction(f, (2, 5), scale=3.0), np.fromfunction(f, (2, 5), scale=3.0))
    calls = []
    ember.fromfunction(lambda *a: calls.append(a), (2, 3))
    assert len(calls) == 1 and [a.shape for a in calls[0]] == [(2, 3)] * 2
    assert all(isinstance(a, ember.ndarray) for a in calls[0])  # on the device


# --------------------------------------------------------------------- sequences
@pytest.mark.parametrize(
    "args, kwargs",
    [((0, 3), {}), ((0, 3, 7), {}), ((-1, 2, 4), {"endpoint": False}), ((0, 3, 4), {"base": 2}),
     ((1, 3, 5), {"dtype": "int64"}), ((2, 2, 1), {}), ((0, 1, 0), {}), ((3, 0, 6), {"base": 0.5})],
)  # fmt: skip
def test_logspace_scalars(backend, args, kwargs):
    check(ember.logspace(*args, **kwargs), np.logspace(*args, **kwargs), rtol=1e-12)


def test_logspace_arrays_and_axis(backend):
    (s, hs), (e, he) = both(np.array([0.0, 1.0, -2.0])), both(np.array([[2.0], [4.0]]))
    for axis in (0, 1, -1, 2):
        check(ember.logspace(s, e, 5, axis=axis), np.logspace(hs, he, 5, axis=axis), rtol=1e-12)
    b, hb = both(np.array([2.0, 10.0, 3.0]))
    for axis in (0, -1):
        check(ember.logspace(0.0, 2.0, 3, base=b, axis=axis),
              np.logspace(0.0, 2.0, 3, base=hb, axis=axis), rtol=1e-12)  # fmt: skip
    check(ember.logspace(s, e, 3, base=b), np.logspace(hs, he, 3, base=hb), rtol=1e-12)
    with pytest.raises(ValueError, match="out of bounds"):
        ember.logspace(0, 1, 3, axis=1)


@pytest.mark.parametrize(
    "args, kwargs",
    [((1, 1000, 4), {}), ((1, 256, 9), {"endpoint": False}), ((-1, -1000, 4), {}),
     ((1000, 1, 5), {}), ((3, 3, 1), {}), ((2, 8, 0), {}), ((1, 1000, 4), {"dtype": "int64"}),
     ((-1, 1, 3), {})],
)  # fmt: skip
def test_geomspace_scalars(backend, args, kwargs):
    with np.errstate(invalid="ignore"):
        want = np.geomspace(*args, **kwargs)
    check(ember.geomspace(*args, **kwargs), want, rtol=1e-12)


def test_geomspace_arrays_and_errors(backend):
    (s, hs), (e, he) = both(np.array([1.0, -2.0, 5.0])), both(np.array([100.0, -32.0, 5.0]))
    for axis in (0, 1, -1):
        check(ember.geomspace(s, e, 5, axis=axis), np.geomspace(hs, he, 5, axis=axis), rtol=1e-12)
    want = np.geomspace(hs, he, 4, endpoint=False)
    check(ember.geomspace(s, e, 4, endpoint=False), want, rtol=1e-12)
    with pytest.raises(
        ValueError, match=r"ember\.geomspace: a geometric sequence cannot include zero"
    ):
        ember.geomspace(0, 10)
    with pytest.raises(ValueError, match="cannot include zero"):
        ember.geomspace(s, ember.asarray(np.array([1.0, 0.0, 1.0])))
    with pytest.raises(ValueError, match=r"ember\.geomspace: num must be non-negative"):
        ember.geomspace(1, 2, -1)


def test_vander(backend):
    d, h = both(np.array([1, 2, 3, 5, -2]), lambda a: a[::-1])
    check(ember.vander(d), np.vander(h))
    check(ember.vander(d, 3, increasing=True), np.vander(h, 3, increasing=True))
    check(ember.vander(d, 0), np.vander(h, 0))
    f, hf = both(sample("float64", (6,)))
    check(ember.vander(f, 7), np.vander(hf, 7), rtol=1e-12)
    check(ember.vander(f[:0]), np.vander(hf[:0]))
    with pytest.raises(ValueError, match=r"ember\.vander: x must be a one-dimensional array"):
        ember.vander(ember.zeros((2, 2)))


def test_kron(backend):
    cases = [((3,), (4,)), ((2, 2, 2), (3, 2)), ((2,), (2, 3, 2)), ((0, 2), (2,))]
    for k, (sa, sb) in enumerate(cases):
        a, ha = both(sample("float64", sa, seed=k + 9), lambda v: v[::-1])
        b, hb = both(sample("float64", sb, seed=k), lambda v: v[..., ::-1])
        check(ember.kron(a, b), np.kron(ha, hb), rtol=1e-12)
    a, ha = both(np.arange(6.0).reshape(2, 3))
    check(ember.kron(a, ember.asarray(3.0)), np.kron(ha, np.asarray(3.0)))
    check(ember.kron(2.0, a), np.kron(2.0, ha))
    check(ember.kron(ember.asarray(2.0), ember.asarray(4.0)), np.asarray(np.kron(2.0, 4.0)))


# --------------------------------------------------------------------- pad
MODES = ["constant", "edge", "reflect", "symmetric", "wrap"]


@pytest.mark.parametrize("mode", MODES)
def test_pad_modes(backend, mode):
    d, h = both(sample("float64", (3, 4)), lambda a: a[::-1, ::-2])  # (3, 2), negative strides
    for width in [0, 1, (2, 3), ((0, 7), (9, 1)), [[1], [5]], ((4, 0), (0, 2))]:
        check(ember.pad(d, width, mode), np.pad(h, width, mode))
    line, hl = both(np.arange(4.0))
    for width in [(8, 11), (3, 0), (0, 13), 4]:
        check(ember.pad(line, width, mode), np.pad(hl, width, mode))
    one, ho = both(np.array([7.0]))
    check(ember.pad(one, (2, 3), mode), np.pad(ho, (2, 3), mode))
    if mode != "constant":
        check(
            ember.pad(ember.zeros((0, 3)), ((0, 0), (1, 2)), mode),
            np.pad(np.zeros((0, 3)), ((0, 0), (1, 2)), mode),
        )
        with pytest.raises(ValueError, match=r"ember\.pad: can't extend empty axis 0"):
            ember.pad(ember.zeros((0, 3)), 1, mode)


@pytest.mark.parametrize("mode", ["maximum", "minimum", "mean", "median"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8"])
def test_pad_statistics(backend, mode, dtype):
    # each side: the statistic of stat_length elements next to it (integers rounded half
    # to even: mean 2.5 -> 2), axis by axis so corners come from the padded array
    d, h = both(sample(dtype, (4, 5)), lambda a: a[::-1, 1:])  # (4, 4), a negative stride
    for width, length in [(2, None), (((1, 3), (2, 0)), None), (((2, 2), (3, 1)), 2),
                          (((3, 1), (0, 4)), ((1, 3), (2, 9))), ((1, 2), (1, 3))]:  # fmt: skip
        want = np.pad(h, width, mode, stat_length=length)
        check(ember.pad(d, width, mode, stat_length=length), want)
    evens, he = both(np.array([1, 2, 3, 4], dtype))
    check(ember.pad(evens, 1, mode), np.pad(he, 1, mode))
    if mode in ("maximum", "minimum"):
        with pytest.raises(ValueError, match="stat_length of 0 yields no value"):
            ember.pad(d, 1, mode, stat_length=0)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "uint8"])
def test_pad_linear_ramp(backend, dtype):
    d, h = both(sample(dtype, (3, 4)), lambda a: a[:, ::-1])
    for width, ends in [(3, 0), (((2, 1), (4, 2)), ((5, -3), (10, 1))), ((0, 6), 7.5)]:
        if dtype == "uint8" and ends == ((5, -3), (10, 1)):
            ends = ((5, 3), (10, 1))
        want = np.pad(h, width, "linear_ramp", end_values=ends)
        check(ember.pad(d, width, "linear_ramp", end_values=ends), want)


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
def test_pad_odd_reflection(backend, mode):
    d, h = both(sample("float64", (3, 4)), lambda a: a[:, ::-1])
    for width in [((2, 5), (6, 1)), ((1, 1), (2, 9))]:  # wider than the array: chunk by chunk
        want = np.pad(h, width, mode, reflect_type="odd")
        check(ember.pad(d, width, mode, reflect_type="odd"), want)


def test_pad_constant_values_empty_and_errors(backend):
    d, h = both(np.arange(6.0).reshape(2, 3))
    for values in [7, (1, 2), ((1, 2), (3, 4)), 2.9]:
        check(ember.pad(d, ((1, 2), (3, 1)), constant_values=values),
              np.pad(h, ((1, 2), (3, 1)), constant_values=values))  # fmt: skip
    f, hf = both(np.arange(4.0))
    check(
        ember.pad(f, 2, constant_values=ember.asarray([-1.5, 9])),
        np.pad(hf, 2, constant_values=[-1.5, 9]),
    )
    check(
        ember.pad(ember.zeros((0, 2)), 1, constant_values=5),
        np.pad(np.zeros((0, 2)), 1, constant_values=5),
    )
    check(ember.pad(ember.asarray(3.0), 2), np.pad(np.asarray(3.0), 2))  # 0-d: a copy
    assert ember.pad(d, 2, "empty").shape == np.pad(h, 2, "empty").shape
    with pytest.raises(NotImplementedError, match=r"ember\.pad: a callable mode"):
        ember.pad(d, 1, lambda *a: None)
    with pytest.raises(ValueError, match=r"ember\.pad: mode 'bogus' is not supported"):
        ember.pad(d, 1, "bogus")
    with pytest.raises(ValueError, match=r"unsupported keyword arguments for mode 'edge'"):
        ember.pad(d, 1, "edge", constant_values=3)
    with pytest.raises(ValueError, match="pad_width must be non-negative"):
        ember.pad(d, -1)
    with pytest.raises(TypeError, match="pad_width must be non-negative integers"):
        ember.pad(d, 1.5)
    with pytest.raises(ValueError, match=r"pad_width of shape \(3, 2\) does not fit"):
        ember.pad(d, ((1, 1),) * 3)
    with pytest.raises(ValueError, match="reflect_type must be 'even' or 'odd'"):
        ember.pad(d, 1, "reflect", reflect_type="up")


# --------------------------------------------------------------------- insert, delete
def test_insert(backend):
    d, h = both(sample("float64", (3, 4)), lambda a: a[::-1])
    cases = [
        (1, 5.5, None), (-1, [7, 8, 9, 10], 0), (4, [7, 8, 9], 1), (0, 1.0, 1),
        ([2], [[7], [8], [9]], 1), ([1, 0, 4, 1, -2], [10, 20, 30, 40, 50], 1), ([3, 3], 6, 0),
        (slice(None, None, 2), 9, 1), (slice(None, None, -3), [[1], [2], [3]], 1),
        (slice(1, 2), 4, 0), (slice(3, 4), [7, 8], None), ([], 0, 1), (12, -1, None),
        (-12, -1, None),
    ]  # fmt: skip
    for obj, values, axis in cases:
        check(ember.insert(d, obj, values, axis=axis), np.insert(h, obj, values, axis=axis))
    i, hi = both(np.arange(5.0))
    mask = np.array([True, False, True, False, False])
    check(ember.insert(i, ember.asarray(mask), 9), np.insert(hi, mask, 9))
    idx, values = np.array([4, 0]), np.array([7.0, 8.0])
    check(ember.insert(i, ember.asarray(idx), ember.asarray(values)), np.insert(hi, idx, values))
    check(ember.insert(i, ember.asarray(np.array(2)), [1, 2]), np.insert(hi, np.array(2), [1, 2]))
    check(ember.insert(ember.asarray(5.0), 0, 1), np.insert(np.asarray(5.0), 0, 1))
    with pytest.raises(
        IndexError, match=r"ember\.insert: index 6 is out of bounds for axis 0 with size 5"
    ):
        ember.insert(i, 6, 1)
    with pytest.raises(IndexError, match=r"ember\.insert: an index is out of bounds"):
        ember.insert(i, [0, -6], 1)
    with pytest.raises(ValueError, match=r"ember\.insert: could not broadcast"):
        ember.insert(d, 1, [1, 2], axis=0)
    with pytest.raises(IndexError, match="must be of integer"):
        ember.insert(i, ember.asarray([1.0, 2.0]), 1)
    with pytest.raises(ValueError, match="one dimensional or scalar"):
        ember.insert(i, [[1, 2]], 1)


def test_delete(backend):
    d, h = both(np.arange(20.0).reshape(4, 5), lambda a: a[:, ::-1])
    cases = [(-1, 1), (0, 0), (3, None), ([0, 2, 2, -1], None), ([1, -1], 1), ([], 0),
             (slice(None, None, -2), 1), (slice(1, 3), 0), (slice(5, 1), 1), ([3], 0)]  # fmt: skip
    for obj, axis in cases:
        check(ember.delete(d, obj, axis=axis), np.delete(h, obj, axis=axis))
    mask = np.array([True, False, True, False])
    check(ember.delete(d, ember.asarray(mask), axis=0), np.delete(h, mask, axis=0))
    check(ember.delete(d, ember.asarray(np.array([4, 0])), axis=1), np.delete(h, [4, 0], axis=1))
    check(ember.delete(d, ember.asarray(np.array(2)), axis=1), np.delete(h, np.array(2), axis=1))
    out = ember.delete(d, [], 0)
    assert out.buffer is not d.buffer  # a new array, as NumPy's
    with pytest.raises(
        IndexError, match=r"ember\.delete: index 5 is out of bounds for axis 1 with size 5"
    ):
        ember.delete(d, 5, axis=1)
    with pytest.raises(IndexError, match=r"ember\.delete: an index is out of bounds for axis 0"):
        ember.delete(d, [1, -5], axis=0)
    with pytest.raises(ValueError, match=r"ember\.delete: a boolean obj must .* length of 4"):
        ember.delete(d, ember.asarray([True, False]), axis=0)
    with pytest.raises(ValueError, match=r"ember\.delete: axis 2 is out of bounds"):
        ember.delete(d, 0, axis=2)


# --------------------------------------------------------------------- resize, trims, diffs
def test_resize(backend):
    d, h = both(np.arange(6.0).reshape(2, 3), lambda a: a[::-1, ::-1])
    for shape in [(3, 4), 7, (2, 3), (4,), (0,), (2, 0, 3), (1, 1), ()]:
        check(ember.resize(d, shape), np.resize(h, shape))
    check(ember.resize(ember.zeros(0), (2, 2)), np.resize(np.zeros(0), (2, 2)))
    with pytest.raises(
        ValueError, match=r"ember\.resize: each element of new_shape must be non-negative"
    ):
        ember.resize(d, (2, -1))


def test_trim_zeros(backend):
    z = np.array([0, 0, 3, 0, 4, 0, 0], dtype=np.float64)
    d, h = both(z)
    for trim in ["fb", "f", "b", "BF"]:
        check(ember.trim_zeros(d, trim), np.trim_zeros(h, trim))
    for host in [np.zeros(4), np.array([np.nan, 0.0]), np.zeros(0), np.array([5.0])]:
        check(ember.trim_zeros(ember.asarray(host)), np.trim_zeros(host))
    view = ember.trim_zeros(d)
    assert view.buffer is d.buffer  # a view, as NumPy's
    g = np.zeros((4, 5))
    g[1, 3], g[2, 1] = 1, 2
    grid, hg = both(g, lambda a: a[::-1])
    for axis in (None, 0, -1):
        check(ember.trim_zeros(grid, axis=axis), np.trim_zeros(hg, axis=axis))
    check(ember.trim_zeros(ember.zeros((2, 3)), "f"), np.trim_zeros(np.zeros((2, 3)), "f"))
    check(ember.trim_zeros(ember.zeros((0, 3)), axis=1), np.trim_zeros(np.zeros((0, 3)), axis=1))
    with pytest.raises(ValueError, match=r"ember\.trim_zeros: unexpected character\(s\) in trim"):
        ember.trim_zeros(d, "x")


def test_ediff1d(backend):
    d, h = both(sample("float64", (3, 4)), lambda a: a[:, ::-1])
    check(ember.ediff1d(d), np.ediff1d(h))
    check(ember.ediff1d(d, to_end=[1, 2], to_begin=-5), np.ediff1d(h, to_end=[1, 2], to_begin=-5))
    check(
        ember.ediff1d(d, to_begin=ember.asarray(np.array([7.0, 8.0]))),
        np.ediff1d(h, to_begin=[7.0, 8.0]),
    )
    f, hf = both(np.array([1.5, -2.0, 4.0]))
    check(ember.ediff1d(f, 3), np.ediff1d(hf, 3))
    check(ember.ediff1d(f[:1], to_end=2.5), np.ediff1d(hf[:1], to_end=2.5))
    check(ember.ediff1d(f[:0]), np.ediff1d(hf[:0]))
    check(ember.ediff1d(ember.asarray(4.0), to_begin=1), np.ediff1d(np.asarray(4.0), to_begin=1))
    with pytest.raises(
        TypeError, match=r"ember\.ediff1d: the dtype of to_end \(float64\).*same_kind"
    ):
        ember.ediff1d(ember.asarray(np.arange(3)), to_end=0.5)
    with pytest.raises(TypeError, match=r"ember\.ediff1d: subtracting booleans"):
        ember.ediff1d(ember.asarray([True, False]))
    with pytest.raises(TypeError, match="ember.asarray"):
        ember.ediff1d(np.arange(3))


def test_pad_edge_cases_numpy_takes(backend):
    # statistics of an empty array where nothing is padded, constants cast as NumPy's pad
    # casts them (-1 into uint16), odd reflections of bools (NumPy: 2 * e - s != 0)
    cases = [
        (np.zeros((0, 3)), ((0, 0), (1, 1)), {"mode": "maximum"}),
        (np.zeros((0, 3)), 0, {"mode": "minimum"}),
        (np.array([1, 2], np.uint16), 1, {"constant_values": -1}),
        (np.zeros(2, np.int8), 1, {"constant_values": 2.7}),
        (np.array([True, False, True]), 2, {"mode": "reflect", "reflect_type": "odd"}),
        (np.array([True, False, True, False]), 5, {"mode": "symmetric", "reflect_type": "odd"}),
    ]
    for a, width, kw in cases:
        got, want = ember.pad(ember.asarray(a), width, **kw), np.pad(a, width, **kw)
        assert got.dtype == want.dtype and got.shape == want.shape, (a.dtype, width, kw)
        check(got, want)
