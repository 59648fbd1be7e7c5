import math
from dataclasses import replace

import pytest

from fault_models import DENORMAL_PROBE
from itercast.collect.manifest import LABEL_PROTOCOL_COLUMNS, REFERENCE_COLUMNS
from itercast.collect.measure import ReferenceWorkload, denormals_flushed, flushes_denormals, measure
from itercast.collect.runner import Config

pytest.importorskip("torch")

PROBE = Config(DENORMAL_PROBE, 2, 8, "float32", "cpu", 1)


def test_steps_are_measured_with_subnormals_flushed_and_the_setting_restored(tmp_path, quick_protocol):
    before = flushes_denormals()
    row = measure(PROBE, quick_protocol, tmp_path)
    assert row["steps"] >= quick_protocol.measured_steps and row["profiled_steps"] == quick_protocol.profile_active
    assert flushes_denormals() == before


def test_flushing_can_be_turned_off(tmp_path, quick_protocol):
    with denormals_flushed(True):
        assert flushes_denormals()
        with denormals_flushed(False):
            assert not flushes_denormals()
        assert flushes_denormals()
    with pytest.raises(RuntimeError, match="not flushed"):
        measure(PROBE, replace(quick_protocol, flush_denormal=False), tmp_path)


def test_a_label_pass_times_the_steps_and_writes_no_trace(tmp_path, quick_protocol, monkeypatch):
    monkeypatch.chdir(tmp_path)
    row = measure(PROBE, quick_protocol, None)
    assert set(row) == {"step_ms", "step_ms_iqr", "step_ms_min", "step_ms_max", "steps", *REFERENCE_COLUMNS,
                        *LABEL_PROTOCOL_COLUMNS}
    assert row["label_protocol"] == "fresh-loop" and row["label_rounds"] == quick_protocol.label_rounds
    assert row["steps"] == quick_protocol.label_rounds and row["step_ms"] > 0 and row["label_ratio"] > 0
    assert not list(tmp_path.iterdir())


def test_the_reference_workload_is_timed_next_to_the_steps(tmp_path, quick_protocol):
    row = measure(PROBE, quick_protocol, tmp_path)
    parts = [row[f"reference_{part}_ms"] for part in ReferenceWorkload.PARTS]
    assert all(part > 0 for part in parts)
    assert row["reference_ms"] == pytest.approx(sum(parts))
    without = measure(PROBE, replace(quick_protocol, reference_repeats=0), None)
    assert not set(REFERENCE_COLUMNS) & set(without)


def test_the_reference_workload_tracks_a_slower_machine(monkeypatch):
    import time

    import torch

    workload = ReferenceWorkload(torch.device("cpu"), torch.float32)
    normal = workload.time(3)
    clock = time.perf_counter_ns
    slow = iter(range(0, 10**12, 7_000_000))  # every clock read 7 ms after the last one

    monkeypatch.setattr(time, "perf_counter_ns", lambda: next(slow))
    slowed = workload.time(3)
    monkeypatch.setattr(time, "perf_counter_ns", clock)
    assert len(normal) == len(slowed) == 3
    assert all(timing == {part: 7.0 for part in ReferenceWorkload.PARTS} for timing in slowed)
    assert all(timing[part] < 7.0 for timing in normal for part in ReferenceWorkload.PARTS)


def test_the_reference_workload_keeps_its_values_bounded():
    import torch

    workload = ReferenceWorkload(torch.device("cpu"), torch.float32)
    workload.time(50)
    assert torch.isfinite(workload.streams[0]).all()
    assert workload.layer.grad is None


def test_a_wall_label_is_the_median_of_consecutive_steps(quick_protocol):
    row = measure(PROBE, replace(quick_protocol, label_protocol="wall"), None)
    assert row["label_protocol"] == "wall" and "label_ratio" not in row
    assert row["steps"] >= quick_protocol.measured_steps and row["step_ms_min"] <= row["step_ms"] <= row["step_ms_max"]


def prepared(name: str, estimate_ns: float = 1e6):
    from types import SimpleNamespace

    from itercast.collect.measure import Prepared

    config = SimpleNamespace(id=name, device="cpu", threads=1)
    return Prepared(config, step=lambda: None, fields={}, step_estimate_ns=estimate_ns, wall_ns=[])


