"""What a re-tune minimises: average JCT, average JCT under a tail guard, p99 JCT, deadline misses."""

import dataclasses
import json

import numpy as np
import pytest

from itercast.cli import main
from itercast.sched import AutoSched, History, SerialEvaluator, TunerSettings
from itercast.sched.forecast import WorkloadForecaster
from itercast.sched.tuner import deadline_slack, within_tail_guard
from itercast.sched.whatif import FutureOutcome, WhatIf, sampled_whatif, true_whatif
from itercast.sim import Cluster, JobSpec, SimConfig, SimConfigError, Simulation, Workload

ONE_GPU = Cluster.homogeneous(1, 1)
FIFO = SimConfig(policy="fifo")


def two_jobs(deadlines=None):
    # One GPU under FIFO, to completion: A (0, 100 s) runs 0-100, B (10, 100 s) 100-200.
    jobs = Workload.from_jobs([JobSpec("A", 0, 1, duration_s=100, estimate_s=100),
                               JobSpec("B", 10, 1, duration_s=100, estimate_s=100)])
    return jobs if deadlines is None else dataclasses.replace(jobs, deadlines=np.array(deadlines, dtype=float))


@pytest.mark.parametrize("objective, score", [
    ("avg-jct", (100 + 190) / 2),
    ("p99-jct", 100 + 0.99 * 90),       # in the system 100 and 190 s, linear between them
    ("deadline-misses", 0.5),           # deadlines 150 and 150: B finishes at 200
])
def test_each_objective_scores_a_future_by_hand(objective, score):
    whatif = WhatIf((two_jobs([150, 150]),), ONE_GPU, 0.0, np.inf, drain=True, objective=objective)
    assert whatif.score(FIFO) == pytest.approx(score)


def test_a_futures_tail_is_the_p99_jct_and_the_long_jobs_slowdown():
    (outcome,) = WhatIf((two_jobs(),), ONE_GPU, 0.0, np.inf, drain=True).outcomes(FIFO)
    # JCTs from submission 100 and 190; the longest tenth of two equal jobs is one of them, B (the later).
    assert outcome == FutureOutcome(score=145.0, p99_jct_s=pytest.approx(100 + 0.99 * 90), long_jobs_slowdown=1.9)


def test_the_guard_compares_the_mean_tail_over_the_same_futures():
    reference = [FutureOutcome(1.0, 100.0, 2.0), FutureOutcome(1.0, 200.0, 4.0)]  # means 150 and 3
    assert within_tail_guard([FutureOutcome(0.5, 157.0, 3.1), FutureOutcome(0.5, 157.0, 3.1)], reference, 0.05)
    assert not within_tail_guard([FutureOutcome(0.5, 158.0, 3.0), FutureOutcome(0.5, 158.0, 3.0)], reference, 0.05)
    assert not within_tail_guard([FutureOutcome(0.5, 150.0, 3.2), FutureOutcome(0.5, 150.0, 3.2)], reference, 0.05)
    assert not within_tail_guard([FutureOutcome(0.5, np.inf, 1.0)] * 2, reference, 0.5)


def starving_cluster():
    """Two 4-GPU jobs of five hours running on one node, and short 1-GPU jobs queued and arriving: under
    FIFO the short ones wait; preempting the long ones serves them at once and starves the long jobs."""
    specs = [JobSpec(f"long{i}", i, 2, duration_s=5 * 3600.0) for i in range(2)]
    specs += [JobSpec(f"short{i}", 60.0 * i, 1, duration_s=600.0) for i in range(1, 40)]
    jobs = Workload.from_jobs(specs)
    fifo = SimConfig(policy="fifo", estimate="supplied", backfill=False)
    simulation = Simulation(dataclasses.replace(jobs, estimates=jobs.duration), Cluster.homogeneous(4, 4), fifo)
    simulation.run(until=1800.0)
    return jobs, simulation


