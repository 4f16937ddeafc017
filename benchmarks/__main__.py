"""Run the benchmarks: ``python -m benchmarks [--only NAME[,NAME]] [--out DIR] [--quick]``.

Prints a table of medians with ratios to the raw ``cuda.bindings`` floor and writes
``<area>-<device>-<date>.json`` and ``.md`` per area into ``--out`` (default
``benchmarks/results``).  Exits cleanly, saying why, where there is no CUDA device.

Reading results (no device needed):

* ``python -m benchmarks compare OLD NEW``: NEW against OLD, case by case, with the noise.
* ``python -m benchmarks report RESULTS_DIR``: plots of the newest results of every area.
* ``python -m benchmarks figures [--check]``: the README's table of figures.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time

from benchmarks import AREAS
from benchmarks.harness import (
    CASES,
    Context,
    entry,
    environment,
    guarded,
    has_floor,
    rows,
    text_table,
    write_results,
)

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
COMMANDS = {
    "compare": "benchmarks.compare",
    "report": "benchmarks.report",
    "figures": "benchmarks.figures",
}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    p.add_argument("--only", default="", help="comma-separated case names or areas to run")
    p.add_argument("--out", default=DEFAULT_OUT, help="directory for the JSON/markdown results")
    p.add_argument("--quick", action="store_true", help="fewer iterations and smaller sizes")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    p.add_argument("--no-peers", action="store_true", help="skip CuPy and PyTorch")
    p.add_argument(
        "--backend",
        default=env_backend(),
        choices=BACKENDS,
        help="Ember backend (default: EMBER_BACKEND when it names one, else cuda); 'opencl' "
        "runs only Ember's side of the cases that support it (to check them without a GPU; "
        "no raw floor, no peers)",
    )
    return p.parse_args(argv)


BACKENDS = ("cuda", "opencl", "cpu")  # cpu: the cpu area (benchmarks/cpu.py)


def env_backend() -> str:
    """``EMBER_BACKEND`` when it names a backend (not ``auto``), else ``cuda``."""
    from ember.config import settings

    return settings.backend if settings.backend in BACKENDS else "cuda"


def selected(only: str) -> list[str]:
    """Names of the cases to run: all, or those named (or in the areas named) by ``only``."""
    wanted = {w.strip() for w in only.split(",") if w.strip()}
    names = [n for n, c in CASES.items() if not wanted or n in wanted or c.area in wanted]
    unknown = wanted - set(CASES) - {c.area for c in CASES.values()}
    if unknown:
        sys.exit(f"unknown case(s) {sorted(unknown)}; known: {', '.join(CASES)}")
    return names


def cuda_backend(name: str = "cuda"):
    """Ember's CUDA (or ``name``) backend, or None after saying why there is none."""
    from ember.runtime import backend as registry

    try:
        return registry.use(name)
    except Exception as exc:
        print(f"benchmarks skipped: no {'CUDA' if name == 'cuda' else name} device ({exc})")
        return None


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in COMMANDS:
        return importlib.import_module(COMMANDS[argv[0]]).main(argv[1:])
    args = parse_args(argv)
    for area in AREAS:
        importlib.import_module(f"benchmarks.{area}")
    names = selected(args.only)
    if args.list:
        for name in names:
            print(f"{name:20s} {CASES[name].area:10s} {CASES[name].doc}")
        return 0
    backend = cuda_backend(args.backend)
    if backend is None:
        return 0
    from benchmarks.impls import load_peers

    peers = {} if args.no_peers or args.backend != "cuda" else load_peers()
    ctx = Context(backend, args.quick, peers)
    env = environment(ctx)
    print(f"{env['device']} ({env['arch']}), commit {env['commit']}, versions {env['versions']}")
    by_area: dict[str, dict] = {}
    for name in names:
        c = CASES[name]
        t = time.perf_counter()
        results: dict = {}
        guarded(results, "ember", lambda c=c: {"case": c.run(ctx)})  # a crash stops one case
        results = results["ember"].get("case", results)
        print(f"  {name}: {time.perf_counter() - t:.1f} s", flush=True)
        by_area.setdefault(c.area, {})[name] = entry(c, results)
    for area, results in by_area.items():
        header, table = rows(results)
        ratio = "; ratio to raw cuda.bindings" if has_floor(results) else ""
        print(f"\n{area} (median{ratio})\n{text_table(header, table)}")
        for path in write_results(args.out, area, env, results):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
