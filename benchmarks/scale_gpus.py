"""Multi-GPU strong scaling of the ``scale`` graphs: one Dask worker process per GPU.

``python -m benchmarks.scale_gpus --gpus 1,2,4 [--quick] [--out DIR]``

The array is fixed (float32, 1.5 x one GPU's memory, chunks of ``BENCH_SCALE_CHUNK_GIB``
GiB, as in :mod:`benchmarks.scale`) and the number of GPUs grows: each worker makes its
chunks on its own device and reduces them there; only the partial results travel.  Ember's
cluster is ``ember.dask.LocalCluster`` (``EMBER_DEVICE`` per worker); CuPy's is a
``distributed.LocalCluster`` whose nannies set ``CUDA_VISIBLE_DEVICES`` per worker (the
convention of dask-cuda, which is not installed there).  Both run the same graph in the
same run.  Reports GB/s of array, ``speedup`` over one GPU and ``efficiency`` (speedup /
GPUs) per library, and writes ``scale_gpus-<device>-<date>.json``/``.md`` (the result files
of ``python -m benchmarks``).  Counts above the GPUs present are skipped (issue 17 runs it
on a multi-GPU machine).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from benchmarks.harness import Case, Context, entry, environment, median, write_results
from benchmarks.scale import expected, graph, sizes

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def _cupy_nanny():
    import distributed

    class CupyNanny(distributed.Nanny):
        """The worker named ``i`` sees only GPU ``devices[i]`` (dask-cuda's convention)."""

        def __init__(self, *args, gpu_devices=(), name=None, env=None, **kwargs):
            env = dict(env or {})
            if gpu_devices:
                env["CUDA_VISIBLE_DEVICES"] = str(gpu_devices[int(name) % len(gpu_devices)])
            super().__init__(*args, name=name, env=env, **kwargs)

    return CupyNanny


def cluster(lib: str, gpus: int):
    import distributed

    import ember.dask

    common = {"dashboard_address": None, "silence_logs": 40, "memory_limit": 0}
    if lib == "ember":
        return ember.dask.LocalCluster(n_workers=gpus, devices=list(range(gpus)), **common)
    return distributed.LocalCluster(
        n_workers=gpus, threads_per_worker=1, processes=True, worker_class=_cupy_nanny(),
        gpu_devices=tuple(range(gpus)), **common,
    )  # fmt: skip


def _module(lib: str):
    import importlib

    return importlib.import_module(lib)


def run_one(ctx: Context, lib: str, kind: str, gpus: int) -> dict:
    """GB/s of ``kind``'s graph on ``gpus`` workers of ``lib``."""
    import distributed

    n, chunk = sizes(ctx)
    mod = _module(lib)
    meta = mod.empty((0,) * (1 if kind == "sum" else 2), dtype=mod.float32)
    want = expected(kind, n, chunk)
    with cluster(lib, gpus) as c, distributed.Client(c) as client:
        client.wait_for_workers(gpus, timeout=300)
        g = graph(kind, mod, meta, n, chunk)
        result = g.compute()  # warm-up: compiles on every worker
        samples = []
        for _ in range(max(ctx.repeats // 2, 2)):
            t = time.perf_counter()
            result = client.compute(g).result()
            samples.append(time.perf_counter() - t)
    host = result.get() if hasattr(result, "get") else np.asarray(result.to_numpy())
    if not np.allclose(host, want, rtol=1e-3):
        raise AssertionError(f"{lib} on {gpus} GPUs: wrong result {np.ravel(host)[:3]}")
    return {"gbs": median(samples).map(lambda s: 4 * n / s / 1e9)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.scale_gpus", description=__doc__)
    p.add_argument("--gpus", default="1,2,4", help="comma-separated GPU counts")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default=DEFAULT_OUT)
    p.add_argument("--libs", default="ember,cupy")
    p.add_argument("--backend", default="cuda", help="Ember's backend ('opencl': a local check)")
    args = p.parse_args(argv)
    import ember
    from ember.runtime import backend as registry

    try:
        be = registry.use(args.backend)
    except Exception as exc:
        print(f"scale_gpus skipped: no {args.backend} device ({exc})")
        return 0
    present = len(ember.devices())
    counts = [g for g in (int(s) for s in args.gpus.split(",")) if g <= present]
    ctx = Context(be, args.quick, {})
    env = environment(ctx)
    env["gpus_present"] = present
    cases = {}
    for kind in ("sum", "pipeline"):
        results: dict[str, dict] = {}
        for lib in args.libs.split(","):
            for gpus in counts:
                impl = f"{lib}_{gpus}gpu"
                t = time.perf_counter()
                try:
                    results[impl] = run_one(ctx, lib, kind, gpus)
                except Exception as exc:  # one failure does not stop the others
                    results[impl] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
                print(f"  {kind} {impl}: {results[impl]} ({time.perf_counter() - t:.0f} s)")
            one = results.get(f"{lib}_1gpu", {}).get("gbs")
            for gpus in counts:
                r = results.get(f"{lib}_{gpus}gpu", {})
                if one and r.get("gbs"):
                    r["speedup"] = float(r["gbs"]) / float(one)
                    r["efficiency"] = r["speedup"] / gpus
        name = f"scale_gpus_{kind}"
        doc = f"strong scaling of the scale_{kind} graph, one worker per GPU"
        cases[name] = entry(Case(name, "scale_gpus", "gbs", "GB/s", "higher", None, doc), results)
    for path in write_results(args.out, "scale_gpus", env, cases):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
