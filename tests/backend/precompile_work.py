"""A small set of kernels for tests/backend/test_precompile_parallel.py, named by the string
"precompile_work:examples" so that spawned compiler processes can import it."""

import numpy as np

import ember


@ember.kernel
def scale(a, x):
    i = ember.global_id()
    if i < x.shape[0]:
        x[i] = a * x[i]


@ember.kernel
def shift(x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = x[i] + 1


def examples():
    for dt in (np.float32, np.int32, np.int64):
        yield scale, (2, np.zeros(8, dt))
    yield shift, (np.zeros(8, np.float32), np.zeros(8, np.float32))
    yield shift, (np.zeros(8, np.int32), np.zeros(8, np.int32))
