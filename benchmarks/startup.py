"""Start-up: ``import ember`` and the first kernel of a fresh process, against the raw
``cuda.bindings`` floor and the peers, every case in its own fresh processes.

* ``startup_import``: the import (Ember with its warmup on; the floor imports cuda.bindings
  and NumPy).
* ``startup_first_cold``: the first kernel after the import with an empty cache (Ember: a
  new ``EMBER_CACHE_DIR`` per run; peers: new cache directories).
* ``startup_first_warm``: the same with a warm disk cache (one run fills it first).
* ``startup_first_bundle``: Ember with ``EMBER_CACHE=0`` and a bundle recorded by an earlier
  process, loaded right after the import.
* ``startup_after_setup``: the first kernel after 0.2 s of NumPy work, Ember's warmup on and
  off (warm caches everywhere); as in a real program, Ember's kernel is defined before the
  setup (at import), launched after it.
* ``startup_loop``: a pure-Python loop in the main thread right after ``import ember``,
  iterations with the warmup on and off (the warmup must not take the main thread's time).
* ``startup_first_op``: the first array operation (``ones(n) * 2 + 1``) after the import,
  warm caches (Ember's kernels compiled by an earlier process, as ``ember precompile`` or a
  bundle would have them), against PyTorch and CuPy.

Python bytecode: every child compiles into one shared ``PYTHONPYCACHEPREFIX`` (made once per
run, before the first measurement), as an installed package has its ``.pyc`` files; without
it each child would compile Ember's ~120 modules from source (~0.3 s on the H100 machine),
which an installed Ember never does.

Each number is the median of ``runs`` fresh processes (5; 3 with ``--quick``; three times
as many for ``startup_first_op``, whose Ember row also has ``per_run_to_<peer>``: the median
of the ratios within a round), the implementations interleaved run by run.  NumPy is
imported before every first kernel's clock starts; Ember's import of ``cuda.bindings`` (in
its warmup thread) is inside it, the floor's is not.  ``total_s`` (process start to the
kernel's completion) compares without that split.
``x_<peer>`` is how many times faster Ember is.
The child is ``benchmarks/startup_child.py`` (the method of ``shared/peers/peers.py``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile

from benchmarks.harness import Context, case, median

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "startup_child.py")
PEERS = ("cupy", "cupy_raw", "torch", "triton")


def _runs(ctx: Context) -> int:
    return 3 if ctx.quick else 5


def _available(ctx: Context) -> list[str]:
    """The peers to run: importable here (never imported in this process for the check)."""
    if ctx.backend.name != "cuda" or not ctx.peers:
        return []
    have = {n for n in ("cupy", "torch", "triton") if importlib.util.find_spec(n)}
    out = [p for p in PEERS if p.split("_")[0] in have]
    return [p for p in out if p != "triton" or "torch" in have]


def child(impl: str, scenario: str, env: dict, timeout: float = 300) -> dict:
    """Run one fresh process; its RESULT dict (or ``{"error": ...}``)."""
    proc = subprocess.run(
        [sys.executable, CHILD, impl, scenario], env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"error": (proc.stderr or proc.stdout)[-600:]}


def base_env(ctx: Context, **extra: str) -> dict:
    """The children's environment; on OpenCL (checks without a GPU) the warmup, which
    ``import ember`` starts only for CUDA, is forced so that its cases measure something."""
    env = dict(
        os.environ, PYTHONPYCACHEPREFIX=bytecode_dir(), STARTUP_ARCH=ctx.backend.device.arch or ""
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(EMBER_BACKEND=ctx.backend.name, EMBER_CACHE="1", EMBER_WARMUP="1")
    if ctx.backend.name != "cuda":
        env["EMBER_WARMUP"] = "force"
    env.pop("STARTUP_BUNDLE", None)
    env.update(extra)
    return env


_BYTECODE: list[str] = []


def bytecode_dir() -> str:
    """The children's shared bytecode cache, with Ember's modules compiled into it."""
    if not _BYTECODE:
        d = tempfile.mkdtemp(prefix="ember-startup-pyc-")
        import ember

        package = os.path.dirname(os.path.abspath(ember.__file__))
        env = dict(os.environ, PYTHONPYCACHEPREFIX=d)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", package], env=env, capture_output=True,
            timeout=300,
        )  # fmt: skip
        _BYTECODE.append(d)
    return _BYTECODE[0]


def fresh_caches(**extra: str) -> dict:
    """Empty cache directories for Ember and every peer."""
    d = tempfile.mkdtemp(prefix="ember-startup-")
    return {
        "EMBER_CACHE_DIR": os.path.join(d, "ember"), "PEER_CACHE": d, "CUPY_CACHE_DIR": d,
        "TRITON_CACHE_DIR": d, **extra,
    }  # fmt: skip


def summarize(samples: dict[str, list[dict]], metric: str) -> dict[str, dict[str, float]]:
    """Medians per implementation; errors reported as such."""
    out: dict[str, dict[str, float]] = {}
    for impl, runs in samples.items():
        good = [r for r in runs if "error" not in r and metric in r]
        if not good:
            errors = [r.get("error", f"no {metric}") for r in runs]
            out[impl] = {"error": str(errors[0])[:300]}
            continue
        med = {metric: median(r[metric] for r in good), "runs": len(good)}
        for extra in ("import_s", "import_first_s", "total_s", "setup_s", "warmup_cpu_ms"):
            values = [r[extra] for r in good if extra in r]
            if values:
                med[extra] = median(values)
        origins = {r.get("origin") for r in good} - {None}
        if origins:
            med["origin"] = ",".join(sorted(origins))  # type: ignore[assignment]
        out[impl] = med
    return out


def ratios(results: dict, metric: str, ember: str = "ember") -> None:
    """Add ``x_<peer>`` (peer time / Ember time) to Ember's row, and for a first kernel
    ``vs_raw_incl_import`` (Ember's import + first kernel over the floor's binding import +
    first kernel: the issue-19 target is at most 1.3)."""
    mine = results.get(ember, {}).get(metric)
    if not mine:
        return
    for impl, row in results.items():
        if impl != ember and not impl.startswith("ember") and metric in row:
            results[ember][f"x_{impl}"] = row[metric] / mine
    both, floor = results[ember].get("import_first_s"), results.get("raw", {}).get("import_first_s")
    if both and floor:
        results[ember]["vs_raw_incl_import"] = both / floor


def measure(
    ctx: Context, impls: dict[str, dict], scenario: str, prime: bool = False, runs: int = 0
):
    """Run every implementation ``runs`` times (default :func:`_runs`), interleaved;
    ``impls`` maps a row name to ``{"impl": child impl, "env": env or callable giving one
    per run}``."""
    samples: dict[str, list[dict]] = {name: [] for name in impls}
    envs = {name: spec["env"] for name, spec in impls.items()}
    if prime:  # fill each warm cache once
        for name, spec in impls.items():
            child(spec["impl"], scenario, envs[name])
    for _ in range(runs or _runs(ctx)):
        for name, spec in impls.items():
            env = spec["env"]() if callable(spec["env"]) else spec["env"]
            samples[name].append(child(spec["impl"], scenario, env))
    return samples


def _impls(ctx: Context, ember_env, peer_env, peers: list[str]) -> dict[str, dict]:
    table = {"ember": {"impl": "ember", "env": ember_env}}
    if ctx.backend.name == "cuda":
        table["raw"] = {"impl": "raw", "env": peer_env}
        for p in peers:
            table[p] = {"impl": p, "env": peer_env}
    return table


@case("startup_import", "import_s", "s")
def startup_import(ctx: Context):
    """import time of a fresh process (Ember: warmup on)."""
    env = base_env(ctx, **fresh_caches())
    impls = _impls(ctx, env, env, [p for p in _available(ctx) if p in ("cupy", "torch")])
    impls["ember-nowarmup"] = {"impl": "ember", "env": dict(env, EMBER_WARMUP="0")}
    results = summarize(measure(ctx, impls, "import"), "import_s")
    ratios(results, "import_s")
    return results


@case("startup_first_cold", "first_kernel_s", "s")
def startup_first_cold(ctx: Context):
    """First kernel after import, empty caches (a new directory per run)."""
    fresh = lambda: base_env(ctx, **fresh_caches())  # noqa: E731
    results = summarize(
        measure(ctx, _impls(ctx, fresh, fresh, _available(ctx)), "first"), "first_kernel_s"
    )
    ratios(results, "first_kernel_s")
    return results


@case("startup_first_warm", "first_kernel_s", "s")
def startup_first_warm(ctx: Context):
    """First kernel after import, warm disk caches."""
    env = base_env(ctx, **fresh_caches())
    impls = _impls(ctx, env, env, _available(ctx))
    impls["ember-nowarmup"] = {"impl": "ember", "env": dict(env, EMBER_WARMUP="0")}
    _bindings_row(ctx, impls, env)
    samples = measure(ctx, impls, "first", prime=True)
    results = summarize(samples, "first_kernel_s")
    ratios(results, "first_kernel_s")
    paired(results, samples, "import_first_s", "incl_import_per_run_to")
    return results


def _bindings_row(ctx: Context, impls: dict, env: dict) -> None:
    """Ember with the driver through cuda.bindings (EMBER_CUDA_DRIVER=bindings), beside
    the default ctypes table: what the bindings' import costs a first kernel."""
    if ctx.backend.name == "cuda":
        impls["ember-bindings"] = {"impl": "ember", "env": dict(env, EMBER_CUDA_DRIVER="bindings")}


