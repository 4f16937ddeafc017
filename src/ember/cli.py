"""The ``ember`` command (also ``python -m ember``).

Sub-commands: ``info`` (versions, backends, devices), ``demo`` (the main job: compile and run
real kernels, checked against NumPy, with timings), ``cache info|clear|export|import|verify``
(the kernel cache and bundles, see docs/precompiling.md) and ``precompile`` (Ember's own
kernels into the cache).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import platform
import sys
import time


def _dist_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


# The optional C modules that need no device (setup.py builds them where a C compiler is);
# the CUDA backend says the same of its own (its launch path) in `ember info`.
COMPILED = (
    ("ember.compiler._dispatch", "kernel[grid, block] and kernel.launch(n)"),
    ("ember.runtime._pool", "the allocator's hit path"),
    ("ember.array._core", "the array fields' set-once guard"),
    ("ember.runtime._waitable", "the streams' counters as C fields"),
)


def compiled_paths() -> str:
    """Which of :data:`COMPILED` this install has, and which run in Python instead."""
    built, python = [], []
    for module, what in COMPILED:
        try:
            importlib.import_module(module)
        except ImportError:
            python.append(what)
        else:
            built.append(f"{what} ({module})")
    line = ", ".join(built) or "none"
    if python:
        line += (
            f"; in Python: {', '.join(python)} (reinstall where a C compiler and Python's "
            "headers are for the compiled forms)"
        )
    return line


def cmd_info(args: argparse.Namespace) -> int:
    """Print Ember's version, each backend with its libraries and devices, or why it is off."""
    import ember
    from ember.config import describe, settings
    from ember.errors import EmberError
    from ember.runtime import backend as registry

    print(f"ember {ember.__version__} (Python {platform.python_version()}, {platform.platform()})")
    print(f"numpy {_dist_version('numpy')}")
    print(f"compiled paths: {compiled_paths()}")
    print(f"EMBER_BACKEND={settings.backend}")
    usable = []
    for name in registry.REGISTRY:
        print(f"\nbackend {name}:")
        try:
            be = registry.get(name)
        except EmberError as exc:
            print("  unavailable: " + str(exc).replace("\n", "\n  "))
            continue
        usable.append(name)
        for lib, version in {**be.library_versions(), **be.describe()}.items():
            print(f"  {lib}: {version}")
        for dev in be.devices():
            mark = "*" if dev.index == be.device.index else " "
            print(f" {mark}{dev.summary()}")
    if usable:
        print(f"\ndefault backend: {registry.get().name}")
    _print_cache_and_warmup()
    if args.verbose:
        print("\nsettings:\n" + describe())
    return 0 if usable else 1


def _print_cache_and_warmup() -> None:
    from ember import cache
    from ember import startup as warmup

    info = cache.info()
    state = "on" if info["enabled"] else "off (EMBER_CACHE=0)"
    print(f"\nkernel cache: {info['directory']} ({state}), {info['entries']} entries")
    for name, w in warmup.status().items():
        print(f"warmup ({name}): {w!r}")


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the demo kernels (see :mod:`ember.demo`)."""
    from ember import demo

    return demo.main(args.rest)


def cmd_cache(args: argparse.Namespace) -> int:
    """``ember cache info|clear|export PATH|import PATH|verify PATH [--sha256 HEX]``."""
    from ember import cache

    if args.action == "info":
        info = cache.info()
        state = "enabled" if info["enabled"] else "disabled (EMBER_CACHE=0)"
        access = "writable" if info["writable"] else "read-only"
        limit = f"{info['limit'] / 2**20:.0f} MiB" if info["limit"] else "no limit"
        print(f"kernel cache: {info['directory']} ({state}, {access})")
        print(f"  {info['entries']} entries, {info['bytes'] / 2**20:.2f} MiB (limit {limit})")
        for target, count in sorted(info["targets"].items()):
            print(f"  {count:6d}  {target}")
        return 0
    if args.action == "clear":
        print(f"removed {cache.clear()} entries from {cache.directory()}")
        return 0
    if not args.path:
        print(f"ember cache {args.action}: give the bundle's path", file=sys.stderr)
        return 2
    if args.action == "verify":
        return _verify(args.path, args.sha256)
    if args.sha256:
        print("ember cache: --sha256 goes with verify", file=sys.stderr)
        return 2
    if args.action == "export":
        backend = None
        if args.compatible:
            from ember.runtime import backend as registry

            backend = registry.get()
        print(f"wrote {cache.export(args.path, backend)} entries to {args.path}")
        return 0
    try:
        count = cache.import_bundle(args.path)
    except cache.BundleError as exc:
        print(f"ember cache import: {exc}", file=sys.stderr)
        return 1
    print(f"imported {count} entries into {cache.directory()}")
    return 0


def _verify(path: str, sha256: str | None) -> int:
    """``ember cache verify PATH [--sha256 HEX]``: 0 when the bundle is intact (and is the
    published file), 1 otherwise; the file's SHA-256 is printed either way it can be."""
    from ember import cache

    try:
        bundle = cache.verify(path, sha256)
    except cache.BundleError as exc:
        print(f"ember cache verify: {exc}", file=sys.stderr)
        return 1
    pinned = "matches the given SHA-256" if sha256 else "no --sha256 given: nothing pinned"
    print(
        f"{path}: intact, {len(bundle.entries)} kernels ({len(bundle.ignored)} for another "
        f"Ember), created {bundle.created or '?'}"
    )
    print(f"sha256 {bundle.sha256} ({pinned})")
    return 0


