from dataclasses import replace

import pytest

from fault_models import DENORMAL_PROBE
from itercast.collect.measure import denormals_flushed, flushes_denormals, measure
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
    assert set(row) == {"step_ms", "step_ms_iqr", "step_ms_min", "step_ms_max", "steps"}
    assert row["steps"] >= quick_protocol.measured_steps and row["step_ms"] > 0
    assert not list(tmp_path.iterdir())
