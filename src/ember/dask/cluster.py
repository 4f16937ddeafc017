"""Dask clusters of Ember workers: one worker process per device.

dask-cuda's convention, for any backend: each worker process runs one device - its
default device, ``EMBER_DEVICE``, set in its environment before it starts - with one
thread (Ember's work is asynchronous on the device; more threads would only contend).
Chunks move between workers pickled through host memory (:mod:`ember.array.protocols`;
``distributed`` sends the host copy's buffer out of band, so that is one device-to-host
and one host-to-device copy per move).  A worker that dies is restarted by its nanny on
the same device, and the scheduler runs its lost tasks again.

::

    from dask.distributed import Client
    import ember.dask

    with ember.dask.LocalCluster() as cluster, Client(cluster) as client:
        x = ember.dask.default_rng(0).standard_normal((100_000, 10_000), chunks=(10_000, 10_000),
                                                   dtype=ember.float32)
        print(x.std(axis=0).compute())  # an ember array, on the client's device

Other clusters (``dask worker`` on each machine, SSH, dask-jobqueue) start one worker per
device with ``EMBER_DEVICE`` set for it, or use :class:`Nanny` as the nanny class
(``docs/scaling.md``).
"""

from __future__ import annotations

import re
from typing import Any

import distributed

import ember


class Nanny(distributed.Nanny):
    """A nanny whose worker process runs on one device.

    Parameters
    ----------
    ember_devices : sequence of int, optional
        Device indices; the worker named ``i`` (or ``"...-i"``, as ``dask worker
        --nworkers`` names them) gets ``ember_devices[i % len(ember_devices)]`` as its
        ``EMBER_DEVICE``.  None: the environment's ``EMBER_DEVICE`` is left as it is.
    **kwargs
        What :class:`distributed.Nanny` takes.  The worker preloads ``ember.dask`` (Ember's
        registrations with Dask).
    """

    def __init__(self, *args: Any, ember_devices=None, name=None, env=None, **kwargs: Any):
        env = dict(env or {})
        if ember_devices:
            env["EMBER_DEVICE"] = str(ember_devices[_position(name) % len(ember_devices)])
        preload = list(kwargs.pop("preload", None) or ())
        if "ember.dask" not in preload:
            preload.append("ember.dask")
        super().__init__(*args, name=name, env=env, preload=preload, **kwargs)


def _position(name: Any) -> int:
    """The worker's number in its group: ``3`` for ``3`` or ``"gpu-3"``, else 0."""
    if isinstance(name, int):
        return name
    found = re.search(r"(\d+)$", str(name or ""))
    return int(found.group(1)) if found else 0


def usable_devices(backend: str | None = None) -> list[int]:
    """Indices of the devices of ``backend`` (default: the current one) that can run
    Ember's kernels."""
    found = ember.devices(backend)
    return [d.index for d in found if d.info.extra.get("can_compile", True)]


def LocalCluster(  # noqa: N802 - reads as the class it makes
    n_workers: int | None = None,
    *,
    devices=None,
    backend: str | None = None,
    threads_per_worker: int = 1,
    **kwargs: Any,
) -> distributed.LocalCluster:
    """A :class:`distributed.LocalCluster` of worker processes, one per device.

    Parameters
    ----------
    n_workers : int, optional
        Default: one per device.  More workers than devices share devices in turn.
    devices : sequence of int or ember.Device, optional
        The devices to use (default: every device of the backend that can run kernels).
    backend : str, optional
        The backend the workers use (default: this process's current backend).
    threads_per_worker : int
        Threads per worker (default 1: one thread feeds a device best).
    **kwargs
        Passed to :class:`distributed.LocalCluster` (``memory_limit``, ``dashboard_address``
        ...); ``env`` is added to every worker's environment.
    """
    name = backend or ember.get_backend().name
    if devices is None:
        indices = usable_devices(name)
    else:
        indices = [ember.Device(name, d).index if isinstance(d, int) else ember.Device(d).index
                   for d in devices]  # fmt: skip
    if not indices:
        raise ValueError(f"no device of the {name} backend can run kernels here")
    env = {**kwargs.pop("env", {}), "EMBER_BACKEND": name}
    return distributed.LocalCluster(
        n_workers=len(indices) if n_workers is None else n_workers,
        threads_per_worker=threads_per_worker,
        processes=True,
        worker_class=Nanny,
        ember_devices=tuple(indices),
        env=env,
        **kwargs,
    )