def test_paired_rounds_divide_out_a_machine_that_slows_down_as_they_run(monkeypatch, quick_protocol):
    """The fake clock: each reference step takes 10 ms times a slowdown that grows with every call;
    configuration a's steps take 2x the reference's, b's 5x: their ratios come out exact while their
    wall times spread."""
    from itercast.collect import measure as measuring

    items = [prepared("a"), prepared("b")]
    factor = {id(items[0].step): 2.0, id(items[1].step): 5.0}
    calls = iter(range(10**6))

    def fake_timed_ns(run):
        slowdown = 1.0 + next(calls) / 50
        return int(10e6 * slowdown * factor.get(id(run), 1.0))

    monkeypatch.setattr(measuring, "timed_ns", fake_timed_ns)
    labels = measuring.time_labels(items, replace(quick_protocol, label_protocol="paired-rounds"), raise_errors=True)
    assert labels["a"]["label_ratio"] == pytest.approx(2.0, rel=0.03)
    assert labels["b"]["label_ratio"] == pytest.approx(5.0, rel=0.03)
    assert labels["b"]["step_ms_max"] / labels["b"]["step_ms_min"] > 1.2
    assert labels["a"]["label_rounds"] == quick_protocol.label_rounds and labels["a"]["label_spread"] < 0.05


def test_a_configuration_failing_in_the_rounds_spares_the_others(monkeypatch, quick_protocol):
    from itercast.collect import measure as measuring

    items = [prepared("fine"), prepared("breaks")]
    visits = {"n": 0}

    def breaks():
        visits["n"] += 1
        if visits["n"] > 2:
            raise MemoryError("simulated: can't allocate memory")

    items[1].step = breaks
    quick_protocol = replace(quick_protocol, label_protocol="paired-rounds")
    labels = measuring.time_labels(items, quick_protocol, raise_errors=False)
    assert labels["breaks"]["status"] == "oom" and "can't allocate" in labels["breaks"]["message"]
    assert labels["fine"]["label_rounds"] == quick_protocol.label_rounds
    with pytest.raises(MemoryError, match="simulated"):
        visits["n"] = 0
        measuring.time_labels(items, quick_protocol, raise_errors=True)


@pytest.mark.parametrize("pair_ms, expected", [(0.1, 8), (12.5, 8), (100.0, 1), (5000.0, 1)])
def test_pairs_fill_the_protocols_time_within_its_bounds(pair_ms, expected):
    from itercast.collect.measure import Protocol, pairs_per_visit

    protocol = Protocol(label_rounds=5, min_label_pairs=5, max_label_pairs=40, min_measured_seconds=0.5)
    assert pairs_per_visit(pair_ms * 1e6, protocol) == expected


def test_a_block_measures_each_configuration_and_records_one_that_fails(tmp_path, quick_protocol):
    from fault_models import RAISING

    from itercast.collect.measure import measure_block

    raising = Config(RAISING, 2, 8, "float32", "cpu", 1)
    fine, failed = measure_block([PROBE, raising], replace(quick_protocol, label_protocol="paired-rounds"), tmp_path)
    assert fine["status"] == "ok" and fine["label_protocol"] == "paired-rounds" and fine["profiled_steps"] > 0
    assert failed["status"] == "error" and "deliberate failure" in failed["message"]
    assert (tmp_path / f"{PROBE.id}.pt.trace.json.gz").exists()


@pytest.mark.parametrize("step_ms, runs", [(1.0, 1), (20.0, 1), (40.0, 3), (400.0, 8)])
def test_a_long_steps_reference_runs_a_quarter_of_its_time_up_to_eight_runs(step_ms, runs):
    from itercast.collect.measure import reference_runs

    assert reference_runs(step_ms * 1e6, 3.5e6) == runs


def test_each_step_is_paired_with_the_mean_of_the_references_around_it(monkeypatch):
    from itercast.collect import measure as measuring

    durations = iter([10, 30, 100, 50, 7])  # reference, step, reference, step, reference
    monkeypatch.setattr(measuring, "timed_ns", lambda run: next(durations))
    assert measuring.bracketed_visit("step", "reference", pairs=2, runs=1) == [(55.0, 30), (53.5, 50)]
    durations = iter([10, 30, 1, 2, 3])  # two runs make a reference measurement: per run 20, then 2.5
    assert measuring.bracketed_visit("step", "reference", pairs=1, runs=2) == [(11.25, 1)]


def test_a_short_step_is_timed_among_consecutive_steps_after_an_untimed_one(monkeypatch):
    from itercast.collect import measure as measuring

    calls = []
    durations = iter([40, 9, 11, 30])  # reference, two timed steps, reference
    monkeypatch.setattr(measuring, "timed_ns", lambda run: (calls.append(run), next(durations))[1])
    cold = []
    assert measuring.bracketed_visit(lambda: cold.append(1), "reference", pairs=1, runs=1, steps=2,
                                     untimed=1) == [(35.0, 10.0)]
    assert cold == [1] and len(calls) == 4  # the untimed step ran, outside the timings


