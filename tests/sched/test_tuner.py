"""AutoSched: the search space, what-if scoring, the tuner's decisions and
where its simulations run."""

import dataclasses

import numpy as np
import optuna
import pytest

from itercast.sched import (
    AutoSched, DEFAULT_CONFIG, History, ProcessEvaluator, PrototypeTuner, SearchSpace, SerialEvaluator,
    TunerSettings, replay,
)
from itercast.sched import whatif as whatif_module
from itercast.sched.space import geometric_limits
from itercast.sched.review import past_whatif
from itercast.sched.tuner import Retune
from itercast.sched.whatif import WhatIf, resampled_live, score_future, true_whatif
from itercast.sim import Cluster, JobSpec, SimConfig, SimConfigError, Simulation, Workload, simulate

DAY = 86400.0
# The unguarded objective: these tests are of the search and its adoption rules (the guard: test_objectives.py).
FAST = TunerSettings(budget=12, futures=2, horizon_s=4 * 3600.0, objective="avg-jct")


def two_kinds(make_workload, days=2.0, seed=0):
    """A VC of short 1-GPU jobs arriving often and a VC of long 4-GPU jobs:
    FIFO lets the long jobs block the short ones; a policy that knows (or
    learns) which is which does far better."""
    rng = np.random.default_rng(seed)
    short = np.sort(rng.uniform(0, days * DAY, int(days * 200)))
    long = np.sort(rng.uniform(0, days * DAY, int(days * 20)))
    submit = np.round(np.concatenate([short, long]))
    gpus = np.concatenate([np.ones(len(short)), np.full(len(long), 4)])
    duration = np.round(np.concatenate([rng.uniform(100, 600, len(short)), rng.uniform(8000, 20000, len(long))]))
    vc = np.array(["short"] * len(short) + ["long"] * len(long), dtype=object)
    order = np.argsort(submit, kind="stable")
    return make_workload(submit[order], gpus[order], duration[order], vc[order])


CLUSTER = Cluster.homogeneous(16, 4)


def make_jobs(*rows):
    """(job_id, submit_s, gpus, duration_s[, estimate_s]) tuples -> Workload."""
    return Workload.from_jobs(JobSpec(job_id, submit, gpus, duration_s=duration, estimate_s=estimate[0] if estimate else None)
                              for job_id, submit, gpus, duration, *estimate in rows)


def test_tuning_leaves_a_configuration_that_blocks_short_jobs(make_workload):
    jobs = two_kinds(make_workload)
    fifo = SimConfig(policy="fifo")
    static = replay(jobs, CLUSTER, fifo).summary()
    tuner = AutoSched(CLUSTER, FAST, evaluator=SerialEvaluator())
    tuned = replay(jobs, CLUSTER, fifo, tuner=tuner)
    summary = tuned.summary()
    assert summary["switches"] >= 1 and tuned.timeline[1][1].policy != "fifo"
    assert summary["avg_jct_s"] < 0.7 * static["avg_jct_s"]
    assert summary["retunes"] == len(tuned.retunes) > 40


def test_without_history_the_incumbent_stays_with_a_note():
    # Nothing finishes in the first hours: every re-tune before keeps FIFO.
    jobs = make_jobs(*[(f"j{i}", i * 60.0, 4, 30_000.0) for i in range(8)], ("late", 40_000, 1, 50))
    tuned = replay(jobs, CLUSTER, SimConfig(policy="fifo"),
                   tuner=AutoSched(CLUSTER, FAST, evaluator=SerialEvaluator()))
    early = [retune for retune in tuned.retunes if retune.time_s < 30_000]
    assert early and all(r.simulations == 0 and not r.switched and "no job finished" in r.note for r in early)
    assert tuned.summary()["jobs"] == 9


