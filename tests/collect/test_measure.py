from dataclasses import replace

import pytest

from fault_models import DENORMAL_PROBE
from itercast.collect.manifest import REFERENCE_COLUMNS
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
    assert set(row) == {"step_ms", "step_ms_iqr", "step_ms_min", "step_ms_max", "steps", *REFERENCE_COLUMNS}
    assert row["steps"] >= quick_protocol.measured_steps and row["step_ms"] > 0
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
