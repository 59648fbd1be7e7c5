"""itercast experiment sched-prediction end to end on a Sia-style workload."""

import json

import numpy as np
import pytest

from itercast.cli import main
from prediction_fixtures import CONFIGS, two_targets, write_predictions, write_sia


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    applications = rng.choice(["cifar10", "cifar10", "bert", "deepspeech2", "imagenet"], 40)
    rows = [(float(t), app, int(rng.choice([1, 2, 4])), int(rng.choice([64, 128])))
            for t, app in zip(np.sort(rng.uniform(0, 4 * 3600, 40)), applications)]
    return write_predictions(tmp_path / "predictions.csv"), write_sia(tmp_path / "sia.csv", rows)


def test_json_rows_cover_each_estimator_and_policy(files, tmp_path, capsys):
    predictions, workload = files
    plot = tmp_path / "plot.png"
    code = main(["experiment", "sched-prediction", "--dataset", str(predictions), "--workload", str(workload),
                 "--gpus", "8", "--gpus-per-node", "4", "--autosched-estimators", "", "--json", "--plot", str(plot)])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    rows = {(row["estimator"], row["policy"]): row for row in result["rows"]}
    for estimator in ("oracle", "lightgbm", "opbased", "90% accurate", "25% accurate"):
        for policy in ("sjf", "srtf", "qssf", "lst"):
            assert (estimator, policy) in rows
    for policy in ("fifo", "las", "tiresias", "edf"):
        assert ("none", policy) in rows
    assert all(rows[("oracle", policy)]["jct_vs_oracle"] == 1 for policy in ("sjf", "srtf"))
    assert set(rows[("none", "edf")]["tardiness"]) == {"late_jobs", "late_fraction", "mean_lateness_s"}
    # the cluster queues: ordering by true durations beats arrival order
    assert rows[("oracle", "srtf")]["avg_jct_s"] < rows[("none", "fifo")]["avg_jct_s"]
    assert result["prediction_mre"]["oracle"]["jobs"] == 0
    assert 0 < result["prediction_mre"]["lightgbm"]["configurations"] < 0.2
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_autosched_runs_with_the_estimators_asked_for(files, capsys):
    predictions, workload = files
    code = main(["experiment", "sched-prediction", "--dataset", str(predictions), "--workload", str(workload),
                 "--gpus", "8", "--gpus-per-node", "4", "--autosched-estimators", "lightgbm", "--workers", "1",
                 "--json"])
    assert code == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {row["estimator"] for row in rows if row["policy"] == "autosched"} == {"lightgbm", "none"}


@pytest.mark.parametrize("options, objective, guard", [([], "avg-jct", 0.10),
                                                      (["--objective", "avg-jct-guarded", "--tail-guard", "0.2"],
                                                       "avg-jct-guarded", 0.2)])
def test_autosched_runs_with_the_objective_asked_for(files, capsys, monkeypatch, options, objective, guard):
    from itercast.sched import experiment

    seen = []
    real = experiment.run_experiment

    def recording(*args, tuner_settings=None, **kwargs):
        seen.append(tuner_settings)
        return real(*args, tuner_settings=tuner_settings, **kwargs)

    monkeypatch.setattr(experiment, "run_experiment", recording)
    predictions, workload = files
    assert main(["experiment", "sched-prediction", "--dataset", str(predictions), "--workload", str(workload),
                 "--gpus", "8", "--gpus-per-node", "4", "--autosched-estimators", "", "--json", *options]) == 0
    assert [(settings.objective, settings.tail_guard) for settings in seen] == [(objective, guard)]


def test_a_missing_predictions_file_is_a_clear_error(tmp_path, files, capsys):
    _, workload = files
    code = main(["experiment", "sched-prediction", "--dataset", str(tmp_path / "nope.csv"), "--workload",
                 str(workload), "--gpus", "8", "--gpus-per-node", "4"])
    assert code == 2 and "no such predictions file" in capsys.readouterr().err