def test_a_tuner_is_deterministic_for_a_seed(make_workload):
    jobs = two_kinds(make_workload, days=1.0, seed=4)
    runs = [replay(jobs, CLUSTER, tuner=AutoSched(CLUSTER, FAST, evaluator=SerialEvaluator())).summary()
            for _ in range(2)]
    assert runs[0]["timeline"] == runs[1]["timeline"]
    assert runs[0]["avg_jct_s"] == runs[1]["avg_jct_s"]


def test_a_seeds_searches_and_futures_are_not_the_next_seeds(monkeypatch):
    sampler_seeds = []

    def recording_sampler(seed=None, **options):
        sampler_seeds.append(seed)
        return optuna.samplers.RandomSampler(seed=seed)

    monkeypatch.setattr(optuna.samplers, "TPESampler", recording_sampler)
    futures = []
    for seed in (0, 1):
        tuner = AutoSched(CLUSTER, dataclasses.replace(FAST, seed=seed), evaluator=SerialEvaluator())
        for _ in range(3):
            tuner._search(lambda configs: [1.0] * len(configs), DEFAULT_CONFIG, DEFAULT_CONFIG, 2.0, 2, [])
        futures.append(tuner._rng.random(4))
    assert len(set(sampler_seeds)) == 6
    assert not np.allclose(futures[0], futures[1])


def test_the_margin_keeps_the_incumbent(make_workload):
    jobs = two_kinds(make_workload, days=1.0)
    strict = dataclasses.replace(FAST, margin=0.999)
    tuned = replay(jobs, CLUSTER, SimConfig(policy="fifo"),
                   tuner=AutoSched(CLUSTER, strict, evaluator=SerialEvaluator()))
    assert tuned.switches == 0
    assert any(r.best_score < r.incumbent_score for r in tuned.retunes if r.simulations)


def test_the_clairvoyant_tuner_sees_the_real_future(make_workload):
    jobs = two_kinds(make_workload, days=1.0)
    fifo = SimConfig(policy="fifo", estimate="supplied")
    simulation = Simulation(dataclasses.replace(jobs, estimates=jobs.duration), CLUSTER, fifo)
    simulation.run(until=jobs.submit.min() + 6 * 3600)
    tuner = AutoSched(CLUSTER, FAST, evaluator=SerialEvaluator(), clairvoyant=True)
    history = History(jobs, simulation.result().finish)
    decision = tuner.retune(simulation, history)
    assert decision.simulations == 1 + FAST.candidates  # one future per candidate, no validation
    truth = true_whatif(simulation.snapshot(), jobs, CLUSTER, simulation.now, FAST.horizon_s, history.estimate,
                        FAST.drain)
    assert decision.incumbent_score == truth.score(fifo)
    assert decision.switched and decision.best_score == truth.score(decision.chosen)
    assert decision.best_score < (1 - FAST.margin) * decision.incumbent_score


def test_what_ifs_score_time_in_the_system_until_the_look_ahead():
    # One GPU from t=0: A (0, 100 s) then B (10, 100 s) under FIFO. Until 150:
    # A 100 s in the system, B 140 s; mean 120.
    jobs = make_jobs(("A", 0, 1, 100, 100), ("B", 10, 1, 100, 100))
    config = SimConfig(policy="fifo")
    assert score_future(jobs, Cluster.homogeneous(1, 1), config, 0, 150) == 120
    # SJF would not change it; a what-if is (A then B either way).
    assert WhatIf((jobs, jobs), Cluster.homogeneous(1, 1), 0, 150).score(config) == 120


def test_a_thrashing_candidate_scores_infinite(make_workload, monkeypatch):
    jobs = two_kinds(make_workload, days=0.5)
    monkeypatch.setattr(whatif_module, "MIN_EVENT_BUDGET", 10)
    monkeypatch.setattr(whatif_module, "EVENTS_PER_JOB", 0.01)
    jobs = dataclasses.replace(jobs, estimates=jobs.duration)
    thrash = SimConfig(policy="las", lease_s=0, restart_overhead_s=0)
    assert score_future(jobs, CLUSTER, thrash, 0, DAY) == float("inf")


