"""Small things a newcomer reads: ``ember demo --help`` in full, ``python -m benchmarks``
honouring EMBER_BACKEND, benchmark headers without a raw floor on OpenCL (no device)."""

from __future__ import annotations

import io
import os
import pathlib
import subprocess
import sys

import pytest

from ember import cli

ROOT = pathlib.Path(__file__).parents[2]


def test_demo_help_is_complete(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["demo", "--help"])
    assert exit_.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "check each against NumPy, and say how long every step took." in out
    assert "Exit status 0 when every result matches." in out


@pytest.mark.parametrize(
    "env, expected", [("opencl", "opencl"), ("cuda", "cuda"), ("auto", "cuda")]
)
def test_benchmarks_honour_ember_backend(env, expected):
    code = "from benchmarks.__main__ import parse_args; print(parse_args([]).backend)"
    environ = dict(os.environ, EMBER_BACKEND=env, EMBER_WARMUP="0")
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True
    )
    assert out.stdout.strip() == expected, out.stderr


def _results(impls):
    return {
        "launch": {
            "metric": "us", "unit": "us/launch", "better": "lower", "doc": "",
            "results": {i: {"us": 2.0} for i in impls},
        }
    }  # fmt: skip


def test_benchmark_tables_mention_the_floor_only_with_one():
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks import harness
    finally:
        sys.path.remove(str(ROOT))
    env = {"area": "runtime", "device": "d", "arch": None, "date": "now", "commit": "c",
           "python": "3", "quick": False, "versions": {}}  # fmt: skip
    for impls, ratio in ((["ember"], False), (["ember", "raw"], True)):
        results = _results(impls)
        header, table = harness.rows(results)
        text = harness.markdown(env, header, table, results)
        assert ("ratio to the raw cuda.bindings floor" in text) is ratio
        assert harness.has_floor(results) is ratio
        assert ("(1.00x)" in " ".join(table[0])) is ratio


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_precompile_progress_on_a_terminal_and_in_a_log():
    tty, log = _Terminal(), io.StringIO()
    for stream in (tty, log):
        show = cli.progress_printer(stream, width=10)
        for done in range(1, 41):
            show(done, 40)
    assert tty.getvalue().count("\r") == 40 and tty.getvalue().endswith("40/40 kernels, 0 s\n")
    assert "\r  [#####.....] 20/40 kernels" in tty.getvalue()
    lines = log.getvalue().splitlines()
    assert len(lines) == 11 and lines[0].startswith("  1/40 kernels (0%")
    assert lines[-1].startswith("  40/40 kernels (100%") and "\r" not in log.getvalue()