def test_sia_jobs_drawn_from_their_applications_family(files, tmp_path, capsys):
    predictions, workload = files
    written = tmp_path / "jobs.csv"
    argv = ["experiment", "sched-prediction", "--dataset", str(predictions), "--workload", str(workload),
            "--gpus", "8", "--gpus-per-node", "4", "--autosched-estimators", "", "--json"]
    assert main(argv + ["--sia-models", "family", "--write-workload", str(written)]) == 0
    capsys.readouterr()
    rows = [line.split(",") for line in written.read_text().splitlines()[1:]]
    assert {row[8] for row in rows if row[1] == "cifar10"} == {"resnet18", "resnet50"}  # not all resnet18
    assert main(argv + ["--sia-models", "nearest"]) == 2
    assert "argument --sia-models: invalid choice: 'nearest'" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--plot", "--write-workload"])
def test_an_output_in_a_missing_directory_fails_before_the_simulations(tmp_path, files, capsys, option):
    predictions, workload = files
    target = tmp_path / "missing" / "out"
    code = main(["experiment", "sched-prediction", "--dataset", str(predictions), "--workload", str(workload),
                 "--gpus", "8", "--gpus-per-node", "4", option, str(target), "--json"])
    captured = capsys.readouterr()
    assert code == 2 and f"{option} {target}: no directory" in captured.err and captured.out == ""


def test_several_hardware_targets_compare_placement_by_estimates_with_type_blind(tmp_path, capsys):
    two_targets(tmp_path)  # writes tmp_path / "a.csv": the fixture on "cpu" and 3x slower on "slow"
    rng = np.random.default_rng(1)
    rows = [(float(t), str(app), 1, 32) for t, app in
            zip(np.sort(rng.uniform(0, 3600, 60)), rng.choice(["cifar10", "bert", "deepspeech2"], 60))]
    workload = write_sia(tmp_path / "sia.csv", rows)
    code = main(["experiment", "sched-prediction", "--dataset", str(tmp_path / "a.csv"), "--workload",
                 str(workload), "--hardware", "cpu,slow", "--gpus", "8", "--gpus-per-node", "4",
                 "--autosched-estimators", "", "--json"])
    assert code == 0
    result = {(row["estimator"], row["policy"], row["gpu_type_choice"]): row
              for row in json.loads(capsys.readouterr().out)["rows"]}
    oracle_placed, oracle_blind = result[("oracle", "srtf", "estimated")], result[("oracle", "srtf", "blind")]
    # each placement is judged against the oracle placed the same way
    assert oracle_placed["jct_vs_oracle"] == 1 and oracle_blind["jct_vs_oracle"] == 1
    # a type three times slower: placing by the estimates beats ignoring them
    assert oracle_placed["avg_jct_s"] < oracle_blind["avg_jct_s"]
    assert ("lightgbm", "srtf", "blind") in result and ("none", "fifo", "blind") in result
    assert ("lightgbm", "sjf", "blind") not in result


def test_one_predictions_file_per_hardware_target(files, tmp_path, capsys):
    predictions, workload = files
    slow = tmp_path / "slow.csv"
    lines = predictions.read_text().splitlines()
    slow.write_text("\n".join([lines[0]] + [line.replace(",cpu,", ",slow,") for line in lines[1:]]) + "\n")
    argv = ["experiment", "sched-prediction", "--dataset", str(tmp_path), "--predictions", str(predictions),
            "--predictions", str(slow), "--hardware", "cpu,slow", "--workload", str(workload), "--gpus", "8",
            "--gpus-per-node", "4", "--autosched-estimators", "", "--json"]
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {row["gpu_type_choice"] for row in rows if row["policy"] == "srtf"} == {"estimated", "blind"}
    assert main(argv[:6] + ["--predictions", str(tmp_path / "missing.csv")] + argv[8:]) != 0
    assert "missing.csv: no such predictions file" in capsys.readouterr().err