def test_live_jobs_keep_their_work_done_when_their_duration_is_redrawn():
    jobs = make_jobs(("A", 0, 1, 100), ("B", 0, 1, 50))
    simulation = Simulation(jobs, Cluster.homogeneous(1, 1), SimConfig(policy="fifo", restart_overhead_s=0))
    simulation.run(until=40)
    live = resampled_live(simulation.snapshot(), np.array([400.0, 20.0]))
    assert live.remaining_s.tolist() == [360.0, 20.0]
    assert live.done_fraction.tolist() == [0.1, 0.0]
    assert live.durations[:, 0].tolist() == [400.0, 20.0]


def test_process_pool_scores_like_this_process(make_workload):
    jobs = two_kinds(make_workload, days=1.0)
    jobs = dataclasses.replace(jobs, estimates=jobs.duration)
    whatif = WhatIf((jobs,), CLUSTER, 0.0, DAY)
    configs = [SimConfig(policy=policy) for policy in ("fifo", "las", "srtf", "tiresias")]
    with SerialEvaluator().session(whatif) as score:
        expected = score(configs)
    with ProcessEvaluator(2).session(whatif) as score:
        assert score(configs) == expected
    assert len(set(expected)) > 1


def test_dask_scores_like_this_process(make_workload):
    distributed = pytest.importorskip("dask.distributed")
    from itercast.sched import DaskEvaluator

    jobs = two_kinds(make_workload, days=0.5)
    jobs = dataclasses.replace(jobs, estimates=jobs.duration)
    whatif = WhatIf((jobs,), CLUSTER, 0.0, DAY / 4)
    configs = [SimConfig(policy="fifo"), SimConfig(policy="sjf")]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as local, distributed.Client(local) as client:
        evaluator = DaskEvaluator(client)
        assert evaluator.workers == 2
        with evaluator.session(whatif) as score:
            assert score(configs) == [whatif.score(config) for config in configs]


def test_the_prototype_tunes_tiresias_queues_from_finished_jobs(make_workload):
    # A first limit no job reaches makes Tiresias FIFO, and the long jobs block the short ones.
    jobs = two_kinds(make_workload, days=1.0)
    incumbent = SimConfig(policy="tiresias", queues=2, queue_limits_gpu_s=(1e6,))
    simulation = Simulation(jobs, CLUSTER, incumbent)
    simulation.run(until=jobs.submit.min() + 12 * 3600)
    decision = PrototypeTuner(CLUSTER).retune(simulation, History(jobs, simulation.result().finish))
    assert decision.simulations == 1 + 8  # the incumbent and 2..9 queues
    assert decision.switched and decision.best_score < 0.8 * decision.incumbent_score
    # On this day three queues replay best (two: 1,392 s, three or more: 1,386 s, the fewest queues kept),
    # their limits at the 1/3 and 2/3 percentiles of the finished jobs' GPU-seconds.
    assert decision.chosen.queues == 3
    finished = simulation.result().finish <= simulation.now
    gpu_seconds = jobs.gpus[finished] * jobs.duration[finished]
    assert decision.chosen.queue_limits_gpu_s == pytest.approx(np.percentile(gpu_seconds, [100 / 3, 200 / 3]))
    empty = History(jobs, np.full(len(jobs), np.nan))
    assert "no job finished" in PrototypeTuner(CLUSTER).retune(simulation, empty).note


def test_every_suggestion_is_a_valid_configuration():
    space = SearchSpace()
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    policies = set()
    for _ in range(60):
        trial = study.ask()
        config = space.suggest(trial, DEFAULT_CONFIG)
        study.tell(trial, 0.0)
        policies.add(config.policy)
        assert space.contains(config)
        if config.policy == "tiresias":
            limits = config.queue_thresholds_gpu_s
            assert len(limits) == config.queues - 1 and list(limits) == sorted(limits)
    assert policies == set(space.policies)


