import logging
import time

import pytest
from online_fixtures import TrainingJob
from torch.profiler import profile, schedule

from itercast.online import Monitor
from itercast.online.monitor import Cadence

TARGETS = ["cpu:test-cpu-a:1t", "cpu:test-cpu-b:1t"]


def train(monitor: Monitor, steps: int) -> None:
    job = TrainingJob()
    with monitor:
        for _ in range(steps):
            job.step()
            monitor.step()


def test_monitor_predicts_every_profiled_step_for_every_target(model_path, caplog):
    seen = []
    monitor = Monitor(model_path, total_steps=30, first=3, every=10, warmup=1, active=2, max_overhead=None,
                      backoff=None, on_prediction=seen.append)
    with caplog.at_level(logging.INFO, logger="itercast.online"):
        train(monitor, 30)
    # Cycles start at steps 3, 13, 23: one warmup step, then two recorded ones.
    assert [r.step for r in monitor.history] == [4, 5, 14, 15, 24, 25]
    assert seen == monitor.history and monitor.latest is monitor.history[-1]
    for record in monitor.history:
        assert list(record.predicted_ms) == TARGETS
        assert all(ms > 0 for ms in record.predicted_ms.values())
        # The second target's labels are half the first's: so is its reconciled prediction.
        assert record.predicted_ms[TARGETS[1]] < record.predicted_ms[TARGETS[0]]
        assert record.measured_ms > 0 and record.profiled_ms > 0
        assert record.remaining == 30 - record.step - 1
        eta = record.eta_s()
        assert eta[TARGETS[0]] == pytest.approx(record.predicted_ms[TARGETS[0]] * record.remaining / 1e3)
        assert eta["measured"] == pytest.approx(record.measured_ms * record.remaining / 1e3)
        assert record.eta_s(1000)[TARGETS[1]] == pytest.approx(record.predicted_ms[TARGETS[1]])
    lines = [r.getMessage() for r in caplog.records if r.name == "itercast.online"]
    assert len(lines) == 6 and lines[0].startswith("itercast step 4: here ") and TARGETS[1] in lines[0]
    assert not monitor._scratch.exists()


def test_monitor_steps_the_callers_profiler_and_keeps_its_handler(model_path):
    exported = []
    with profile(schedule=schedule(wait=2, warmup=1, active=2, repeat=1), record_shapes=True,
                 on_trace_ready=exported.append) as prof:
        monitor = Monitor(model_path, hardware="test-cpu-a", profiler=prof)
        train(monitor, 8)
        assert prof.on_trace_ready == exported.append
    assert len(exported) == 1
    assert [r.step for r in monitor.history] == [3, 4]
    assert list(monitor.history[0].predicted_ms) == [TARGETS[0]]
    assert monitor.history[0].remaining is None and monitor.history[0].eta_s() == {}


def test_a_partial_cycle_is_predicted_when_the_monitor_closes(model_path):
    monitor = Monitor(model_path, first=2, every=50, warmup=1, active=5, max_overhead=None)
    train(monitor, 5)  # steps 3 and 4 recorded, the cycle cut short by close()
    assert [r.step for r in monitor.history] == [3, 4]


def test_cadence_spaces_cycles_to_keep_profiling_under_the_budget():
    cadence = Cadence(first=0, every=100, cycle_steps=4, max_overhead=0.01)
    cadence.cycle_done(cost_s=0.030, step_s=0.002)  # 30 ms per cycle at 2 ms a step: 1500 steps apart
    assert cadence.start == 1500
    cadence.cycle_done(cost_s=0.001, step_s=0.002)  # cheap cycles: every 100 steps
    assert cadence.start == 1600
    unbounded = Cadence(first=5, every=10, cycle_steps=4, max_overhead=None)
    unbounded.cycle_done(cost_s=10.0, step_s=0.001)
    assert unbounded.start == 15


