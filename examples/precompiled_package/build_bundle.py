"""Record the package's kernels into ``src/ember_example/kernels.ember``.

Run it on the kind of machine the package targets (same GPU architecture and driver/NVRTC
major.minor), in a fresh process, before building the wheel::

    EMBER_CACHE=0 python build_bundle.py            # EMBER_CACHE=0: compile everything here
    python -m build                                 # the bundle is package data

Run it once per target (e.g. sm_80 and sm_90 machines) with ``--out`` naming distinct files,
and load each at import: entries for another device are ignored.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "src"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.path.join(HERE, "src", "ember_example", "kernels.ember")
    parser.add_argument("--out", default=default, help="the bundle to write")
    args = parser.parse_args()
    if os.path.exists(args.out):
        os.remove(args.out)  # record from the compiler, not from an older bundle

    import ember_example

    import ember

    with ember.cache.record() as rec:
        ember_example.workload()
    rec.save(args.out)
    print(f"recorded {len(rec)} kernels for {ember.get_backend().device.name} into {args.out}")


if __name__ == "__main__":
    main()
