"""The ``ember`` command (also ``python -m ember``).

Sub-commands: ``info`` (versions, backends, devices), ``demo`` (the main job: compile and run
real kernels, checked against NumPy, with timings).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import platform
import sys


def _dist_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def cmd_info(args: argparse.Namespace) -> int:
    """Print Ember's version, each backend with its libraries and devices, or why it is off."""
    import ember
    from ember.config import describe, settings
    from ember.errors import EmberError
    from ember.runtime import backend as registry

    print(f"ember {ember.__version__} (Python {platform.python_version()}, {platform.platform()})")
    print(f"numpy {_dist_version('numpy')}")
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
        for lib, version in be.library_versions().items():
            print(f"  {lib}: {version}")
        for dev in be.devices():
            mark = "*" if dev.index == be.device.index else " "
            print(f" {mark}{dev.summary()}")
    if usable:
        print(f"\ndefault backend: {registry.get().name}")
    if args.verbose:
        print("\nsettings:\n" + describe())
    return 0 if usable else 1


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the demo kernels (see :mod:`ember.demo`)."""
    from ember import demo

    return demo.main(args.rest)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ember", description="Ember: GPU kernels in Python.")
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="versions, backends and devices")
    info.add_argument("-v", "--verbose", action="store_true", help="also list EMBER_* settings")
    info.set_defaults(run=cmd_info)
    demo = sub.add_parser(
        "demo", help="compile and run real kernels, with timings (see: ember demo --help)",
        add_help=False,
    )
    demo.set_defaults(run=cmd_demo)
    args, rest = parser.parse_known_args(argv)
    if args.command != "demo" and rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.rest = rest
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