def test_cadence_bills_prediction_cost_learnt_after_the_cycle():
    cadence = Cadence(first=0, every=100, cycle_steps=4, max_overhead=0.01)
    cadence.cycle_done(cost_s=0.001, step_s=0.002)
    cadence.bill(cost_s=0.010, step_s=0.002)  # 10 ms of prediction CPU: 500 more steps
    assert cadence.start == 600
    unbounded = Cadence(first=5, every=10, cycle_steps=4, max_overhead=None)
    unbounded.bill(cost_s=10.0, step_s=0.001)
    assert unbounded.start == 5


def test_under_a_budget_no_cycle_starts_before_the_last_prediction_is_in(model_path):
    answered_at = []  # the training step count when each cycle's answer arrived
    # A budget so loose that it spaces cycles by a few steps at most; 6-step cycles come far
    # faster than the prediction process answers.
    monitor = Monitor(model_path, hardware="test-cpu-a", first=2, every=6, warmup=1, active=1, max_overhead=100.0,
                      on_prediction=lambda record: answered_at.append(monitor.steps))
    job = TrainingJob()
    with monitor:
        while len(answered_at) < 3 and monitor.steps < 100_000:
            job.step()
            monitor.step()
    cycle_starts = [record.step - 1 for record in monitor.history]
    assert len(cycle_starts) >= 3
    assert cycle_starts != list(range(2, 2 + 6 * len(cycle_starts), 6))
    for answered, next_start in zip(answered_at, cycle_starts[1:]):
        assert next_start >= answered


def test_under_a_budget_the_steps_after_a_cycle_count_in_its_cost(model_path, monkeypatch):
    costs = []
    cycle_done = Cadence.cycle_done
    monkeypatch.setattr(Cadence, "cycle_done",
                        lambda self, cost_s, step_s: (costs.append(cost_s), cycle_done(self, cost_s, step_s)))
    # The cycle profiles calls 70-72; the 20 steps from call 76 on run 10 ms slower, as a cold cache would.
    monitor = Monitor(model_path, hardware="test-cpu-a", first=70, every=200, warmup=1, active=1, max_overhead=0.01)
    job = TrainingJob()
    with monitor:
        for call in range(160):
            job.step()
            if 76 <= call < 96:
                time.sleep(0.010)
            monitor.step()
    assert len(costs) == 1 and costs[0] >= 20 * 0.010 * 0.9


def test_cadence_backs_off_while_predictions_are_stable_up_to_the_cap():
    cadence = Cadence(first=10, every=100, cycle_steps=4, max_overhead=None, max_every=500)
    starts = []
    for ms in [5.0, 5.05, 4.96, 5.0, 5.0, 5.0]:  # within 2% of the cycle before
        starts.append(cadence.start)
        cadence.cycle_done(cost_s=0.0, step_s=0.002)
        cadence.predicted({"a": ms, "b": ms / 2})
    # The first prediction has nothing to agree with; then 200, 400, then the cap.
    assert starts == [10, 110, 310, 710, 1210, 1710]


def test_cadence_defaults_back_off_twice_as_far_up_to_32_times_every():
    cadence = Cadence(first=0, every=10, cycle_steps=4, max_overhead=None)
    spacings = []
    for _ in range(8):
        cadence.cycle_done(cost_s=0.0, step_s=None)
        cadence.predicted({"a": 1.0})
        spacings.append(cadence.spacing)
    assert spacings == [10, 20, 40, 80, 160, 320, 320, 320]


def test_cadence_spacing_resets_when_a_prediction_changes():
    cadence = Cadence(first=0, every=100, cycle_steps=4, max_overhead=None)
    for _ in range(4):
        cadence.cycle_done(cost_s=0.0, step_s=0.002)
        cadence.predicted({"a": 5.0, "b": 2.5})
    assert cadence.spacing == 800
    cadence.cycle_done(cost_s=0.0, step_s=0.002)
    placed = cadence.start
    cadence.predicted({"a": 5.0, "b": 2.6})  # one target 4% off: the job changed
    assert cadence.spacing == 100 and cadence.start == placed - 800 + 100
    cadence.cycle_done(cost_s=0.0, step_s=0.002)
    cadence.predicted({"a": 5.0, "b": 2.6})  # the new prediction is the one to agree with
    assert cadence.spacing == 200


