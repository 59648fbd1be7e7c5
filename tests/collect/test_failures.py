import pytest

from fault_models import EXHAUSTING, RAISING, SLEEPING
from itercast.collect import collect

pytest.importorskip("torch")


def by_model(rows) -> dict:
    return {row["model"]: row for row in rows}


@pytest.fixture(scope="module")
def failures(tmp_path_factory, quick_protocol):
    out = tmp_path_factory.mktemp("failures")
    return by_model(collect(out, models=[RAISING, EXHAUSTING, "squeezenet1_1"], batch_sizes=(2,),
                            input_sizes=(32,), protocol=quick_protocol))


@pytest.fixture(scope="module")
def timeouts(tmp_path_factory, quick_protocol):
    out = tmp_path_factory.mktemp("timeouts")
    # The sleeper sleeps 600 s; the model after it fails at once: 10 s leave room for a
    # loaded 2-core machine (3 s timed the failing model out under load).
    return by_model(collect(out, models=[SLEEPING, RAISING], batch_sizes=(2,), time_limit_s=10,
                            protocol=quick_protocol))


def test_a_failing_model_is_recorded_as_error_with_its_message(failures):
    assert failures["raising"]["status"] == "error"
    assert "RuntimeError: deliberate failure in forward" in failures["raising"]["message"]
    assert failures["raising"]["step_ms"] is None and failures["raising"]["trace_path"] is None


def test_running_out_of_memory_is_recorded_as_oom(failures):
    assert failures["exhausting"]["status"] == "oom"


def test_the_run_goes_on_after_failures(failures):
    assert failures["squeezenet1_1"]["status"] == "ok"


@pytest.mark.slow  # the time limit: 10 s
def test_a_model_over_the_time_limit_is_recorded_as_timeout(timeouts):
    assert timeouts["sleeping"]["status"] == "timeout"
    assert "10 s limit" in timeouts["sleeping"]["message"]


@pytest.mark.slow
def test_the_run_goes_on_after_a_timeout_in_a_fresh_worker(timeouts):
    assert timeouts["raising"]["status"] == "error"
