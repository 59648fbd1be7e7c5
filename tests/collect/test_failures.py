import pytest

from fault_models import EXHAUSTING, RAISING, SLEEPING
from itercast.collect import collect

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def rows(tmp_path_factory, quick_protocol):
    out = tmp_path_factory.mktemp("faults")
    # The limit is generous for squeezenet at batch 2 and far below the sleeper's 600 s.
    rows = collect(out, models=[RAISING, SLEEPING, EXHAUSTING, "squeezenet1_1"], batch_sizes=(2,),
                   input_sizes=(32,), time_limit_s=5, protocol=quick_protocol)
    return {row["model"]: row for row in rows}


def test_a_failing_model_is_recorded_as_error_with_its_message(rows):
    assert rows["raising"]["status"] == "error"
    assert "RuntimeError: deliberate failure in forward" in rows["raising"]["message"]
    assert rows["raising"]["step_ms"] is None and rows["raising"]["trace_path"] is None


def test_a_model_over_the_time_limit_is_recorded_as_timeout(rows):
    assert rows["sleeping"]["status"] == "timeout"
    assert "5 s limit" in rows["sleeping"]["message"]


def test_running_out_of_memory_is_recorded_as_oom(rows):
    assert rows["exhausting"]["status"] == "oom"


def test_the_run_goes_on_after_failures(rows):
    assert rows["squeezenet1_1"]["status"] == "ok"