def clairvoyant_decision(settings):
    jobs, simulation = starving_cluster()
    tuner = AutoSched(Cluster.homogeneous(4, 4), settings, evaluator=SerialEvaluator(), clairvoyant=True)
    history = History(jobs, simulation.result().finish)
    decision = tuner.retune(simulation, history)
    truth = true_whatif(simulation.snapshot(), jobs, Cluster.homogeneous(4, 4), simulation.now, settings.horizon_s,
                        history.estimate, settings.drain)
    return decision, truth


def test_the_guarded_tuner_does_not_buy_the_average_with_the_tail():
    settings = TunerSettings(budget=16, futures=1, horizon_s=4 * 3600.0, objective="avg-jct")
    unguarded, truth = clairvoyant_decision(settings)
    assert unguarded.switched
    assert not within_tail_guard(truth.outcomes(unguarded.chosen), truth.outcomes(unguarded.incumbent), 0.05)
    guarded, _ = clairvoyant_decision(dataclasses.replace(settings, objective="avg-jct-guarded", tail_guard=0.05))
    assert guarded.best_score == unguarded.best_score  # the same search: the guard acts at adoption only
    assert not guarded.switched


def test_the_guard_lets_a_switch_through_when_the_tail_allows_it():
    settings = TunerSettings(budget=16, futures=1, horizon_s=4 * 3600.0, objective="avg-jct")
    unguarded, truth = clairvoyant_decision(settings)
    worst = max(outcome.long_jobs_slowdown / reference.long_jobs_slowdown for outcome, reference in
                zip(truth.outcomes(unguarded.chosen), truth.outcomes(unguarded.incumbent)))
    p99 = max(outcome.p99_jct_s / reference.p99_jct_s for outcome, reference in
              zip(truth.outcomes(unguarded.chosen), truth.outcomes(unguarded.incumbent)))
    loose = min(0.99, max(worst, p99))  # a guard wide enough for the unguarded choice
    guarded, _ = clairvoyant_decision(dataclasses.replace(settings, objective="avg-jct-guarded", tail_guard=loose))
    assert guarded.chosen == unguarded.chosen


DAY_S = 86400.0


def starving_cluster_after(past: list[JobSpec]):
    """``starving_cluster`` a day later, after a day of ``past`` jobs: the tuner has a reviewed past."""
    specs = past + [JobSpec(f"long{i}", DAY_S + i, 2, duration_s=5 * 3600.0) for i in range(2)]
    specs += [JobSpec(f"short{i}", DAY_S + 60.0 * i, 1, duration_s=600.0) for i in range(1, 40)]
    jobs = Workload.from_jobs(sorted(specs, key=lambda spec: spec.submit_s))
    fifo = SimConfig(policy="fifo", estimate="supplied", backfill=False)
    simulation = Simulation(dataclasses.replace(jobs, estimates=jobs.duration), Cluster.homogeneous(4, 4), fifo)
    simulation.run(until=DAY_S + 1800.0)
    return jobs, simulation


# A day of short jobs that no policy starves, and a day in which preemptive policies starve two whole-node jobs
# behind a steady stream of short ones until the stream ends.
QUIET_DAY = [JobSpec(f"p{i}", 600.0 * i, 1, duration_s=300.0) for i in range(100)]
STARVING_DAY = ([JobSpec(f"L{i}", 3600.0 * i, 4, duration_s=5 * 3600.0) for i in range(2)]
                + [JobSpec(f"p{i}", 300.0 * i, 1, duration_s=600.0) for i in range(1, 250)])


