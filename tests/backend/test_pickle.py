"""pickle / copy / deepcopy of arrays and kernels; a multiprocessing round trip."""

from __future__ import annotations

import copy
import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from pickle_work import scale, scale_in_child

import ember


def test_arrays_pickle_through_the_host(backend):
    host = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    x = ember.asarray(host)
    for view, want in ((x, host), (x[:, ::-2, 1:], host[:, ::-2, 1:]), (x.T, host.T)):
        back = pickle.loads(pickle.dumps(view))
        assert isinstance(back, ember.ndarray) and back.dtype == want.dtype
        assert back.shape == want.shape and back.buffer is not x.buffer
        np.testing.assert_array_equal(back.to_numpy(), want)
    for odd in (np.float32(2.5).reshape(()), np.zeros((0, 3), np.float64)):
        back = pickle.loads(pickle.dumps(ember.asarray(odd)))
        assert back.shape == odd.shape and back.dtype == odd.dtype
        np.testing.assert_array_equal(back.to_numpy(), odd)


def test_copy_and_deepcopy_copy_on_the_device(backend):
    x = ember.asarray(np.arange(5, dtype=np.float32))
    for c in (copy.copy(x), copy.deepcopy(x)):
        assert c.buffer is not x.buffer
        c[...] = 7
        np.testing.assert_array_equal(x.to_numpy(), np.arange(5, dtype=np.float32))
    pair = copy.deepcopy([x, x])
    assert pair[0] is pair[1]  # the memo: one copy of one array


def test_kernels_pickle_by_reference():
    assert pickle.loads(pickle.dumps(scale)) is scale
    assert copy.copy(scale) is scale and copy.deepcopy(scale) is scale

    def make():
        @ember.kernel
        def inner(x):
            x[0] = 1

        return inner

    with pytest.raises(pickle.PicklingError, match="by reference.*top level of a module"):
        pickle.dumps(make())
    with pytest.raises(pickle.UnpicklingError, match="no such kernel"):
        pickle.loads(pickle.dumps(scale).replace(b"scale", b"scalf"))


def test_raw_kernels_pickle_by_value():
    src = "__kernel void k(__global float* x) { x[get_global_id(0)] = 1.0f; }"
    k = pickle.loads(pickle.dumps(ember.RawKernel(src, "k")))
    assert isinstance(k, ember.RawKernel) and k.source == src and k.name == "k"


def test_multiprocessing_ships_arrays_and_kernels(backend, monkeypatch):
    """A spawned process (what multiprocessing and Dask workers are) gets an array and a
    kernel, launches it on its own device, and sends the array back."""
    monkeypatch.setenv("EMBER_BACKEND", backend.name)  # the child's default backend
    host = np.arange(6, dtype=np.float32)
    # an executor, not a Pool: a worker that dies raises BrokenProcessPool instead of hanging
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn) as pool:
        job = pool.submit(scale_in_child, scale, ember.asarray(host), 3.0)
        back, name = job.result(timeout=300)
    assert name == backend.name and isinstance(back, ember.ndarray)
    np.testing.assert_array_equal(back.to_numpy(), 3 * host)
