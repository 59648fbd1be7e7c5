"""Jobs with real configurations: predictions file -> per-job iterations and duration estimates."""

import numpy as np
import pytest

from itercast.errors import ItercastError
from itercast.sched.jobs import (
    DEADLINE_SLACK, OP_TIME_ORACLE, ORACLE, SIA_APPLICATIONS, SYNTHETIC_ACCURACIES, IterationTimes, configure, configure_sia, configure_trace,
    synthetic_name,
)
from itercast.sim import load_workload
from prediction_fixtures import CONFIGS, two_targets, write_predictions, write_sia


@pytest.fixture
def times(tmp_path):
    return IterationTimes.read(write_predictions(tmp_path / "predictions.csv"))


def test_reads_measured_and_every_estimators_iteration_times(times):
    assert len(times) == len(CONFIGS) and times.estimators == ("lightgbm", "opbased")
    assert times.measured_ms.tolist() == [c[2] for c in CONFIGS]
    assert times.mre()["lightgbm"] == pytest.approx(np.mean([0.1, 0.05, 0.05, 0.1, 0.1]))


def test_evaluates_oracle_diagnostic_does_not_replace_the_true_durations(tmp_path, make_workload):
    """`itercast evaluate --models lightgbm,oracle` writes predicted_ms:oracle (measured op times through
    the pipeline, not the truth): it becomes an estimator of its own, and the oracle stays the duration."""
    configs = [(m, b, measured, {**predicted, "oracle": measured * 1.5}) for m, b, measured, predicted in CONFIGS]
    times = IterationTimes.read(write_predictions(tmp_path / "with-oracle.csv", configs))
    assert times.estimators == ("lightgbm", "opbased", OP_TIME_ORACLE)
    workload = make_workload(np.arange(20.0), 1, np.linspace(100, 5000, 20))
    jobs = configure_trace(workload, times, seed=1)
    assert np.allclose(jobs.estimates[ORACLE][:, 0], workload.duration)
    assert np.allclose(jobs.estimates[OP_TIME_ORACLE][:, 0], 1.5 * workload.duration)