def test_parameters_of_a_configuration_suggest_it_back():
    space = SearchSpace()
    config = SimConfig(policy="tiresias", queues=4, queue_limits_gpu_s=geometric_limits(500, 3, 3),
                       starvation_factor=2.0, lease_s=120, estimate="supplied")
    trial = optuna.trial.FixedTrial(space.params_of(config))
    again = space.suggest(trial, dataclasses.replace(config, queues=2, queue_limits_gpu_s=(1.0,)))
    assert again.policy == "tiresias" and again.queues == 4 and again.starvation_factor == 2.0
    assert again.queue_thresholds_gpu_s == pytest.approx(config.queue_thresholds_gpu_s)


@pytest.mark.parametrize("changes, message", [
    ({"queues": (1, 4)}, "queues must be a range within 2..9"),
    ({"queues": (2, 12)}, "queues must be a range within 2..9"),
    ({"lease_s": (100, 10)}, "lease_s must be a range"),
    ({"limit_ratio": (0.5, 2)}, "limit_ratio must exceed 1"),
    ({"policies": ("fifo", "magic")}, "unknown: magic"),
])
def test_invalid_search_ranges_are_clear_errors(changes, message):
    with pytest.raises(SimConfigError, match=message):
        SearchSpace(**changes)


@pytest.mark.parametrize("changes, message", [
    ({"budget": 7, "futures": 2}, "at least 4 x futures"),
    ({"interval_s": 0}, "interval_s must be a positive"),
    ({"horizon_s": float("nan")}, "horizon_s must be a positive"),
    ({"margin": 1.0}, "margin must be in"),
    ({"futures": 0}, "futures must be at least 1"),
    ({"search_batch": 0}, "search_batch must be at least 1"),
    ({"review_budget": 5, "futures": 3}, "review_budget must be 0"),
    ({"review_s": -1.0}, "review_s must be a positive"),
])
def test_invalid_tuner_settings_are_clear_errors(changes, message):
    with pytest.raises(SimConfigError, match=message):
        TunerSettings(**changes)


def test_replay_ranks_by_an_estimator_refitted_on_finished_jobs(make_workload):
    # SJF with estimates learned per VC beats FIFO on two_kinds; with the
    # estimator's prior alone (no refits, one interval longer than the trace)
    # every job looks alike and SJF is FIFO.
    jobs = two_kinds(make_workload)
    sjf, fifo = SimConfig(policy="sjf"), SimConfig(policy="fifo")
    learned = replay(jobs, CLUSTER, sjf).summary()["avg_jct_s"]
    assert learned < 0.85 * replay(jobs, CLUSTER, fifo).summary()["avg_jct_s"]
    blind = replay(jobs, CLUSTER, sjf, interval_s=10 * DAY).summary()["avg_jct_s"]
    assert blind == simulate(jobs, CLUSTER, fifo).summary()["avg_jct_s"]


def test_a_winner_must_win_again_on_fresh_futures(make_workload, monkeypatch):
    jobs = two_kinds(make_workload, days=1.0)
    jobs = dataclasses.replace(jobs, estimates=jobs.duration)
    fresh = WhatIf((jobs,), CLUSTER, 0.0, DAY)
    srtf, fifo = SimConfig(policy="srtf", estimate="supplied"), SimConfig(policy="fifo", estimate="supplied")
    assert fresh.score(srtf) < 0.9 * fresh.score(fifo)
    tuner = AutoSched(CLUSTER, FAST, evaluator=SerialEvaluator())
    monkeypatch.setattr(tuner, "_whatif", lambda *args: (fresh, ""))
    assert tuner._validate(srtf, fifo, jobs, None, 0.0) == (srtf, 2)
    assert tuner._validate(fifo, srtf, jobs, None, 0.0) == (srtf, 2)  # the incumbent stays


