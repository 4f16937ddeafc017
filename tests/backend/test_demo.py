"""``ember demo`` runs every kernel on each backend and they all match NumPy."""

from __future__ import annotations

from ember import demo


def test_demo_runs_and_matches_numpy(backend, capsys):
    assert demo.main(["--size", "small", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert f"demo on {backend.name}" in out
    for name in ("axpy", "stencil", "matmul", "histogram", "reduction"):
        assert f"] {name}:" in out
    assert out.count(": OK") == 5 and "5/5 kernels match NumPy" in out
    assert "compile" in out and "first" in out and "steady" in out
