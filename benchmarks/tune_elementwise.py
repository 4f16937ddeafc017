"""Tune the contiguous elementwise kernels' launch shape on the current device.

``python -m benchmarks.tune_elementwise`` runs, for each (threads per block, waves) pair, a
fresh process that sets ``ember.array.elementwise``'s block size and grid limit before any op and
measures fused ``2*x+y`` and ``sin(x)`` on 1 GiB float32 vectors (best of 20, GB/s counted
read + write), next to PyTorch's in the same process when it is installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

CONFIGS = [(256, 32), (256, 4), (512, 8), (256, 1 << 20), (512, 1 << 20), (128, 1 << 20)]


def measure(block: int, waves: int) -> dict:
    import ember
    from ember.array import elementwise

    elementwise.BLOCK = elementwise.GPU_BLOCK = block
    elementwise.MAX_GRID = min(waves * 132, (1 << 31) - 1)  # waves per SM (132 on an H200)

    @ember.vectorize
    def axpy(x, y):
        return 2 * x + y

    n = 1 << 28
    x, y = ember.ones(n, ember.float32), ember.ones(n, ember.float32)
    out = {
        "axpy": _best(lambda: axpy(x, y, out=y), 12 * n),
        "sin": _best(lambda: ember.sin(x), 8 * n),
    }
    try:
        import torch

        a, b = torch.ones(n, device="cuda"), torch.ones(n, device="cuda")
        sync = torch.cuda.synchronize
        out["torch_axpy"] = _best(lambda: torch.add(b, a, alpha=2, out=b), 12 * n, sync)
        out["torch_sin"] = _best(lambda: torch.sin(a), 8 * n, sync)
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
    if len(sys.argv) == 3:
        print("RESULT " + json.dumps(measure(int(sys.argv[1]), int(sys.argv[2]))))
        return
    for block, waves in CONFIGS:
        p = subprocess.run(
            [sys.executable, "-m", "benchmarks.tune_elementwise", str(block), str(waves)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        line = next((x for x in p.stdout.splitlines() if x.startswith("RESULT ")), None)
        print(f"block={block:5d} waves={waves:8d} ", line[7:] if line else p.stderr[-300:])


if __name__ == "__main__":
    main()