def cmd_precompile(args: argparse.Namespace) -> int:
    """Compile Ember's standard kernels (arrays, demo) for this device into the cache."""
    from ember.precompile import default_jobs, precompile
    from ember.runtime import backend as registry

    be = registry.get()
    jobs = args.jobs or default_jobs()
    what = args.examples or "Ember's kernels"
    print(f"precompiling {what} for {be.device.name} ({be.name}), {jobs} processes")
    result = precompile(
        args.examples, args.bundle, jobs=jobs, progress=progress_printer(sys.stdout),
        verbose=args.verbose,
    )  # fmt: skip
    print(
        f"{result['kernels']} kernels: {result['compiled']} compiled, {result['cached']} "
        f"already cached, {result['failed']} failed ({result['seconds']:.1f} s)"
    )
    if result["compiler_output"] and not args.verbose:
        print(f"(the device compiler printed {result['compiler_output']} lines; -v shows them)")
    if args.bundle:
        print(f"bundle written to {args.bundle}")
    return 1 if result["failed"] else 0


def progress_printer(stream, width: int = 30):
    """``progress(done, total)``: a bar redrawn in place on a terminal, else a plain line at
    every tenth of the work (logs and CI keep readable output)."""
    start = time.perf_counter()
    tty = getattr(stream, "isatty", lambda: False)()
    shown = [-1]

    def progress(done: int, total: int) -> None:
        seconds = time.perf_counter() - start
        if tty:
            filled = width * done // max(total, 1)
            bar = "#" * filled + "." * (width - filled)
            end = "\n" if done >= total else ""
            stream.write(f"\r  [{bar}] {done}/{total} kernels, {seconds:.0f} s{end}")
            stream.flush()
            return
        tenth = 10 * done // max(total, 1)
        if tenth > shown[0]:
            shown[0] = tenth
            stream.write(f"  {done}/{total} kernels ({10 * tenth}%, {seconds:.0f} s)\n")
            stream.flush()

    return progress


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ember", description="Ember: GPU kernels in Python.")
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="versions, backends and devices")
    info.add_argument("-v", "--verbose", action="store_true", help="also list EMBER_* settings")
    info.set_defaults(run=cmd_info)
    demo = sub.add_parser(
        "demo",
        help="compile and run real kernels, with timings (see: ember demo --help)",
        add_help=False,
    )
    demo.set_defaults(run=cmd_demo)
    cache = sub.add_parser(
        "cache", help="the kernel cache: info, clear, export, import; verify a bundle"
    )
    cache.add_argument("action", choices=("info", "clear", "export", "import", "verify"))
    cache.add_argument("path", nargs="?", help="bundle file (export, import, verify)")
    cache.add_argument(
        "--compatible", action="store_true", help="export: only entries this device can run"
    )
    cache.add_argument(
        "--sha256", help="verify: the bundle file's published SHA-256 (as sha256sum prints it)"
    )
    cache.set_defaults(run=cmd_cache)
    pre = sub.add_parser("precompile", help="compile Ember's own kernels into the cache")
    pre.add_argument("--bundle", help="also write them as a bundle at this path")
    pre.add_argument(
        "--examples",
        metavar="MODULE:FUNCTION",
        help="precompile the (kernel, example_args) pairs this function returns instead",
    )
    pre.add_argument(
        "-j", "--jobs", type=int, default=0, help="compiler processes (default: one per CPU)"
    )
    pre.add_argument(
        "-v", "--verbose", action="store_true", help="show what the device compiler prints"
    )
    pre.set_defaults(run=cmd_precompile)
    args, rest = parser.parse_known_args(argv)
    if args.command != "demo" and rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.rest = rest
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
