"""Shape and layout functions against NumPy: views where NumPy makes views."""

from __future__ import annotations

import numpy as np
import pytest
from array_common import check, sample

import ember

RESHAPES = [(6, 4), (-1,), (2, -1, 3), (4, 6), (1, 24, 1), (24,)]


@pytest.mark.parametrize("view", ["c", "t", "step", "rev"])
@pytest.mark.parametrize("shape", RESHAPES)
def test_reshape(backend, view, shape):
    host = sample("float32", (4, 6))
    views = {"c": lambda a: a, "t": lambda a: a.T, "step": lambda a: a[:, ::2],
             "rev": lambda a: a[::-1]}  # fmt: skip
    x = views[view](ember.asarray(host))
    h = views[view](host)
    if h.size != np.prod([abs(n) for n in shape]) and -1 not in shape:
        return
    try:
        expected = h.reshape(shape)
    except ValueError:
        with pytest.raises(ValueError):
            x.reshape(shape)
        return
    got = x.reshape(shape)
    check(got, expected)
    shares = np.shares_memory(expected, h)
    assert (got.buffer is x.buffer) == shares or not shares  # views when NumPy views


def test_reshape_views_and_copies(backend):
    x = ember.asarray(sample("int32", (4, 6)))
    assert x.reshape(2, 12).buffer is x.buffer
    assert x.T.reshape(6, 2, 2).buffer is x.buffer  # splits an axis: still a view
    assert x.T.reshape(24).buffer is not x.buffer  # needs a copy
    assert x[:, :3].reshape(4, 3, 1).buffer is x.buffer
    with pytest.raises(ValueError, match="without copying"):
        x.T.reshape(24, copy=False)
    with pytest.raises(ValueError, match="cannot reshape array of size 24 into shape"):
        x.reshape(5, 5)
    with pytest.raises(ValueError, match="one unknown dimension"):
        x.reshape(-1, -1)
    check(x.ravel(), x.to_numpy().ravel())
    check(x.T.flatten(), x.to_numpy().T.flatten())


