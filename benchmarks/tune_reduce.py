"""Tune the reduction kernels' launch shapes on the current device.

``python -m benchmarks.tune_reduce`` runs, for each configuration of
``ember.array.reduce`` (threads per block, elements per thread before an axis is split,
device-fulls of threads a split aims at, outputs per thread row of ``reduce_cols``), a
fresh process that sets them before any
reduction and measures ``sum``/``argmax`` of 1 GiB float32 and ``sum(axis=0)``,
``sum(axis=1)``, ``std_mean(axis=1)`` of a 16k x 16k matrix (best of 20, GB/s of bytes
read), next to PyTorch's in the same process when it is installed.  The defaults are the
first configuration.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

CONFIGS = [
    (256, 16, 2, 32),
    (512, 16, 2, 32),
    (256, 32, 2, 32),
    (256, 16, 1, 32),
    (256, 8, 4, 32),
    (256, 16, 2, 128),
    (512, 16, 2, 64),
    (1024, 16, 2, 32),
]
SIDE = 1 << 14


def measure(block: int, per_thread: int, oversubscribe: int, column_tile: int) -> dict:
    import numpy as np

    import ember
    from ember.array import reduce

    reduce.BLOCK_GPU, reduce.MIN_PER_THREAD = block, per_thread
    reduce.OVERSUBSCRIBE, reduce.COLUMN_TILE = oversubscribe, column_tile
    host = np.random.default_rng(0).random((SIDE, SIDE), dtype=np.float32)
    m = ember.asarray(host)
    x = m.reshape(-1)
    cases = {
        "sum": lambda a: a.sum(), "argmax": lambda a: a.argmax(),
        "sum_axis0": lambda a: a.sum(0), "sum_axis1": lambda a: a.sum(1),
    }  # fmt: skip
    out = {k: _best(lambda f=f, k=k: f(x if k in ("sum", "argmax") else m), host.nbytes)
           for k, f in cases.items()}  # fmt: skip
    out["std_mean_axis1"] = _best(lambda: ember.std_mean(m, axis=1), host.nbytes)
    try:
        import torch

        t = torch.from_numpy(host).to("cuda")
        sync = torch.cuda.synchronize
        for k, f in cases.items():
            arg = t.reshape(-1) if k in ("sum", "argmax") else t
            out[f"torch_{k}"] = _best(lambda f=f, arg=arg: f(arg), host.nbytes, sync)
        out["torch_std_mean_axis1"] = _best(lambda: torch.std_mean(t, dim=1), host.nbytes, sync)
    except ImportError:
        pass
    return out


def _best(fn, nbytes: int, sync=None, reps: int = 20) -> float:
    import ember

    sync = sync or ember.synchronize
    fn()
    sync()
    best = 1e9
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - t)
    return round(nbytes / best / 1e9, 1)


def main() -> None:
    if len(sys.argv) == 5:
        print("RESULT " + json.dumps(measure(*map(int, sys.argv[1:]))))
        return
    for config in CONFIGS:
        p = subprocess.run(
            [sys.executable, "-m", "benchmarks.tune_reduce", *map(str, config)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        line = next((x for x in p.stdout.splitlines() if x.startswith("RESULT ")), None)
        block, per_thread, over, tile = config
        print(f"block={block:5d} per_thread={per_thread:3d} oversubscribe={over} tile={tile:3d} ",
              line[7:] if line else p.stderr[-300:], flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