@pytest.mark.parametrize("past, adopted", [(QUIET_DAY, True), (STARVING_DAY, False)])
def test_the_guard_judges_a_candidate_by_its_tail_over_the_reviewed_past(past, adopted):
    # The next hours alone block the switch (test_the_guarded_tuner_does_not_buy_the_average_with_the_tail);
    # with a day behind it, the past's tail decides.
    decisions = {}
    for objective in ("avg-jct", "avg-jct-guarded"):
        jobs, simulation = starving_cluster_after(past)
        settings = TunerSettings(budget=16, futures=1, horizon_s=4 * 3600.0, objective=objective, tail_guard=0.05)
        tuner = AutoSched(Cluster.homogeneous(4, 4), settings, evaluator=SerialEvaluator(), clairvoyant=True)
        decisions[objective] = tuner.retune(simulation, History(jobs, simulation.result().finish))
    unguarded, guarded = decisions["avg-jct"], decisions["avg-jct-guarded"]
    assert unguarded.switched and guarded.best_score == unguarded.best_score
    assert guarded.chosen == (unguarded.chosen if adopted else guarded.incumbent)


def test_the_guarded_review_keeps_home_within_the_guard_over_the_past():
    tuners = {}
    for objective in ("avg-jct", "avg-jct-guarded"):
        jobs, simulation = starving_cluster_after(STARVING_DAY)
        settings = TunerSettings(budget=16, futures=1, horizon_s=4 * 3600.0, objective=objective, tail_guard=0.05,
                                 review_budget=8)
        tuners[objective] = AutoSched(Cluster.homogeneous(4, 4), settings, evaluator=SerialEvaluator(),
                                      clairvoyant=True)
        tuners[objective].retune(simulation, History(jobs, simulation.result().finish))
    past = tuners["avg-jct-guarded"]._past  # the real past (clairvoyant): the same for both tuners
    start = past.outcomes(simulation.config)
    unguarded_home, guarded_home = tuners["avg-jct"].home, tuners["avg-jct-guarded"].home
    assert unguarded_home != simulation.config and guarded_home != unguarded_home
    assert not within_tail_guard(past.outcomes(unguarded_home), start, 0.05)
    assert within_tail_guard(past.outcomes(guarded_home), start, 0.05)


@pytest.mark.parametrize("changes, message", [
    ({"objective": "p99"}, "objective must be one of avg-jct, avg-jct-guarded, p99-jct, deadline-misses"),
    ({"tail_guard": 1.0}, r"tail_guard must be in \[0, 1\)"),
    ({"tail_guard": -0.1}, r"tail_guard must be in \[0, 1\)"),
])
def test_bad_objective_settings_are_refused(changes, message):
    with pytest.raises(SimConfigError, match=message):
        TunerSettings(**changes)


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    rng = np.random.default_rng(5)
    rows = [(i, 4 if i % 10 == 0 else 1, int(rng.uniform(0, 86400)),
             int(rng.uniform(8000, 20000) if i % 10 == 0 else rng.uniform(100, 900))) for i in range(200)]
    path = tmp_path_factory.mktemp("objectives") / "jobs.csv"
    path.write_text("job_id,num_gpu,submit_time,duration\n" + "".join(f"{a},{b},{c},{d}\n" for a, b, c, d in rows))
    return path


@pytest.mark.parametrize("argv, message", [
    (["--objective", "deadline-misses"], "--objective deadline-misses needs jobs with deadlines"),
    (["--tail-guard", "1.5"], "tail_guard must be in [0, 1)"),
    (["--objective", "p99"], "argument --objective: invalid choice: 'p99'"),
])
@pytest.mark.parametrize("command", [["autosched"], ["autosched", "recommend"]])
def test_the_cli_refuses_an_objective_the_jobs_cannot_support(trace, command, argv, message, capsys):
    assert main([*command, "--workload", str(trace), "--gpus", "8", "--gpus-per-node", "4", *argv]) == 2
    assert message in capsys.readouterr().err