LAYOUTS = {
    "c": lambda a: a,
    "t": lambda a: a.transpose(2, 0, 1),
    "step": lambda a: a[:, ::2],
    "rev": lambda a: a[::-1, :, ::-1],
    "f": lambda a: a.transpose(2, 1, 0).copy().transpose(2, 1, 0),  # Fortran-contiguous
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("order", ["C", "F", "A"])
def test_reshape_ravel_flatten_in_numpy_orders(backend, layout, order):
    """NumPy's third positional argument of reshape is ``order``: numpy.reshape(x, s, 'F')
    once reached Ember's ``copy`` and gave the C-order result."""
    base = sample("float32", (2, 3, 4))
    h, x = LAYOUTS[layout](base), LAYOUTS[layout](ember.asarray(base))
    for shape in [(-1,), (h.size // 2, 2), (2, -1, 1)]:
        check(np.reshape(x, shape, order), np.reshape(h, shape, order))  # positional
        check(x.reshape(shape, order=order), h.reshape(shape, order=order))
        check(ember.reshape(x, shape, order=order), h.reshape(shape, order=order))
    check(x.ravel(order), h.ravel(order))
    check(np.ravel(x, order), np.ravel(h, order))
    flat = x.flatten(order)
    check(flat, h.flatten(order))
    assert flat.buffer is not x.buffer  # always a copy
    # views where NumPy views: F order of a Fortran-contiguous array, for one
    assert (x.ravel(order).buffer is x.buffer) == np.shares_memory(h.ravel(order), h)


def test_reshape_order_errors(backend):
    x = ember.asarray(sample("float32", (4, 6)))
    with pytest.raises(ValueError, match="order must be 'C', 'F' or 'A', not 'Q'"):
        ember.reshape(x, (6, 4), "Q")
    with pytest.raises(ValueError, match="without copying"):
        ember.reshape(x, (24,), order="F", copy=False)
    assert ember.reshape(x.T, (24,), order="F", copy=False).buffer is x.buffer


def test_transpose_family(backend):
    host = sample("float64", (2, 3, 4))
    x = ember.asarray(host)
    check(x.T, host.T)
    check(ember.permute_dims(x, (1, 0, 2)), np.transpose(host, (1, 0, 2)))
    check(ember.transpose(x, (2, 0, 1)), np.transpose(host, (2, 0, 1)))
    check(x.transpose(1, 2, 0), host.transpose(1, 2, 0))
    check(ember.matrix_transpose(x), np.swapaxes(host, -1, -2))
    check(ember.swapaxes(x, 0, 2), np.swapaxes(host, 0, 2))
    check(ember.moveaxis(x, 0, -1), np.moveaxis(host, 0, -1))
    check(ember.moveaxis(x, (0, 1), (2, 0)), np.moveaxis(host, (0, 1), (2, 0)))
    with pytest.raises(ValueError, match="don't match"):
        ember.permute_dims(x, (0, 1))


def test_squeeze_expand_flip_broadcast(backend):
    host = sample("int8", (1, 3, 1, 4))
    x = ember.asarray(host)
    check(ember.squeeze(x), np.squeeze(host))
    check(x.squeeze(axis=2), host.squeeze(axis=2))
    with pytest.raises(ValueError, match="size not equal to one"):
        ember.squeeze(x, axis=1)
    check(ember.expand_dims(x, 0), np.expand_dims(host, 0))
    check(ember.expand_dims(x, (-1, 1)), np.expand_dims(host, (-1, 1)))
    check(ember.flip(x), np.flip(host))
    check(ember.flip(x, axis=-1), np.flip(host, axis=-1))
    check(ember.flip(x, axis=(1, 3)), np.flip(host, axis=(1, 3)))
    check(ember.broadcast_to(x, (2, 1, 3, 5, 4)), np.broadcast_to(host, (2, 1, 3, 5, 4)))
    with pytest.raises(ValueError, match="could not be broadcast"):
        ember.broadcast_to(x, (3, 3))
    a, b = ember.broadcast_arrays(ember.zeros((3, 1)), ember.zeros(4))
    assert a.shape == b.shape == (3, 4)
    assert ember.broadcast_shapes((3, 1), (4,), (2, 1, 1)) == (2, 3, 4)


def test_concatenate_and_stack(backend):
    a, b = sample("float32", (2, 3), 1), sample("int64", (4, 3), 2)
    da, db = ember.asarray(a), ember.asarray(b)
    check(ember.concatenate([da, db]), np.concatenate([a, b]))
    check(ember.concatenate([da.T, db.T], axis=1), np.concatenate([a.T, b.T], axis=1))
    check(ember.concatenate([da, db], axis=None), np.concatenate([a, b], axis=None))
    check(ember.concatenate([da, da[::-1]], axis=-1), np.concatenate([a, a[::-1]], axis=-1))
    check(ember.stack([da, da * 2]), np.stack([a, a * 2]))
    check(ember.stack([da, da], axis=-1), np.stack([a, a], axis=-1))
    with pytest.raises(ValueError, match="along dimension 1, the array at index 0 has size 3"):
        ember.concatenate([da, ember.zeros((2, 4))])
    with pytest.raises(ValueError, match="same shape"):
        ember.stack([da, db])
    with pytest.raises(TypeError, match="ember.asarray"):
        ember.concatenate([da, a])


def test_ascontiguousarray_and_astype(backend):
    host = sample("float32", (5, 4))
    x = ember.asarray(host)
    assert ember.ascontiguousarray(x) is x
    check(ember.ascontiguousarray(x.T), np.ascontiguousarray(host.T))
    check(ember.astype(x, "int16"), host.astype("int16"))


def test_unstack_roll_tile_repeat(backend):
    host = sample("int32", (3, 4), 5)
    x = ember.asarray(host)
    for got, want in zip(ember.unstack(x, axis=1), np.moveaxis(host, 1, 0), strict=True):
        check(got, want)
    check(ember.roll(x, 1), np.roll(host, 1))
    check(ember.roll(x, -2, axis=1), np.roll(host, -2, axis=1))
    check(ember.roll(x, (1, 5), axis=(0, 1)), np.roll(host, (1, 5), axis=(0, 1)))
    check(ember.tile(x, 2), np.tile(host, 2))
    check(ember.tile(x, (2, 1, 3)), np.tile(host, (2, 1, 3)))
    check(ember.repeat(x, 2, axis=0), np.repeat(host, 2, axis=0))
    check(ember.repeat(x, 3), np.repeat(host, 3))
    check(np.repeat(x, [1, 0, 2], axis=0), np.repeat(host, [1, 0, 2], axis=0))  # a list
    check(np.repeat(x, (2,)), np.repeat(host, (2,)))  # one count for all
    check(ember.repeat(x, np.int64(2), axis=1), np.repeat(host, 2, axis=1))
    with pytest.raises(TypeError, match="repeats must be an int, a list of counts"):
        ember.repeat(x, 2.5)  # never truncated
    with pytest.raises(ValueError, match="may not be negative"):
        ember.repeat(x, -1)


def test_meshgrid_tril_triu(backend):
    a, b, c = np.arange(3.0), np.arange(4.0), np.arange(2.0)
    for indexing in ("xy", "ij"):
        for sparse in (False, True):
            for got, want in zip(
                ember.meshgrid(*map(ember.asarray, (a, b, c)), indexing=indexing, sparse=sparse),
                np.meshgrid(a, b, c, indexing=indexing, sparse=sparse),
                strict=True,
            ):
                check(got, want)
    x = ember.asarray(a)
    grid, _ = ember.meshgrid(x, ember.asarray(b))  # new arrays, as NumPy's copy=True
    grid[0, 0] = 9.0  # one element changes, the coordinates do not (they once did)
    check(grid, np.where(np.arange(12).reshape(4, 3) == 0, 9.0, np.meshgrid(a, b)[0]))
    check(x, a)
    host = sample("float32", (2, 4, 5), 6)
    x = ember.asarray(host)
    for k in (-1, 0, 2):
        check(ember.tril(x, k=k), np.tril(host, k=k))
        check(ember.triu(x, k=k), np.triu(host, k=k))


@pytest.mark.parametrize("dtype", ["int8", "bool", "float16", "complex64", "float64"])
def test_tril_triu_zero_by_position_in_every_dtype_and_layout(backend, dtype):
    # rows and columns past any small dtype's range; NaN and inf above the diagonal become
    # zeros (NumPy's where); a transposed view and a batch of matrices
    host = sample(dtype, (3, 300, 140), 8)
    if dtype == "float64":
        host[0, 0, 139] = np.nan
        host[1, 2, 100] = np.inf
    x = ember.asarray(host)
    for k in (0, 130, -200, 500):
        check(ember.tril(x, k=k), np.tril(host, k=k))
        check(ember.triu(x, k=k), np.triu(host, k=k))
    view = x[1].mT
    check(ember.tril(view, k=3), np.tril(host[1].T, k=3))


def test_real_imag_conj(backend):
    host = sample("float64", (4,), 7)
    x = ember.asarray(host)
    check(ember.real(x), np.real(host))
    check(ember.imag(x), np.zeros(4))
    check(ember.conj(x), np.conj(host))


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("order", ["K", "C", "F", "A"])
def test_astype_and_copy_take_numpys_order(backend, layout, order):
    """ndarray.astype(dtype, order, casting, subok, copy) and ndarray.copy(order) in NumPy's
    parameter order: the values, and the layout NumPy gives the copy."""
    base = sample("float64", (2, 3, 4))
    h, x = LAYOUTS[layout](base), LAYOUTS[layout](ember.asarray(base))
    for got, want in ((x.astype("float32", order), h.astype(np.float32, order)),
                      (x.copy(order), h.copy(order))):  # fmt: skip
        check(got, want)
        items = want.dtype.itemsize
        assert [s // items for s in got.strides] == [s // items for s in want.strides]


def test_astype_casting_rule(backend):
    x = ember.asarray(sample("float64", (3, 2)))
    with pytest.raises(
        TypeError, match="cannot cast an array of float64 to int32 under the rule 'safe'"
    ):
        x.astype("int32", "K", "safe")
    check(x.astype("float32", casting="same_kind"), x.to_numpy().astype(np.float32))
    assert x.astype("float64", copy=False) is x


def test_axis_out_of_range_is_numpys_axis_error(backend):
    # code written for NumPy catches numpy.exceptions.AxisError (or IndexError)
    x = ember.zeros((2, 3))
    for fn in (
        lambda: ember.sum(x, axis=2),
        lambda: ember.sort(x, axis=2),
        lambda: ember.cumsum(x, axis=-3),
        lambda: ember.swapaxes(x, 0, 3),
        lambda: ember.expand_dims(x, 4),
        lambda: ember.take(x, ember.asarray([0]), axis=3),
        lambda: np.sum(x, axis=5),
    ):
        with pytest.raises(np.exceptions.AxisError, match="out of bounds"):
            fn()
        with pytest.raises(IndexError):
            fn()
