"""A small ``dask.distributed`` cluster of Ember workers (issue 16): two worker processes,
one per device (two PoCL devices in CI), give NumPy's results; chunks move between
workers; a worker killed in the middle of a task is restarted and the result is still
right.  One cluster serves the module (starting worker processes is the slow part)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
import ember.dask  # noqa: E402 - after the skips
from ember.dask.cluster import _position, usable_devices  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client():
    devices = usable_devices()[:2]
    cluster = ember.dask.LocalCluster(
        n_workers=2, devices=devices, dashboard_address=None, silence_logs=40
    )
    with cluster, distributed.Client(cluster) as c:
        c.wait_for_workers(2, timeout=120)
        yield c, devices


def _device_index():
    return ember.get_backend().device.index


def test_one_worker_per_device(client):
    c, devices = client
    seen = sorted(c.run(_device_index).values())
    assert seen == sorted(devices * (2 // len(devices)))
    assert _position(3) == 3 and _position("gpu-12") == 12 and _position("tcp://a:1") == 1


def test_cluster_results_equal_numpy(client):
    c, _ = client
    host = np.random.default_rng(5).standard_normal((60, 48)).astype(np.float32)
    x = ember.dask.to_device(da.from_array(host, chunks=(15, 16)))
    y = (x * 2 - 1).persist()
    distributed.wait(y)
    assert len([w for w, keys in c.has_what().items() if keys]) == 2  # spread over both
    # (few kinds of kernels: each worker compiles its own; tests/array/test_dask_arrays.py
    # covers Dask's algorithms)
    for got, want in (
        (y.sum(axis=0), (host * 2 - 1).sum(axis=0)),
        (y.rechunk((60, 6)).sum(axis=1), (host * 2 - 1).sum(axis=1)),  # chunks move
    ):
        result = got.compute()
        assert isinstance(result, ember.ndarray)  # pickled back to this process's device
        np.testing.assert_allclose(result.to_numpy(), want, rtol=1e-4, atol=1e-5)
    r = ember.dask.default_rng(11).standard_normal((64, 64), chunks=32, dtype=ember.float32)
    np.testing.assert_array_equal(r.compute().to_numpy(), r.compute(scheduler="sync").to_numpy())


def test_a_worker_dying_mid_task_is_rescheduled(client, tmp_path):
    c, _ = client
    marker = str(tmp_path / "died-once")

    def fragile(block):
        if not os.path.exists(marker):  # the first task to get here kills its worker
            open(marker, "w").close()
            os._exit(1)
        return block * 3

    x = ember.dask.default_rng(2).standard_normal((40, 40), chunks=(10, 40), dtype=ember.float32)
    meta = ember.dask.meta(x.dtype, 2)  # (else Dask calls fragile here to learn its type)
    got = x.map_blocks(fragile, dtype=x.dtype, meta=meta).sum(axis=0).compute()
    assert os.path.exists(marker)
    want = (x * 3).sum(axis=0).compute(scheduler="sync")
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-5)
    c.wait_for_workers(2, timeout=120)  # the nanny brought the worker back
    assert len(c.run(_device_index)) == 2