@case("startup_first_bundle", "first_kernel_s", "s")
def startup_first_bundle(ctx: Context):
    """First kernel after import from a bundle (EMBER_CACHE=0; load_bundle counted)."""
    env = base_env(ctx, **fresh_caches())
    bundle = os.path.join(env["PEER_CACHE"], "kernels.ember")
    recorded = child("ember", "record", dict(env, EMBER_CACHE="0", STARTUP_BUNDLE=bundle))
    if "error" in recorded:
        return {"ember": {"error": recorded["error"][:300]}}
    ember_env = dict(env, EMBER_CACHE="0", STARTUP_BUNDLE=bundle)
    impls = _impls(ctx, ember_env, env, [])
    results = summarize(measure(ctx, impls, "first", prime=True), "first_kernel_s")
    ratios(results, "first_kernel_s")
    return results


@case("startup_after_setup", "first_kernel_s", "s")
def startup_after_setup(ctx: Context):
    """First kernel after 0.2 s of NumPy setup work; Ember's warmup on vs off."""
    env = base_env(ctx, SETUP_S="0.2", **fresh_caches())
    impls = _impls(ctx, env, env, [p for p in _available(ctx) if p != "triton"])
    impls["ember-nowarmup"] = {"impl": "ember", "env": dict(env, EMBER_WARMUP="0")}
    results = summarize(measure(ctx, impls, "setup", prime=True), "first_kernel_s")
    ratios(results, "first_kernel_s")
    return results