def test_durations_can_come_from_a_longer_window_than_arrivals(make_workload):
    from itercast.sched import WorkloadForecaster

    # Long jobs finished two to six days ago, short ones in the last day.
    long = make_workload(np.arange(20) * 3600.0, 1, 5 * DAY)
    short = make_workload(6 * DAY + np.arange(20) * 600.0, 1, 100.0)
    both = Workload.concat([long, short])
    finish = both.submit + both.duration
    now = 7 * DAY
    rng = np.random.default_rng(0)
    day_only = WorkloadForecaster(DAY).fit(both, finish, now)
    week = WorkloadForecaster(DAY, duration_history_s=7 * DAY).fit(both, finish, now)
    assert day_only.sample_durations(np.ones(200, int), None, np.zeros(200), rng).max() < 1000
    assert (week.sample_durations(np.ones(200, int), None, np.zeros(200), rng) > 1000).mean() > 0.3


def test_the_review_replays_the_past_with_what_is_known_now():
    # Warm-up job W, reviewed jobs A (finished) and B (running, 50 s done), C (queued).
    jobs = make_jobs(("W", 0, 1, 100), ("A", 1000, 1, 100), ("B", 2000, 1, 500), ("C", 2010, 1, 300))
    jobs = dataclasses.replace(jobs, estimates=np.array([1.0, 2.0, 3.0, 4.0]))
    finish = np.array([100, 1100, np.nan, np.nan])
    now = 2050.0
    live = jobs.subset(np.array([False, False, True, True]))
    live = dataclasses.replace(live, remaining_s=np.array([450.0, 300.0]))
    history = History(jobs, finish, submitted_estimates=np.array([np.nan, 7.0, 8.0, np.nan]))
    drawn = []

    def draw(unfinished, done_s):
        drawn.append((list(unfinished.job_ids), list(done_s)))
        return done_s + 1000.0

    past = past_whatif(history, live, now, CLUSTER, review_s=1500.0, warmup_s=1000.0, min_review_s=100.0,
                       draws=2, draw_durations=draw)
    assert drawn == [(["B", "C"], [50.0, 0.0])] * 2
    assert len(past.futures) == 2 and past.measure_from == now - 1500.0 and past.drain
    first = past.futures[0]
    assert list(first.job_ids) == ["W", "A", "B", "C"]  # W loads the cluster, is not scored
    np.testing.assert_array_equal(first.duration, [100, 100, 1050, 1000])
    np.testing.assert_array_equal(first.estimates, [1.0, 7.0, 8.0, 4.0])  # as submitted where recorded
    fifo = SimConfig(policy="fifo", estimate="supplied")
    # On an idle 16-GPU cluster every reviewed job runs at once: mean JCT of A, B, C.
    assert past.score(fifo) == pytest.approx((100 + 1050 + 1000) / 3)
    assert past_whatif(history, live, now, CLUSTER, review_s=1500.0, warmup_s=0.0, min_review_s=3000.0,
                       draws=1, draw_durations=None) is None  # less history than a review needs


def test_replay_records_the_estimate_each_job_arrived_with(make_workload):
    jobs = two_kinds(make_workload, days=1.0)
    seen = []

    class Recorder:
        def retune(self, simulation, history):
            seen.append(history)
            return Retune(simulation.now, simulation.config, simulation.config, 0.0, 0.0, 0, 0.0)

    replay(jobs, CLUSTER, SimConfig(policy="sjf"), tuner=Recorder())
    early, late = seen[0], seen[-1]
    arrived_early = jobs.submit < early.workload.submit.min() + 3600
    # What the first hour's jobs arrived with is kept, though the estimator has learned since;
    # the early History is its own record, not a view of one that kept filling.
    np.testing.assert_array_equal(late.submitted_estimates[arrived_early], early.submitted_estimates[arrived_early])
    assert late.submitted_estimates is not early.submitted_estimates
    assert np.isnan(early.submitted_estimates[~arrived_early]).all()
    assert np.isfinite(late.submitted_estimates).all()
    assert not np.allclose(late.submitted_estimates, late.estimate(jobs))