def test_deadline_misses_are_tuned_when_jobs_carry_deadlines(tmp_path, capsys):
    rng = np.random.default_rng(6)
    lines = ["job_id,num_gpu,submit_time,duration,deadline"]
    for i in range(200):
        submit, duration = int(rng.uniform(0, 86400)), int(rng.uniform(100, 3000))
        lines.append(f"{i},{1 + (i % 3 == 0)},{submit},{duration},{submit + int(duration * rng.uniform(1.2, 4))}")
    path = tmp_path / "deadlines.csv"
    path.write_text("\n".join(lines) + "\n")
    assert main(["autosched", "--workload", str(path), "--gpus", "4", "--gpus-per-node", "4", "--objective",
                 "deadline-misses", "--budget", "12", "--futures", "1", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["retunes"] > 10 and "late_fraction" in summary


def test_sampled_jobs_get_deadlines_as_loose_as_the_finished_jobs_had():
    day = 86400.0
    rng = np.random.default_rng(7)
    submit = np.sort(rng.uniform(0, day, 300))
    duration = rng.uniform(100, 1000, 300)
    jobs = Workload.from_jobs([JobSpec(f"j{i}", s, 1, duration_s=d) for i, (s, d) in enumerate(zip(submit, duration))])
    jobs = dataclasses.replace(jobs, deadlines=submit + 3.0 * duration)
    finish = submit + duration
    history = History(jobs, finish)
    np.testing.assert_allclose(deadline_slack(history, day), 3.0)  # every finished job had thrice its run time
    forecaster = WorkloadForecaster(day).fit(jobs, finish, day)
    live = jobs.subset(np.zeros(len(jobs), bool))
    whatif = sampled_whatif(live, forecaster, ONE_GPU, day, 6 * 3600.0, 2, rng, lambda w: w.duration,
                            supplied=False, deadline_slack=deadline_slack(history, day))
    for future in whatif.futures:
        assert len(future) > 10
        np.testing.assert_allclose(future.deadlines, future.submit + 3.0 * future.duration)


def test_deadline_slack_refuses_jobs_without_deadlines():
    from itercast.errors import ItercastError

    with pytest.raises(ItercastError, match="objective deadline-misses needs jobs with deadlines"):
        deadline_slack(History(two_jobs(), np.array([100.0, 200.0])), 300.0)


def test_the_defaults_are_the_measured_ones():
    # docs/decisions.md: the guard did not hold Philly's p99 and cost Sia's average; 10% when it is asked for.
    assert TunerSettings().objective == "avg-jct" and TunerSettings().tail_guard == 0.10


def test_the_guard_compares_with_the_configuration_the_tuner_started_from(monkeypatch):
    from itercast.sched import replay
    from itercast.sched import tuner as tuner_module

    made_by = {}
    outcomes = WhatIf.outcomes

    def recording_outcomes(self, config):
        result = outcomes(self, config)
        made_by[id(result)] = config
        return result

    references = []

    def recording_guard(candidate, reference, guard):
        references.append(made_by[id(reference)])
        return True

    monkeypatch.setattr(WhatIf, "outcomes", recording_outcomes)
    monkeypatch.setattr(tuner_module, "within_tail_guard", recording_guard)
    rng = np.random.default_rng(1)
    specs = [JobSpec(f"s{i}", float(t), 1, duration_s=float(d))
             for i, (t, d) in enumerate(zip(np.sort(rng.uniform(0, 86400, 300)), rng.uniform(100, 600, 300)))]
    specs += [JobSpec(f"l{i}", float(t), 4, duration_s=float(d))
              for i, (t, d) in enumerate(zip(np.sort(rng.uniform(0, 86400, 30)), rng.uniform(8000, 20000, 30)))]
    jobs = Workload.from_jobs(sorted(specs, key=lambda spec: spec.submit_s))
    settings = TunerSettings(budget=12, futures=2, horizon_s=4 * 3600.0, objective="avg-jct-guarded")
    tuner = AutoSched(Cluster.homogeneous(16, 4), settings, evaluator=SerialEvaluator())
    tuned = replay(jobs, Cluster.homogeneous(16, 4), FIFO, tuner=tuner)
    assert tuned.switches >= 2  # later switches are made from a configuration other than the start
    start = tuned.timeline[0][1]
    assert references and all(reference == start for reference in references)