@case("startup_first_op", "first_kernel_s", "s")
def startup_first_op(ctx: Context):
    """First array operation (ones(n) * 2 + 1, float32) after import, warm caches."""
    env = base_env(ctx, **fresh_caches())
    table = {"ember": {"impl": "ember", "env": env}}
    for p in [p for p in _available(ctx) if p in ("cupy", "torch")]:
        table[p] = {"impl": p, "env": env}
    _bindings_row(ctx, table, env)
    samples = measure(ctx, table, "op", prime=True, runs=3 * _runs(ctx))
    results = summarize(samples, "first_kernel_s")
    ratios(results, "first_kernel_s")
    paired(results, samples, "first_kernel_s")
    return results


def paired(
    results: dict, samples: dict[str, list[dict]], metric: str, key: str = "per_run_to"
) -> None:
    """Add ``<key>_<peer>`` to Ember's row: the median over runs of Ember's ``metric`` over
    the peer's in the same round of interleaved runs (a slow stretch of the machine falls on
    both), where both runs of a round succeeded."""
    mine = samples.get("ember", [])
    for peer, runs in samples.items():
        pairs = [
            (a[metric], b[metric])
            for a, b in zip(mine, runs, strict=False)
            if peer != "ember" and metric in a and metric in b
        ]
        if pairs and "ember" in results and "error" not in results["ember"]:
            results["ember"][f"{key}_{peer}"] = median(x / y for x, y in pairs)


@case("startup_loop", "iters", "iterations", better="higher")
def startup_loop(ctx: Context):
    """Pure-Python loop iterations in the main thread for 0.3 s after import: warmup on/off."""
    env = base_env(ctx, LOOP_S="0.3", **fresh_caches())
    impls = {
        "ember": {"impl": "ember", "env": env},
        "ember-nowarmup": {"impl": "ember", "env": dict(env, EMBER_WARMUP="0")},
    }
    samples = measure(ctx, impls, "loop", prime=True)
    results = summarize(samples, "iters")
    on, off = results["ember"].get("iters"), results["ember-nowarmup"].get("iters")
    if on and off:
        results["ember"]["slowdown_pct"] = (1 - on / off) * 100
        done = [r.get("warmup_done") for r in samples["ember"] if "error" not in r]
        results["ember"]["warmup_done_in_window"] = sum(map(bool, done)) / max(len(done), 1)
    return results