def test_cadence_budget_dominates_a_shorter_back_off():
    cadence = Cadence(first=0, every=100, cycle_steps=4, max_overhead=0.01)
    cadence.cycle_done(cost_s=0.0, step_s=0.002)
    cadence.predicted({"a": 5.0})
    cadence.cycle_done(cost_s=0.008, step_s=0.002)  # the budget wants 400 steps, the spacing is 100
    assert cadence.start == 100 + 400
    cadence.predicted({"a": 5.0})  # backed off to 200: still under the budget's 400
    assert cadence.spacing == 200 and cadence.start == 500
    cadence.bill(cost_s=0.002, step_s=0.002)  # prediction CPU: 100 steps more
    assert cadence.start == 600
    cadence.cycle_done(cost_s=0.008, step_s=0.002)
    cadence.predicted({"a": 5.0})  # 400 now; prediction CPU comes on top of the larger of the two
    cadence.predicted({"a": 5.0})  # 800: more than the budget asks
    cadence.bill(cost_s=0.002, step_s=0.002)
    assert cadence.start == 600 + 800 + 100


@pytest.mark.parametrize("backoff", [1, 1.0, None])
def test_cadence_without_back_off_keeps_cycles_every_steps_apart(backoff):
    cadence = Cadence(first=5, every=10, cycle_steps=4, max_overhead=None, backoff=backoff)
    starts = []
    for _ in range(4):
        starts.append(cadence.start)
        cadence.cycle_done(cost_s=0.0, step_s=0.001)
        cadence.predicted({"a": 1.0})
    assert starts == [5, 15, 25, 35]


@pytest.mark.parametrize("arguments, message", [
    (dict(backoff=0.5), "backoff"), (dict(backoff=0), "backoff"), (dict(backoff=float("nan")), "backoff"),
    (dict(backoff=float("inf")), "backoff"), (dict(stable_within=-0.01), "stable_within"),
    (dict(stable_within=float("nan")), "stable_within"), (dict(max_every=99), "max_every"),
])
def test_cadence_rejects_bad_back_off_parameters(arguments, message):
    with pytest.raises(ValueError, match=message):
        Cadence(first=0, every=100, cycle_steps=4, max_overhead=None, **arguments)


def test_cycles_spread_out_while_predictions_are_stable_and_close_up_when_the_job_changes(model_path):
    monitor = Monitor(model_path, first=2, every=6, warmup=1, active=1, max_overhead=None, max_every=48)
    # twice the layers: the prediction changes with the op count even where a tiny model prices ops alike
    small, large = TrainingJob(), TrainingJob(width=256, depth=4, batch=32)
    with monitor:
        for call in range(240):
            (small if call < 100 else large).step()
            monitor.step()
            monitor.flush()  # each answer in before the next step: the schedule does not depend on timing
    cycle_starts = [record.step - 1 for record in monitor.history]
    # Every 6 steps, then 12, 24, 48 (the cap) apart; the first cycle on the larger job (140) disagrees
    # with the one before, so the next is 6 steps on, then they spread out again.
    assert cycle_starts == [2, 8, 20, 44, 92, 140, 146, 158, 182, 230]


def test_cycles_cannot_overlap():
    with pytest.raises(ValueError, match="every"):
        Cadence(first=0, every=5, cycle_steps=4, max_overhead=None)


def test_the_default_monitor_measures_without_profiling_early(model_path):
    monitor = Monitor(model_path, total_steps=8)
    train(monitor, 8)  # the first cycle starts at step 10
    assert monitor.history == [] and monitor.measured_s > 0 and monitor.steps == 8


def test_the_monitor_says_its_traces_ran_on_this_cpu_as_a_collection_here_keys_it(model_path):
    import torch

    from itercast.collect.hardware import describe
    from itercast.online.monitor import this_cpu_key
    from itercast.predict.dataset import hardware_key

    row = {**describe("cpu"), "device": "cpu", "threads": torch.get_num_threads()}
    assert this_cpu_key() == hardware_key(row)
    monitor = Monitor(model_path, hardware="test-cpu-a")
    assert [(t.hardware, t.trace_hardware) for t in monitor.targets] == [("cpu:test-cpu-a:1t", hardware_key(row))]
