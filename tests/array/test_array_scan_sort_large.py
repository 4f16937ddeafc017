"""More than 2**31 elements on the GPU: the scan, the compaction and the radix sort with
64-bit positions (the onesweep pass limit of 2**30 keys sends this sort through the classic
passes).  About 30 GB of device memory at the peak; CUDA only."""

from __future__ import annotations

import numpy as np
import pytest

import ember

N = (1 << 31) + 5

pytestmark = [pytest.mark.gpu, pytest.mark.slow]


@pytest.fixture
def cuda():
    with ember.use_backend("cuda") as be:
        yield be
        ember.synchronize()
        ember.memory.empty_cache()


def test_cumsum_past_2_31(cuda):
    x = ember.ones(N, ember.int8)
    c = ember.cumsum(x)  # int64
    assert c.shape == (N,)
    np.testing.assert_array_equal(c[:3].to_numpy(), [1, 2, 3])
    np.testing.assert_array_equal(c[-3:].to_numpy(), [N - 2, N - 1, N])
    mid = (1 << 31) - 2
    np.testing.assert_array_equal(c[mid : mid + 4].to_numpy(), np.arange(mid + 1, mid + 5))


def test_mask_and_nonzero_past_2_31(cuda):
    i = ember.arange(N, dtype=ember.int64)
    mask = (i % 3) == 0
    del i
    vals = ember.ones(N, ember.uint8)
    picked = vals[mask]
    assert picked.shape == ((N + 2) // 3,)
    (where,) = ember.nonzero(mask)
    np.testing.assert_array_equal(where[-2:].to_numpy(), [3 * ((N - 1) // 3) - 3,
                                                           3 * ((N - 1) // 3)])  # fmt: skip


def test_sort_past_2_31(cuda):
    x = ember.asarray(np.random.default_rng(0).integers(0, 256, 1 << 20, dtype=np.uint8))
    big = ember.tile(x, N // (1 << 20) + 1)[:N]
    s = ember.sort(big)
    assert bool(ember.all(s[1:] >= s[:-1]))
    assert int(ember.sum(s)) == int(ember.sum(big))