@pytest.mark.parametrize("text, message", [
    ("config_id,model\nx,y\n", "not a predictions CSV"),
    (None, ":3: measured_ms must be positive"),
])
def test_bad_predictions_files_are_named_with_the_line(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    if text is None:
        write_predictions(path)
        lines = path.read_text().splitlines()
        lines[2] = lines[2].replace(",120.0,", ",0,")
        path.write_text("\n".join(lines) + "\n")
    else:
        path.write_text(text)
    with pytest.raises(ItercastError, match=message):
        IterationTimes.read(path)


def test_several_hardware_targets_must_be_chosen_between(tmp_path):
    write_predictions(tmp_path / "a.csv")
    lines = (tmp_path / "a.csv").read_text().splitlines()
    lines.append(lines[1].replace("resnet18-b8", "resnet18-b8-gpu").replace(",cpu,", ",gpu,"))
    (tmp_path / "b.csv").write_text("\n".join(lines) + "\n")
    times = IterationTimes.read(tmp_path / "b.csv")
    with pytest.raises(ItercastError, match="several hardware"):
        times.aligned(None)
    assert len(times.on("gpu")) == 1 and len(times.on("cpu")) == len(CONFIGS)
    with pytest.raises(ItercastError, match="no hardware target matches 'tpu'"):
        times.on("tpu")


def test_trace_jobs_keep_their_duration_and_get_estimates_scaled_by_the_predicted_iteration_time(
        times, make_workload):
    workload = make_workload(np.arange(200.0), 1, np.linspace(100, 5000, 200))
    jobs = configure_trace(workload, times, seed=4)
    assert np.array_equal(jobs.workload.duration, workload.duration)
    k = jobs.config_index
    assert len(set(k)) == len(CONFIGS)  # every configuration drawn
    assert np.allclose(jobs.iterations * times.measured_ms[k] / 1000, workload.duration)
    assert np.allclose(jobs.estimates[ORACLE][:, 0], workload.duration)
    ratio = times.predicted_ms["opbased"][k] / times.measured_ms[k]
    assert np.allclose(jobs.with_estimator("opbased").estimates, workload.duration * ratio)
    assert jobs.with_estimator("opbased").type_estimates is None  # one GPU type
    for accuracy in SYNTHETIC_ACCURACIES:
        factor = jobs.estimates[synthetic_name(accuracy)][:, 0] / workload.duration
        assert factor.min() >= accuracy and factor.max() <= 2 - accuracy
    slack = (jobs.workload.deadlines - workload.submit) / workload.duration
    assert slack.min() >= 1.5 and slack.max() <= 3.0
    again = configure_trace(workload, times, seed=4)
    assert np.array_equal(again.config_index, k) and np.array_equal(again.workload.deadlines, jobs.workload.deadlines)


def test_a_seeds_draws_are_not_the_next_seeds_draws_shifted(times, make_workload):
    """The deadline slack of seed s and the synthetic error factors of seed s + 1 are each
    uniform draws scaled to their range: from independent streams, the unit draws differ."""
    workload = make_workload(np.arange(50.0), 1, np.linspace(100, 5000, 50))
    for seed in range(3):
        this, next_seed = configure_trace(workload, times, seed=seed), configure_trace(workload, times, seed=seed + 1)
        low, high = DEADLINE_SLACK
        deadline_units = ((this.workload.deadlines - workload.submit) / workload.duration - low) / (high - low)
        accuracy = SYNTHETIC_ACCURACIES[0]
        factor = next_seed.estimates[synthetic_name(accuracy)][:, 0] / workload.duration
        estimate_units = (factor - accuracy) / (2 - 2 * accuracy)
        assert not np.allclose(deadline_units, estimate_units)
        assert not np.array_equal(this.config_index, next_seed.config_index)


def test_sia_jobs_run_their_applications_closest_zoo_model(tmp_path, times):
    path = write_sia(tmp_path / "sia.csv", [(0, "cifar10", 4, 128), (10, "imagenet", 8, 256), (20, "cifar10", 1, 8)])
    jobs = configure_sia(path, times)
    chosen = [(times.model[k], times.batch_size[k]) for k in jobs.config_index]
    assert chosen == [("resnet18", 32), ("resnet50", 32), ("resnet18", 8)]
    assert jobs.workload.gpus.tolist() == [4, 8, 1] and jobs.workload.submit.tolist() == [0, 10, 20]
    cifar = SIA_APPLICATIONS["cifar10"]
    assert jobs.iterations[0] == pytest.approx(cifar.epochs * cifar.samples / 128)
    # 32 samples per replica at the batch-32 configuration's 120 ms
    assert jobs.workload.duration[0] == pytest.approx(jobs.iterations[0] * 0.120)
    assert jobs.workload.duration[2] == pytest.approx(cifar.epochs * cifar.samples / 8 * 0.040)


def test_sia_jobs_can_draw_their_model_from_their_applications_family(tmp_path, times):
    """--sia-models family: one application's jobs run different models of its family, each at the batch
    nearest its own, the draw seeded; the work per job is still the application's."""
    rows = [(t, "cifar10", 1, 32) for t in range(40)] + [(40, "bert", 1, 8), (41, "deepspeech2", 1, 32)]
    path = write_sia(tmp_path / "sia.csv", rows)
    jobs = configure_sia(path, times, seed=5, models="family")
    models = times.model[jobs.config_index]
    assert set(models[:40]) == {"resnet18", "resnet50"}  # the fixture's cnn family
    assert list(models[40:]) == ["bert_medium", "gru_512x2"]
    assert set(times.batch_size[jobs.config_index[:40]]) == {32}
    cifar = SIA_APPLICATIONS["cifar10"]
    assert np.allclose(jobs.iterations[:40], cifar.epochs * cifar.samples / 32)
    cifar_ms = times.measured_ms[jobs.config_index[:40]]
    assert np.allclose(jobs.workload.duration[:40], jobs.iterations[:40] * cifar_ms / 1000)
    again = configure_sia(path, times, seed=5, models="family")
    other = configure_sia(path, times, seed=6, models="family")
    assert np.array_equal(again.config_index, jobs.config_index)
    assert not np.array_equal(other.config_index, jobs.config_index)
    closest = configure_sia(path, times, seed=5)
    assert set(times.model[closest.config_index[:40]]) == {"resnet18"}


def test_a_family_draw_needs_the_family_and_a_sia_workload(tmp_path, times, make_workload):
    few = IterationTimes.read(write_predictions(tmp_path / "few.csv", CONFIGS[:3]))
    with pytest.raises(ItercastError, match="no model of zoo family 'rnn'"):
        configure_sia(write_sia(tmp_path / "s.csv", [(0, "deepspeech2", 1, 32)]), few, models="family")
    with pytest.raises(ItercastError, match="unknown Sia model choice 'nearest'"):
        configure_sia(write_sia(tmp_path / "t.csv", [(0, "cifar10", 1, 32)]), times, models="nearest")
    trace = tmp_path / "trace.csv"
    trace.write_text("job_id,submit_time,gpu_num,duration\nj1,0,1,100\n")
    with pytest.raises(ItercastError, match="not a Sia workload"):
        configure(trace, times, sia_models="family")


def test_sia_errors_name_the_file_and_line(tmp_path, times):
    path = write_sia(tmp_path / "sia.csv", [(0, "cifar10", 4, 128), (1, "alexnet", 1, 8)])
    with pytest.raises(ItercastError, match=r"sia.csv:3: unknown application 'alexnet'"):
        configure_sia(path, times)
    few = IterationTimes.read(write_predictions(tmp_path / "few.csv", CONFIGS[:1]))
    with pytest.raises(ItercastError, match="no configuration of zoo model 'resnet50'"):
        configure_sia(write_sia(tmp_path / "b.csv", [(0, "imagenet", 8, 256)]), few)


def test_the_written_workload_is_read_back_with_estimates_and_deadlines(tmp_path, times):
    path = write_sia(tmp_path / "sia.csv", [(0, "cifar10", 4, 128), (10, "bert", 2, 32), (30, "deepspeech2", 2, 64)])
    jobs = configure(path, times)
    jobs.write_csv(tmp_path / "jobs.csv", "lightgbm")
    back = load_workload(tmp_path / "jobs.csv")
    assert np.allclose(back.duration, jobs.workload.duration, rtol=1e-6)
    assert np.allclose(back.estimates, jobs.with_estimator("lightgbm").estimates, rtol=1e-6)
    assert np.allclose(back.deadlines, jobs.workload.deadlines, rtol=1e-6)
    assert list(back.virtual_cluster) == ["cifar10", "bert", "deepspeech2"]


def test_targets_are_aligned_row_by_row_on_the_work_both_measured(tmp_path):
    cpu, slow = two_targets(tmp_path).aligned(["cpu", "slow"])
    work = [(model, batch) for model, batch, *_ in CONFIGS if model != "resnet50"]
    for table in (cpu, slow):
        assert sorted(zip(table.model, table.batch_size)) == sorted(work)
    assert list(zip(cpu.model, cpu.batch_size)) == list(zip(slow.model, slow.batch_size))
    assert set(cpu.hardware) == {"cpu"} and set(slow.hardware) == {"slow"}
    assert np.allclose(slow.measured_ms, 3 * cpu.measured_ms)
    assert np.allclose(slow.predicted_ms["lightgbm"], 3 * cpu.predicted_ms["lightgbm"])


def test_two_configurations_of_one_work_on_a_target_cannot_be_aligned(tmp_path):
    write_predictions(tmp_path / "a.csv")
    lines = (tmp_path / "a.csv").read_text().splitlines()
    lines.append(lines[1].replace("-cpu-t1,", "-cpu-t4,"))  # resnet18 batch 8 again, with 4 threads
    (tmp_path / "b.csv").write_text("\n".join(lines) + "\n")
    times = IterationTimes.read(tmp_path / "b.csv")
    assert len(times.aligned(None)[0]) == len(CONFIGS) + 1  # one target: nothing to match
    with pytest.raises(ItercastError, match=r"resnet18-b8-s32-float32-cpu-t1 and resnet18-b8-s32-float32-cpu-t4 "
                                            r"on cpu are the same work \(resnet18-b8-s32-float32\)"):
        times.aligned(["cpu"])


def test_every_estimators_column_written_is_read_back_and_the_truth_is_never_an_estimate(tmp_path, times):
    path = write_sia(tmp_path / "sia.csv", [(0, "cifar10", 4, 128), (10, "bert", 2, 32), (30, "deepspeech2", 2, 64)])
    jobs = configure(path, times)
    jobs.write_csv(tmp_path / "jobs.csv", "lightgbm")
    header = (tmp_path / "jobs.csv").read_text().splitlines()[0].split(",")
    assert "estimated_duration:oracle" not in header
    for name in ("opbased", "90% accurate", "25% accurate"):
        back = load_workload(tmp_path / "jobs.csv", estimator=name)
        assert np.allclose(back.estimates, jobs.with_estimator(name).estimates, rtol=1e-6)
    jobs.write_csv(tmp_path / "unchosen.csv")
    assert "estimated_duration" not in (tmp_path / "unchosen.csv").read_text().splitlines()[0].split(",")
    assert load_workload(tmp_path / "unchosen.csv").estimates is None
    with pytest.raises(ItercastError, match="the oracle's estimates are the true durations"):
        jobs.write_csv(tmp_path / "oracle.csv", ORACLE)
    with pytest.raises(ItercastError, match="no estimator 'ets' to write as estimated_duration"):
        jobs.write_csv(tmp_path / "ets.csv", "ets")


def test_several_targets_become_gpu_types_with_per_type_durations_and_estimates(tmp_path, make_workload):
    times = two_targets(tmp_path)
    workload = make_workload(np.arange(100.0), 1, np.linspace(100, 5000, 100))
    jobs = configure_trace(workload, times, seed=1, hardware=["cpu", "slow"])
    assert jobs.workload.gpu_types == ("cpu", "slow")
    assert set(jobs.times.model[jobs.config_index]) == {"resnet18", "bert_medium", "gru_512x2"}  # on both
    assert np.allclose(jobs.workload.durations[:, 0], workload.duration)
    assert np.allclose(jobs.workload.durations[:, 1], 3 * workload.duration)
    supplied = jobs.with_estimator("lightgbm")
    assert supplied.type_estimates.shape == (100, 2)
    assert np.allclose(supplied.type_estimates[:, 1], 3 * supplied.type_estimates[:, 0])
    assert np.allclose(supplied.estimates, supplied.type_estimates.min(axis=1))


def test_predictions_files_of_two_targets_combine_into_the_same_tables_as_one_file(tmp_path):
    one_file = two_targets(tmp_path)
    lines = (tmp_path / "a.csv").read_text().splitlines()
    fast, slow = tmp_path / "fast.csv", tmp_path / "slow.csv"
    fast.write_text("\n".join([lines[0]] + [line for line in lines[1:] if ",slow," not in line]) + "\n")
    slow.write_text("\n".join([lines[0].replace(",predicted_ms:opbased", "")]
                              + [line.rsplit(",", 1)[0] for line in lines[1:] if ",slow," in line]) + "\n")
    combined = IterationTimes.combine([IterationTimes.read(fast), IterationTimes.read(slow)])
    assert combined.estimators == ("lightgbm",)  # the estimators both files have
    cpu, slow = combined.aligned(["cpu", "slow"])
    assert len(cpu) == len(one_file.aligned(["cpu", "slow"])[0]) == len(CONFIGS) - 1  # all but resnet50
    assert list(zip(cpu.model, cpu.batch_size)) == list(zip(slow.model, slow.batch_size))
    assert np.allclose(slow.predicted_ms["lightgbm"], 3 * cpu.predicted_ms["lightgbm"])
    with pytest.raises(ItercastError, match="in more than one of"):
        IterationTimes.combine([IterationTimes.read(fast), IterationTimes.read(fast)])


def test_the_bundled_predictions_serve_every_sia_application_either_way():
    """data/cpu-zoo-1207-predictions.csv reruns docs/sched-prediction.md's Sia tables without a collection."""
    from pathlib import Path

    bundled = Path(__file__).resolve().parents[2] / "data" / "cpu-zoo-1207-predictions.csv"
    if not bundled.exists():
        pytest.skip("run outside the source tree (scripts/check-wheel copies tests/ alone)")
    times = IterationTimes.read(bundled)
    assert {"lightgbm", "opbased", "ets", "linear"} <= set(times.estimators) and len(times) == 864
    for application in SIA_APPLICATIONS.values():
        assert application.model in set(times.model)
        assert len(set(times.model[times.family == application.family])) > 1
