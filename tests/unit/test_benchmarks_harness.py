"""The benchmark harness's interleaved timing and its paired ratios (no device)."""

from __future__ import annotations

from benchmarks.harness import interleaved_us, paired_ratio


def test_paired_ratio_cancels_a_drift_between_repeats():
    # a machine twice as slow in every other repeat: each repeat's ratio is still 0.5
    samples = {"a": [1.0, 2.0, 1.0, 2.0, 1.0], "raw": [2.0, 4.0, 2.0, 4.0, 2.0]}
    r = paired_ratio(samples, "a", "raw")
    assert float(r) == 0.5 and r.lo == r.hi == 0.5 and r.n == 5
    assert paired_ratio(samples, "a", "missing") is None
    assert paired_ratio({"a": [1.0], "raw": [1.0, 2.0]}, "a", "raw") is None


def test_interleaved_us_hands_out_every_repeat_and_drops_a_failing_impl():
    calls = []

    def boom():
        raise RuntimeError("no such device")

    impls = {"a": (lambda: calls.append("a"), None), "bad": (boom, None)}
    samples: dict[str, list[float]] = {}
    out = interleaved_us(impls, 3, 4, samples)
    assert isinstance(out["bad"], str) and "no such device" in out["bad"]
    assert len(samples["a"]) == 4 and samples["bad"] == []
    assert calls.count("a") == 1 + 3 * 4  # one warm-up call, then 4 repeats of 3