def test_a_review_sets_home_and_the_tuner_goes_there(make_workload):
    jobs = two_kinds(make_workload, days=3.0)
    settings = dataclasses.replace(FAST, review_budget=16, review_s=DAY)
    tuner = AutoSched(CLUSTER, settings, evaluator=SerialEvaluator())
    tuned = replay(jobs, CLUSTER, SimConfig(policy="fifo"), tuner=tuner)
    homes = [retune.home for retune in tuned.retunes if retune.home is not None]
    assert homes and homes[-1].policy != "fifo"
    fifo = dataclasses.replace(homes[-1], policy="fifo")
    assert tuner._past.score(homes[-1]) < (1 - settings.margin) * tuner._past.score(fifo)
    assert tuned.summary()["avg_jct_s"] < 0.7 * replay(jobs, CLUSTER, SimConfig(policy="fifo")).summary()["avg_jct_s"]


def test_a_detour_the_week_would_have_regretted_is_not_taken(make_workload):
    jobs = two_kinds(make_workload, days=1.0)
    jobs = dataclasses.replace(jobs, estimates=jobs.duration)
    past = WhatIf((jobs,), CLUSTER, 0.0, np.inf, drain=True)
    srtf, fifo = SimConfig(policy="srtf", estimate="supplied"), SimConfig(policy="fifo", estimate="supplied")
    tuner = AutoSched(CLUSTER, FAST, evaluator=SerialEvaluator())
    assert tuner._plausible(fifo) == (True, 0)  # no review yet: nothing to regret
    tuner._past, tuner._home_past_score = past, past.score(srtf)
    assert tuner._plausible(fifo) == (False, 1)
    assert tuner._plausible(srtf) == (True, 1)


def test_the_survival_model_learns_from_the_running_jobs_the_tuner_sees(make_workload):
    jobs = two_kinds(make_workload, days=1.0)
    fifo = SimConfig(policy="fifo", estimate="supplied")
    simulation = Simulation(dataclasses.replace(jobs, estimates=jobs.duration), CLUSTER, fifo)
    simulation.run(until=jobs.submit.min() + 12 * 3600)
    live = simulation.snapshot()
    history = History(jobs, simulation.result().finish)
    tuner = AutoSched(CLUSTER, dataclasses.replace(FAST, duration_model="survival"), evaluator=SerialEvaluator())
    elapsed = tuner._elapsed(live, history)
    running = live.running.astype(bool)
    rows = [list(jobs.job_ids).index(job_id) for job_id in live.job_ids[running]]
    assert len(rows) > 0
    np.testing.assert_allclose(elapsed[rows], whatif_module.work_done_s(live)[running])
    assert np.isnan(np.delete(elapsed, [list(jobs.job_ids).index(j) for j in live.job_ids])).all()
    assert AutoSched(CLUSTER, FAST, evaluator=SerialEvaluator())._elapsed(live, history) is None


def test_a_tuner_with_the_survival_model_is_deterministic_and_differs_from_the_empirical_one(make_workload):
    jobs = two_kinds(make_workload, days=1.0, seed=4)
    survival = dataclasses.replace(FAST, duration_model="survival")
    runs = [replay(jobs, CLUSTER, tuner=AutoSched(CLUSTER, settings, evaluator=SerialEvaluator())).retunes
            for settings in (survival, survival, FAST)]
    scores = [[retune.incumbent_score for retune in retunes if retune.simulations] for retunes in runs]
    assert scores[0] == scores[1]
    assert scores[0] != scores[2]


def test_an_unknown_duration_model_is_refused():
    with pytest.raises(SimConfigError, match="duration_model must be one of empirical, survival"):
        TunerSettings(duration_model="km")
