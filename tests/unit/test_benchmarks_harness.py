"""The benchmark harness's interleaved timing and its paired ratios (no device)."""

from __future__ import annotations

from benchmarks.harness import interleaved_us, issue_us, paired_ratio


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


def test_issue_us_times_bursts_each_after_a_sync_outside_the_clock():
    events = []
    out = issue_us(lambda: events.append("call"), lambda: events.append("sync"), 10, 4)
    # n // burst = 2 bursts of 4 calls, each after a sync, and a last sync for the work
    assert events == ["sync", *["call"] * 4, "sync", *["call"] * 4, "sync"]
    assert out >= 0.0
    events.clear()
    issue_us(lambda: events.append("call"), lambda: events.append("sync"), 2, 8)
    assert events.count("call") == 8  # at least one burst, however small n is


def test_interleaved_us_with_bursts_goes_through_issue_us():
    events = []
    impls = {"a": (lambda: events.append("a"), lambda: events.append("s"))}
    samples: dict[str, list[float]] = {}
    interleaved_us(impls, 6, 2, samples, burst=3)
    assert len(samples["a"]) == 2
    # warm-up: max(6 // 10, 1) = 1 call and a sync; then per repeat 2 bursts of 3 + 3 syncs
    assert events == ["a", "s", *(["s", "a", "a", "a", "s", "a", "a", "a", "s"] * 2)]


def test_paired_runs_of_the_startup_rounds():
    from benchmarks.startup import paired

    samples = {
        "ember": [{"t": 1.0}, {"t": 2.0}, {"error": "x"}, {"t": 3.0}],
        "torch": [{"t": 2.0}, {"t": 4.0}, {"t": 1.0}, {"error": "y"}],
    }
    results = {"ember": {"t": 2.0}, "torch": {"t": 3.0}}
    paired(results, samples, "t")
    r = results["ember"]["per_run_to_torch"]
    assert float(r) == 0.5 and r.n == 2  # the rounds where one of the two failed are left out
    assert "per_run_to_ember" not in results["ember"]


class _Loop:
    """An impl with ``times(k)``, as benchmarks.impls.DriverLoop: k calls in one."""

    def __init__(self):
        self.runs: list[int] = []

    def __call__(self):
        self.runs.append(1)

    def times(self, k: int) -> None:
        self.runs.append(k)


def test_interleaved_us_times_a_loop_in_c_as_one_call_of_n():
    loop = _Loop()
    samples: dict[str, list[float]] = {}
    out = interleaved_us({"c": (loop, None)}, 5, 3, samples)
    assert loop.runs == [1, 5, 5, 5]  # the warm-up's n // 10 single calls, then times(n)
    assert len(samples["c"]) == 3 and float(out["c"]) >= 0


def test_issue_us_hands_a_loop_in_c_one_burst_at_a_time():
    loop, syncs = _Loop(), []
    issue_us(loop, lambda: syncs.append(1), 12, 4)
    assert loop.runs == [4, 4, 4] and len(syncs) == 4