def test_without_the_predictors_column_the_written_workload_has_no_estimate_column(tmp_path, files, capsys):
    _, workload = files
    baselines_only = [(model, batch, measured, {"opbased": predicted["opbased"]})
                      for model, batch, measured, predicted in CONFIGS]
    predictions = write_predictions(tmp_path / "baselines.csv", baselines_only)
    written = tmp_path / "jobs.csv"
    assert main(["experiment", "sched-prediction", "--dataset", str(predictions), "--workload", str(workload),
                 "--gpus", "8", "--gpus-per-node", "4", "--autosched-estimators", "", "--json",
                 "--write-workload", str(written)]) == 0
    assert "has no estimated_duration column" in capsys.readouterr().err
    header = written.read_text().splitlines()[0].split(",")
    assert "estimated_duration" not in header and "estimated_duration:oracle" not in header
    sjf = ["sim", "--workload", str(written), "--gpus", "8", "--gpus-per-node", "4", "--policy", "sjf",
           "--set", "estimate=supplied", "--json"]
    assert main(sjf) == 2  # no estimates to rank by, not the true durations
    capsys.readouterr()
    assert main(sjf + ["--estimator", "opbased"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs"] == 40


@pytest.fixture
def collection(tmp_path, monkeypatch):
    """A collection directory whose held-out predictions are "computed" by copying the fixture's,
    counting each computation."""
    from itercast.cli import experiment

    directory = tmp_path / "collection"
    directory.mkdir()
    (directory / "manifest.csv").write_text("config_id,status\nresnet18-b8,ok\n")
    computed = []

    def compute(dataset, path, ets_seconds, seed):
        computed.append((seed, ets_seconds))
        write_predictions(path)

    monkeypatch.setattr(experiment, "compute_predictions", compute)
    return directory, computed


def run_on_collection(directory, workload, *options):
    return main(["experiment", "sched-prediction", "--dataset", str(directory), "--workload", str(workload),
                 "--gpus", "8", "--gpus-per-node", "4", "--autosched-estimators", "", "--json", *options])


def test_a_collections_predictions_are_recomputed_when_what_made_them_differs(collection, files, capsys,
                                                                              monkeypatch):
    import itercast
    import itercast.timeline

    directory, computed = collection
    _, workload = files
    assert run_on_collection(directory, workload) == 0
    assert run_on_collection(directory, workload) == 0
    assert computed == [(0, 120.0)]  # kept: made from the same settings, data and code
    capsys.readouterr()
    # Another draw of the workload's configurations is scheduled with the same predictions.
    assert run_on_collection(directory, workload, "--seed", "1") == 0
    assert computed == [(0, 120.0)] and "recomputing" not in capsys.readouterr().err
    for options, change, named in [
        (["--prediction-seed", "1"], None, "seed 0 (now 1)"),
        (["--prediction-seed", "1", "--ets-seconds", "30"], None, "ets_seconds 120.0 (now 30.0)"),
        (["--prediction-seed", "1", "--ets-seconds", "30"],
         lambda: (directory / "manifest.csv").write_text("config_id\n"), "manifest_sha256"),
        (["--prediction-seed", "1", "--ets-seconds", "30"],
         lambda: monkeypatch.setattr(itercast.timeline, "FEATURE_SCHEMA_VERSION", -1), "feature_schema_version"),
        (["--prediction-seed", "1", "--ets-seconds", "30"],
         lambda: monkeypatch.setattr(itercast, "__version__", "0.0.0"), "itercast_version"),
    ]:
        if change:
            change()
        before = len(computed)
        assert run_on_collection(directory, workload, *options) == 0
        assert len(computed) == before + 1
        assert named in capsys.readouterr().err
    assert run_on_collection(directory, workload, "--prediction-seed", "1", "--ets-seconds", "30", "--seed", "2") == 0
    assert len(computed) == 6 and computed[-1] == (1, 30.0)


def test_predictions_without_a_record_of_what_made_them_are_refused(collection, files, capsys):
    directory, computed = collection
    _, workload = files
    write_predictions(directory / "predictions.csv")
    assert run_on_collection(directory, workload) == 2
    assert "predictions.csv: no record of what made it (predictions.csv.provenance.json)" in capsys.readouterr().err
    assert computed == []