@pytest.mark.parametrize("step_ms, steps, untimed", [(0.5, 7, 1), (1.0, 4, 1), (3.4, 1, 0), (50.0, 1, 0),
                                                     (0.01, 16, 1)])
def test_a_step_shorter_than_the_reference_is_timed_in_a_run_as_long_as_it(step_ms, steps, untimed):
    from itercast.collect.measure import Protocol, visit_plan

    protocol = Protocol(label_rounds=5, min_label_pairs=5, max_label_pairs=40, min_measured_seconds=0.5)
    plan = visit_plan(step_ms * 1e6, 3.4e6, protocol)
    assert (plan["steps"], plan["untimed"]) == (steps, untimed)
    pair_ms = (steps + untimed) * step_ms + plan["runs"] * 3.4
    assert plan["pairs"] == math.ceil(min(max(math.ceil(500 / pair_ms), 5), 40) / 5)  # 0.5 s, 5-40 pairs, 5 rounds


@pytest.mark.parametrize("step_ms, segments, steps", [(0.1, 5, 8), (5.0, 5, 8), (20.0, 5, 5), (50.0, 5, 2),
                                                      (400.0, 5, 1)])
def test_a_loop_label_times_half_a_second_of_steps_within_its_bounds(step_ms, segments, steps):
    from itercast.collect.measure import Protocol, loop_plan

    protocol = Protocol(label_rounds=5, min_label_pairs=5, min_measured_seconds=0.5)
    assert loop_plan(step_ms * 1e6, protocol) == (segments, steps)


def test_a_loop_label_divides_out_a_machine_that_slows_down_as_it_runs(monkeypatch, quick_protocol):
    """The fake clock: each reference run takes 10 ms times a slowdown that grows with every call, a step 3x
    the reference's: the ratio comes out exact while the steps' wall times spread."""
    from itercast.collect import measure as measuring

    calls = iter(range(10**6))

    def step():
        pass

    def reference():
        pass

    def fake_timed_ns(run):
        return int(10e6 * (1.0 + next(calls) / 50) * (3.0 if run is step else 1.0))

    monkeypatch.setattr(measuring, "timed_ns", fake_timed_ns)
    label = measuring.loop_label(step, 30e6, reference, replace(quick_protocol, min_measured_seconds=0.5))
    assert label["label_protocol"] == "fresh-loop" and label["label_ratio"] == pytest.approx(3.0, rel=0.03)
    assert label["step_ms_max"] / label["step_ms_min"] > 1.1 and label["label_rounds"] == quick_protocol.label_rounds


def test_the_profiled_steps_are_bracketed_by_the_reference(monkeypatch, tmp_path, quick_protocol):
    """A machine twice as slow around the profile than usual: profile_reference_ms says so."""
    from itercast.collect import measure as measuring

    profiling = {"now": False}
    monkeypatch.setattr(measuring, "profile_steps", lambda *args: profiling.update(now=True) or [7.0, 8.0])

    def fake_timed_ns(run):
        return int(4e6 if run is reference else 1e6)

    def reference():
        pass

    monkeypatch.setattr(measuring, "timed_ns", fake_timed_ns)
    fields, durations = measuring.bracketed_profile(lambda: None, 1e6, reference, "cpu", quick_protocol,
                                                    tmp_path / "t.json.gz")
    assert profiling["now"] and fields == {"profile_reference_ms": pytest.approx(4.0)} and durations == [7.0, 8.0]


@pytest.mark.parametrize("step_ms, steps", [(1.0, 5), (300.0, 4), (600.0, 2), (3000.0, 2)])
def test_the_warm_up_stops_early_for_long_steps_but_never_below_two(monkeypatch, step_ms, steps):
    from itercast.collect import measure as measuring

    monkeypatch.setattr(measuring, "timed_ns", lambda run: int(step_ms * 1e6))
    protocol = measuring.Protocol(warmup_steps=5, max_warmup_seconds=1.0)
    assert measuring.warm_up_steps(lambda: None, protocol) == [int(step_ms * 1e6)] * steps


def test_a_traced_configuration_records_the_reference_around_its_profile(tmp_path, quick_protocol):
    row = measure(PROBE, quick_protocol, tmp_path)
    assert row["profile_reference_ms"] > 0 and row["label_protocol"] == "fresh-loop"
    assert row["profile_reference_ms"] == pytest.approx(row["label_reference_ms"], rel=1.0)  # the same workload


def test_the_reference_allocates_nothing_it_keeps_between_runs():
    """What a run creates it frees: a reference between a loop's steps must not change how they allocate."""
    import torch

    workload = ReferenceWorkload(torch.device("cpu"), torch.float32)
    product = workload.product.data_ptr()
    workload.run()
    assert workload.product.data_ptr() == product and workload.layer.grad is None
