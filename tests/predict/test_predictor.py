"""The Predictor on a real tiny collection: fit, predict, save/load, structure-only input."""

import gzip
import json

import numpy as np
import pytest

from itercast import ItercastError
from itercast.cli import main
from itercast.predict import Dataset, Predictor
from itercast.predict.forest import NativeBooster
from itercast.timeline import FEATURE_SCHEMA_VERSION


@pytest.fixture(scope="module")
def dataset(tiny_collection):
    return Dataset.from_manifest(tiny_collection)


@pytest.fixture(scope="module")
def predictor(dataset):
    return Predictor(rounds=30).fit(dataset)


def scaled_trace(path, factor: int) -> bytes:
    """The trace with every ts and dur multiplied by `factor`."""
    raw = path.read_bytes()
    document = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    for event in document["traceEvents"]:
        for key in ("ts", "dur"):
            if isinstance(event.get(key), (int, float)):
                event[key] = event[key] * factor
    return json.dumps(document).encode()


def test_one_model_per_hardware_with_a_reconciliation(predictor, dataset):
    assert predictor.hardware == dataset.hardware_keys() and len(predictor.hardware) == 1
    model = predictor.models[predictor.hardware[0]]
    assert model.summary["configs"] == len(dataset)
    assert np.isfinite(model.reconciliation.scale) and model.reconciliation.scale > 0
    assert "aten::linear" in model.vocabulary


def test_predictions_are_positive_per_iteration_with_measured_times(predictor, dataset):
    prediction = predictor.predict(dataset.configs[0].trace_path)
    assert prediction.predicted_ms > 0 and prediction.iterations
    assert all(it.measured_ms and it.measured_ms > 0 and it.predicted_ms > 0 for it in prediction.iterations)
    assert all(it.name.startswith("ProfilerStep#") for it in prediction.iterations)
    assert prediction.unseen_fraction == 0.0  # every op type was in training


def test_prediction_ignores_measured_times(predictor, dataset):
    path = dataset.configs[3].trace_path
    plain = predictor.predict(scaled_trace(path, 1))
    slow = predictor.predict(scaled_trace(path, 3))
    assert slow.predicted_ms == pytest.approx(plain.predicted_ms, rel=1e-9)
    assert [it.measured_ms for it in slow.iterations] == pytest.approx(
        [3 * it.measured_ms for it in plain.iterations])


def test_unseen_ops_still_predict_and_are_counted(predictor):
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0,
               "dur": 100}]
    events += [{"ph": "X", "cat": "cpu_op", "name": f"custom::never_seen_{k}", "pid": 1, "tid": 1,
                "ts": 1 + 10 * k, "dur": 5, "args": {"Input Dims": [[4, 4]], "Input type": ["float"]}}
               for k in range(6)]
    events.append({"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 80, "dur": 5,
                   "args": {"Input Dims": [[2, 4], [4, 4], [4]], "Input type": ["float"] * 3}})
    prediction = predictor.predict(json.dumps({"traceEvents": events}).encode())
    assert prediction.unseen_fraction == pytest.approx(6 / 7)
    assert np.isfinite(prediction.predicted_ms)


def test_save_and_load_round_trip(predictor, dataset, tmp_path):
    path = tmp_path / "model.itc"
    predictor.save(path)
    loaded = Predictor.load(path)
    trace = dataset.configs[1].trace_path
    assert loaded.predict(trace).predicted_ms == pytest.approx(predictor.predict(trace).predicted_ms, rel=1e-12)
    assert loaded.models[loaded.hardware[0]].vocabulary == predictor.models[predictor.hardware[0]].vocabulary


def test_loading_another_schema_or_a_foreign_file_fails_clearly(predictor, tmp_path):
    path = tmp_path / "model.itc"
    predictor.save(path)
    document = json.loads(path.read_text())
    document["feature_schema"] = FEATURE_SCHEMA_VERSION + 1
    path.write_text(json.dumps(document))
    with pytest.raises(ItercastError, match="feature schema"):
        Predictor.load(path)
    (tmp_path / "other.itc").write_text("{}")
    with pytest.raises(ItercastError, match="not an itercast model"):
        Predictor.load(tmp_path / "other.itc")


def test_train_and_predict_cli(tiny_collection, dataset, tmp_path, capsys):
    model = tmp_path / "m.itc"
    assert main(["train", str(tiny_collection), "-o", str(model), "--rounds", "20", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["configs"] == len(dataset) and model.exists()
    assert main(["predict", str(model), str(dataset.configs[0].trace_path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["predicted_ms"] > 0 and result["hardware"] == dataset.hardware_keys()[0]
    assert all("measured_ms" in it and "predicted_ms" in it for it in result["iterations"])
    assert result["warnings"] == []  # a CPU trace for a CPU target
    assert main(["predict", str(tmp_path / "absent.itc"), str(dataset.configs[0].trace_path)]) != 0


def test_a_trace_from_another_kind_of_device_is_predicted_with_a_warning(dataset, tmp_path, capsys):
    """The tiny collection's CPU traces, predicted by a model whose target is a GPU, say so in the
    Prediction, the JSON and on stderr: the op sequence differs between kinds of device."""
    from dataclasses import replace

    from itercast.predict import featurise

    samples = [replace(s, config=replace(s.config, hardware="cuda:Some GPU")) for s in featurise(dataset.configs)]
    path = tmp_path / "gpu.itc"
    Predictor(rounds=10).fit(samples).save(path)
    trace = dataset.configs[0].trace_path
    prediction = Predictor.load(path).predict(trace)
    assert prediction.hardware == "cuda:Some GPU" and prediction.predicted_ms > 0
    assert len(prediction.warnings) == 1 and "ran on a CPU" in prediction.warnings[0]
    assert main(["predict", str(path), str(trace), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["warnings"] == prediction.warnings
    assert f"itercast predict: warning: {prediction.warnings[0]}" in captured.err


def test_the_device_kind_warning_names_both_kinds():
    from itercast.predict.predictor import device_kind_warning

    assert device_kind_warning("cpu", "cpu:Xeon:1t") is None
    assert device_kind_warning("gpu", "cuda:NVIDIA H200") is None
    assert "predict from a GPU run" in device_kind_warning("cpu", "cuda:NVIDIA H200")
    assert "ran on a GPU" in device_kind_warning("gpu", "cpu:Xeon:1t")


@pytest.mark.parametrize("flag,folds", [([], 2), (["--calibration-folds", "0"], None)])
def test_train_cli_calibrates_unless_told(tiny_collection, tmp_path, capsys, flag, folds):
    model = tmp_path / "m.itc"
    assert main(["train", str(tiny_collection), "-o", str(model), "--rounds", "10", *flag]) == 0
    printed = capsys.readouterr().out
    assert (f"calibrated on held-out predictions ({folds} groups" in printed) == (folds is not None)
    loaded = next(iter(Predictor.load(model).models.values()))
    assert (f"the hybrid weighs the trace's measured times {loaded.anchor_weight:.2f}" in printed) == (folds is not None)
    assert loaded.summary["calibration_folds"] == folds
    assert (loaded.calibration.coefficients != [0.0, 0.0]) == (folds is not None)


def test_reconciliation_fits_relative_error():
    from itercast.predict.reconciliation import Reconciliation

    profiled = np.array([10.0, 100.0, 1000.0, 20.0])
    ops = np.array([100.0, 300.0, 900.0, 200.0])
    unprofiled = 0.9 * profiled - 0.01 * ops  # exact: the fit must recover it
    fit = Reconciliation.fit(profiled, np.zeros(4), ops, unprofiled, separate_gaps=False)
    assert (fit.scale, fit.gap_scale, fit.per_op_ms) == (pytest.approx(0.9), pytest.approx(0.9), pytest.approx(-0.01))
    np.testing.assert_allclose(fit.apply(profiled, 0, ops), unprofiled)


def test_reconciliation_scales_gaps_apart_from_durations():
    from itercast.predict.reconciliation import Reconciliation

    rng = np.random.default_rng(1)
    durations, gaps, ops = rng.uniform(5, 500, 30), rng.uniform(1, 100, 30), rng.uniform(50, 2000, 30)
    unprofiled = 0.98 * durations + 0.55 * gaps - 0.0004 * ops
    fit = Reconciliation.fit(durations, gaps, ops, unprofiled)
    assert (fit.scale, fit.gap_scale, fit.per_op_ms) == (pytest.approx(0.98, rel=1e-4), pytest.approx(0.55, rel=1e-4),
                                                         pytest.approx(-0.0004, rel=1e-3))
    tied = Reconciliation.fit(durations, gaps, ops, unprofiled, separate_gaps=False)
    assert tied.scale == tied.gap_scale
    assert np.mean(np.abs(tied.apply(durations, gaps, ops) / unprofiled - 1)) > 0.01


def test_one_odd_configuration_does_not_rule_the_reconciliation():
    from itercast.predict.reconciliation import Reconciliation

    rng = np.random.default_rng(0)
    profiled = rng.uniform(5, 500, 40)
    ops = rng.uniform(50, 2000, 40)
    unprofiled = 0.95 * profiled - 0.005 * ops
    profiled[0] = 15 * unprofiled[0]  # a profiled run 15x slower than its un-profiled steps
    fit = Reconciliation.fit(profiled, np.zeros(40), ops, unprofiled, separate_gaps=False)
    assert (fit.scale, fit.per_op_ms) == (pytest.approx(0.95, rel=1e-3), pytest.approx(-0.005, rel=1e-2))


def test_the_reconciliation_counts_every_recorded_op_nested_ones_too(dataset):
    from itercast.predict.dataset import _iteration_to_keep, sample_from_trace
    from itercast.predict.rows import recorded_ops
    from itercast.timeline import read_timeline

    path = dataset.configs[0].trace_path
    timeline = read_timeline(path)
    it = timeline.iterations[_iteration_to_keep(timeline)]
    nested = np.asarray(timeline.ops["nested_ops"])[it.ops]
    expected = len(nested) + int(nested.sum())
    assert expected > len(nested)  # real traces nest ops
    assert recorded_ops(sample_from_trace(path).windows) == expected


def test_the_reconciliation_keeps_a_positive_scale_and_a_cost_per_op():
    from itercast.predict.reconciliation import Reconciliation

    # A few noisy tiny configurations where the step follows the op count, not the profiled time:
    # unbounded, the exact fit is scale 0 and a positive 0.01 ms per op.
    profiled = np.array([2.2, 2.1, 2.0, 1.9, 1.8, 1.7])
    ops = np.array([100.0, 120, 140, 160, 180, 200])
    unprofiled = ops / 100
    fit = Reconciliation.fit(profiled, np.zeros(6), ops, unprofiled, separate_gaps=False)
    assert fit.scale > 0.5 and fit.per_op_ms <= 0
    split = Reconciliation.fit(profiled * 0.8, profiled * 0.2, ops, unprofiled)
    assert split.scale > 0 and split.gap_scale > 0 and split.per_op_ms <= 0


def test_samples_the_reconciliation_cannot_explain_are_flagged_never_more_than_half():
    from itercast.predict.reconciliation import Reconciliation, explained_by_reconciliation

    rng = np.random.default_rng(3)
    durations, gaps, ops = rng.uniform(5, 500, 20), rng.uniform(1, 100, 20), rng.uniform(50, 2000, 20)
    reconciliation = Reconciliation(scale=0.98, per_op_ms=-0.0004, gap_scale=0.55)
    unprofiled = reconciliation.apply(durations, gaps, ops) * rng.uniform(0.9, 1.1, 20)
    unprofiled[[4, 11]] /= 2.0  # profiled runs twice as slow as their un-profiled steps explain
    unprofiled[7] *= 2.0  # ... and one faster
    explained = explained_by_reconciliation(reconciliation, durations, gaps, ops, unprofiled)
    assert np.flatnonzero(~explained).tolist() == [4, 7, 11]
    assert explained_by_reconciliation(reconciliation, durations, gaps, ops, unprofiled, max_unexplained=1.5).all()
    # a reconciliation that explains fewer than half of them judges none
    assert explained_by_reconciliation(reconciliation, durations, gaps, ops, unprofiled / 3).all()


@pytest.fixture(scope="module")
def one_unexplained(dataset):
    """(samples, the odd one's config): four copies of each tiny sample, labelled by one reconciliation law
    to 5% (the tiny collection's own labels are timings of microsecond steps on whatever machine runs the
    tests, and a fit to the least absolute deviation needs more than a dozen samples to tell one outlier),
    then one whose profiled run took 5x what its un-profiled step explains."""
    from dataclasses import replace

    from itercast.predict.dataset import measured_op_parts
    from itercast.predict.dataset import featurise
    from itercast.predict.hardware_model import iteration_terms
    from itercast.predict.reconciliation import Reconciliation

    tiny = featurise(dataset.configs)
    durations, gaps = measured_op_parts(tiny)
    _, recorded = iteration_terms(tiny)
    rest = gaps + np.array([s.head_tail_ns for s in tiny])
    law = Reconciliation(scale=0.98, per_op_ms=-1e-4, gap_scale=0.55).apply(durations / 1e6, rest / 1e6, recorded)
    noise = np.random.default_rng(0).uniform(0.95, 1.05, (4, len(tiny)))
    samples = [replace(s, config=replace(s.config, config_id=f"{s.config.config_id}#{copy}", step_ms=float(ms * n)))
               for copy in range(4) for s, ms, n in zip(tiny, law, noise[copy])]
    odd = samples[2].config
    samples[2] = replace(samples[2], config=replace(odd, step_ms=odd.step_ms / 5))
    return samples, samples[2].config


def test_traces_the_reconciliation_cannot_explain_are_not_learnt_from(one_unexplained):
    """The odd configuration is named in the summary and left out of the op models' training;
    max_unexplained=None keeps every sample."""
    from itercast.predict.lgbm import WindowLGBM
    from itercast.predict.hardware_model import fit_hardware_model

    samples, odd = one_unexplained
    trained_on = []

    class Recording(WindowLGBM):
        def fit(self, samples, client=None):
            trained_on[:] = [s.config.config_id for s in samples]
            return super().fit(samples, client)

    fitted = fit_hardware_model("cpu", samples, Recording(rounds=5))
    unexplained = fitted.summary["unexplained_traces"]
    assert unexplained == [odd.config_id] and odd.config_id not in trained_on
    assert sorted(trained_on + unexplained) == sorted(s.config.config_id for s in samples)
    assert fitted.summary["configs"] == len(samples)
    fit_hardware_model("cpu", samples, Recording(rounds=5), max_unexplained=None)
    assert odd.config_id in trained_on and len(trained_on) == len(samples)
    kept_all = Predictor(rounds=5, max_unexplained=None).fit(samples).models[odd.hardware]
    assert kept_all.summary["unexplained_traces"] == []
    assert Predictor(rounds=5).fit(samples).models[odd.hardware].summary["unexplained_traces"] == [odd.config_id]


def test_the_floor_is_the_whole_training_sets_even_the_traces_not_learnt_from(one_unexplained):
    """The odd trace, whose profiled run took 5x what its un-profiled step explains, sets min_share."""
    from itercast.predict.dataset import measured_op_parts
    from itercast.predict.lgbm import WindowLGBM
    from itercast.predict.hardware_model import fit_hardware_model

    samples, odd = one_unexplained
    fitted = fit_hardware_model("cpu", samples, WindowLGBM(rounds=5))
    assert fitted.summary["unexplained_traces"] == [odd.config_id]
    durations, gaps = measured_op_parts(samples)
    measured_profiled_ms = (durations + gaps + np.array([s.head_tail_ns for s in samples])) / 1e6
    shares = np.array([s.config.step_ms for s in samples]) / measured_profiled_ms
    assert shares.argmin() == 2  # the odd one
    assert fitted.reconciliation.min_share == pytest.approx(shares.min())


def test_train_cli_names_the_traces_it_did_not_learn_from(one_unexplained, tiny_collection, tmp_path, capsys):
    import csv

    samples, odd = one_unexplained
    with open(tiny_collection / "manifest.csv", newline="") as handle:
        rows = {row["config_id"]: row for row in csv.DictReader(handle)}
    manifest = tmp_path / "manifest.csv"
    with open(manifest, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(next(iter(rows.values()))))
        writer.writeheader()
        for s in samples:
            original = rows[s.config.config_id.split("#")[0]]
            writer.writerow({**original, "config_id": s.config.config_id, "step_ms": s.config.step_ms,
                             "trace_path": str(tiny_collection / original["trace_path"])})
    assert main(["train", str(manifest), "-o", str(tmp_path / "m.itc"), "--rounds", "5"]) == 0
    out = capsys.readouterr().out
    assert f"not learnt from: 1 traces whose profiled runs the reconciliation misses by over 30%: {odd.config_id}" in out


def test_head_tail_follows_the_iterations_structure(dataset):
    """Head/tail is fitted in log space on the iteration context and op count: a law of that form is
    recovered from real samples whose head/tail is replaced by it, and one odd sample does not move it."""
    from dataclasses import replace

    from itercast.predict.dataset import featurise
    from itercast.predict.hardware_model import iteration_terms
    from itercast.predict.reconciliation import HeadTail
    from itercast.predict.rows import iteration_context, recorded_ops

    samples = featurise(dataset.configs)
    design, recorded = iteration_terms(samples)
    assert design.shape == (len(samples), 5) and len({tuple(row) for row in design}) > 3
    np.testing.assert_array_equal(design[:, 1:4], [iteration_context(s.windows) for s in samples])
    np.testing.assert_array_equal(design[:, 4], np.log1p([s.op_count for s in samples]))
    assert list(recorded) == [recorded_ops(s.windows) for s in samples]
    law = np.array([-9.0, 0.2, 0.1, 0.15, 0.3])
    labelled = [replace(s, head_tail_ns=float(np.exp(row @ law) * 1e6)) for s, row in zip(samples, design)]
    labelled[0] = replace(labelled[0], head_tail_ns=labelled[0].head_tail_ns * 50)
    fit = HeadTail.fit(iteration_terms(labelled)[0], [s.head_tail_ns for s in labelled])
    np.testing.assert_allclose(fit.predict_ns(design[1:]), [s.head_tail_ns for s in labelled[1:]], rtol=1e-3)


@pytest.mark.parametrize("flag,predict_rows", [([], "central"), (["--predict-rows", "central"], "central"),
                                               (["--predict-rows", "all"], "all")])
def test_train_cli_scores_each_op_in_its_central_window_unless_told(tiny_collection, dataset, tmp_path, capsys,
                                                                    flag, predict_rows):
    model = tmp_path / "m.itc"
    assert main(["train", str(tiny_collection), "-o", str(model), "--rounds", "20", *flag]) == 0
    loaded = Predictor.load(model)
    assert loaded.predict_rows == predict_rows
    assert {m.window_model.predict_rows for m in loaded.models.values()} == {predict_rows}
    assert loaded.predict(dataset.configs[0].trace_path).predicted_ms > 0


@pytest.mark.parametrize("flag,linear", [([], True), (["--constant-leaves"], False)])
def test_train_cli_fits_linear_leaves_unless_told(tiny_collection, dataset, tmp_path, flag, linear):
    model = tmp_path / "m.itc"
    assert main(["train", str(tiny_collection), "-o", str(model), "--rounds", "20", *flag]) == 0
    loaded = Predictor.load(model)
    boosters = [m.window_model.boosters for m in loaded.models.values()]
    assert [b["duration"]._forest.has_linear for b in boosters] == [linear] * len(boosters)
    assert not any(b["gap"]._forest.has_linear for b in boosters)
    assert loaded.predict(dataset.configs[0].trace_path).predicted_ms > 0


def leaves_per_tree(booster) -> list[int]:
    return [int(line.split("=")[1]) for line in booster.model_text.splitlines() if line.startswith("num_leaves=")]


def test_default_boosters_linear_durations_and_a_smaller_gap_booster(dataset, tmp_path):
    """By default the duration booster has linear leaves and four fifths of the rounds, the gap booster
    constant ones, 31 leaves and half the rounds; label_params sets either booster."""
    predictor = Predictor(rounds=20, params={"min_data_in_leaf": 2}).fit(dataset)
    model = predictor.models[predictor.hardware[0]].window_model
    assert model.boosters["duration"].num_trees == 16 and model.boosters["gap"].num_trees == 10
    assert max(leaves_per_tree(model.boosters["gap"])) <= 31 < max(leaves_per_tree(model.boosters["duration"]))
    assert model.boosters["duration"]._forest.has_linear and not model.boosters["gap"]._forest.has_linear
    predictor.save(tmp_path / "m.itc")
    loaded = Predictor.load(tmp_path / "m.itc").models[predictor.hardware[0]].window_model
    assert loaded.label_params == model.label_params == {
        "duration": {"linear_tree": True, "linear_lambda": 30.0, "learning_rate": 0.125, "rounds": 16},
        "gap": {"num_leaves": 31, "learning_rate": 0.2, "rounds": 10}}
    assert loaded.boosters["duration"]._forest.has_linear
    same = Predictor(rounds=20, params={"min_data_in_leaf": 2}, label_params={}).fit(dataset)
    plain = same.models[predictor.hardware[0]].window_model.boosters
    assert plain["gap"].num_trees == 20 and not plain["duration"]._forest.has_linear
    constant = Predictor(rounds=20, params={"min_data_in_leaf": 2}, linear_leaves=False).fit(dataset)
    boosters = constant.models[predictor.hardware[0]].window_model.boosters
    assert not boosters["duration"]._forest.has_linear and boosters["duration"].num_trees == 20
    assert boosters["gap"].num_trees == 10


def test_a_version_2_file_scales_gaps_as_durations(predictor, dataset, tmp_path):
    """Version 2 files had one reconciliation scale: they load with the gap scale equal to it."""
    from dataclasses import replace

    from itercast.predict import featurise
    from itercast.predict.hardware_model import iteration_terms

    path = tmp_path / "v2.itc"
    predictor.save(path)
    document = json.loads(path.read_text())
    assert document["version"] == 8
    document["version"] = 2
    for entry in document["hardware"].values():
        del entry["reconciliation"]["gap_scale"]
        del entry["reconciliation"]["min_share"]
        del entry["window_model"]["roofline_bytes_from_output"]
        del entry["calibration"]
        del entry["window_model"]["linear_bounds"]
    path.write_text(json.dumps(document))
    key = predictor.hardware[0]
    loaded = Predictor.load(path).models[key]
    fitted = predictor.models[key].reconciliation
    assert fitted.gap_scale != fitted.scale
    assert loaded.reconciliation == replace(fitted, gap_scale=fitted.scale, min_share=1 / 15)
    samples = featurise(dataset.configs[:3])
    profiled, unprofiled = loaded.predict_samples(samples)
    expected = fitted.scale * profiled + fitted.per_op_ms * iteration_terms(samples)[1]
    np.testing.assert_allclose(unprofiled, np.maximum(expected, profiled / 15), rtol=1e-12)  # the old files' floor


def test_the_reconciliation_records_the_smallest_unprofiled_share_of_a_profiled_step():
    from itercast.predict.reconciliation import Reconciliation

    durations, rest = np.array([8.0, 4.0, 30.0, 2.0]), np.array([2.0, 1.0, 10.0, 1.0])
    unprofiled = np.array([9.0, 4.5, 16.0, 2.9])  # the third ran 2.5x slower under the profiler
    fitted = Reconciliation.fit(durations, rest, np.array([100.0, 50, 400, 30]), unprofiled)
    assert fitted.min_share == pytest.approx(0.4)
    np.testing.assert_array_equal(fitted.floor([-2.5, 3.0, 1.0], [10.0, 5.0, 2.0]), [4.0, 3.0, 1.0])


def test_no_prediction_falls_below_the_floor_however_many_ops_the_trace_has(predictor, dataset):
    """A reconciliation whose per-op term outweighs the predicted op times (a long trace of ops predicted
    short) gives min_share of the profiled prediction, positive, not a negative time."""
    from dataclasses import replace

    from itercast.predict import featurise

    key = predictor.hardware[0]
    model = predictor.models[key]
    samples = featurise(dataset.configs[:3])
    profiled, _, _ = model.predict_parts(samples)
    assert (model.predict_samples(samples)[1] >= model.reconciliation.min_share * profiled).all()
    heavy = replace(model, reconciliation=replace(model.reconciliation, per_op_ms=-1e3))
    assert (heavy.predict_parts(samples)[1] < 0).all()
    np.testing.assert_allclose(heavy.predict_samples(samples)[1], model.reconciliation.min_share * profiled)
    assert 0 < model.reconciliation.min_share < 1


def test_a_version_4_file_predicts_uncalibrated(predictor, dataset, tmp_path):
    """Before version 5 there was no calibration: such files predict the reconciled time as they did."""
    from itercast.predict import featurise

    path = tmp_path / "v4.itc"
    predictor.save(path)
    document = json.loads(path.read_text())
    key = predictor.hardware[0]
    document["version"] = 4
    del document["hardware"][key]["calibration"]
    del document["hardware"][key]["reconciliation"]["min_share"]
    del document["hardware"][key]["window_model"]["linear_bounds"]
    path.write_text(json.dumps(document))
    loaded = Predictor.load(path).models[key]
    assert loaded.calibration.coefficients == [0.0, 0.0]
    assert predictor.models[key].calibration.coefficients != [0.0, 0.0]
    samples = featurise(dataset.configs[:3])
    profiled, reconciled, _ = loaded.predict_parts(samples)
    # floored at the default share, as every file before version 7 (the tiny collection's timing labels,
    # taken on the spot, can put a reconciled time under it on a busy machine)
    np.testing.assert_array_equal(loaded.predict_samples(samples)[1], loaded.reconciliation.floor(reconciled, profiled))


def test_linear_leaves_read_features_within_their_training_range(predictor, dataset, tmp_path):
    """The duration booster's linear leaves are bounded by its training rows' range, saved with the model;
    a version 5 file, from before the bounds, loads without them."""
    from itercast.predict import featurise
    from itercast.predict.rows import one_pair_per_op, rows_of

    key = predictor.hardware[0]
    model = predictor.models[key].window_model
    duration, gap = model.boosters["duration"], model.boosters["gap"]
    assert duration.linear_bounds is not None and gap.linear_bounds is None  # the gap booster's leaves are constant
    kept = [s for s in featurise(dataset.configs) if s.config.config_id not in
            predictor.models[key].summary["unexplained_traces"]]
    x = rows_of(kept, lambda w: one_pair_per_op(w, np.random.default_rng(model.seed))).x
    np.testing.assert_array_equal(duration.linear_bounds[0], x.min(axis=0))
    np.testing.assert_array_equal(duration.linear_bounds[1], x.max(axis=0))
    path = tmp_path / "m.itc"
    predictor.save(path)
    loaded = Predictor.load(path).models[key].window_model.boosters["duration"]
    assert loaded.linear_bounds == duration.linear_bounds
    document = json.loads(path.read_text())
    document["version"] = 5
    del document["hardware"][key]["window_model"]["linear_bounds"]
    path.write_text(json.dumps(document))
    old = Predictor.load(path).models[key].window_model.boosters["duration"]
    assert old.linear_bounds is None
    far = 3 * x[:200]  # beyond the training range: bounded and unbounded leaves part
    assert not np.allclose(old.predict(far), duration.predict(far))
    np.testing.assert_array_equal(old.predict(far), NativeBooster(duration.model_text).predict(far))


def test_the_calibration_learns_from_held_out_architectures(predictor, dataset):
    """By default a model's un-profiled prediction is its reconciled one times exp(a + b log ops), a and b
    fitted on predictions of each training architecture by models trained on the others."""
    from itercast.predict import featurise
    from itercast.predict.hardware_model import CALIBRATION_FOLDS, iteration_terms

    model = predictor.models[predictor.hardware[0]]
    assert model.summary["calibration_folds"] == CALIBRATION_FOLDS == 2
    a, b = model.calibration.coefficients
    assert (a, b) != (0.0, 0.0) and np.isfinite([a, b]).all()
    samples = featurise(dataset.configs[:4])
    profiled, reconciled, ops = model.predict_parts(samples)
    np.testing.assert_array_equal(ops, iteration_terms(samples)[1])
    profiled_again, unprofiled = model.predict_samples(samples)
    np.testing.assert_array_equal(profiled_again, profiled)  # the profiled time is not calibrated
    calibrated = reconciled * np.exp(a + b * np.log(ops))  # then floored, as every un-profiled prediction
    np.testing.assert_allclose(unprofiled, model.reconciliation.floor(calibrated, profiled), rtol=1e-12)


def test_the_calibration_is_optional_and_needs_two_architectures_per_fold(dataset):
    from itercast.predict import featurise
    from itercast.predict.lgbm import WindowLGBM
    from itercast.predict.hardware_model import fit_calibration, fit_hardware_model
    from itercast.predict.reconciliation import Calibration

    plain = Predictor(rounds=5, calibration_folds=None).fit(dataset).models
    model = next(iter(plain.values()))
    assert model.calibration.coefficients == [0.0, 0.0] and model.summary["calibration_folds"] is None
    samples = featurise(dataset.configs)
    architectures = len({s.config.model for s in samples})
    assert architectures == 6
    assert fit_calibration(model, samples, WindowLGBM(rounds=5), folds=4) == (Calibration(), {}, model)
    calibration, intervals, _ = fit_calibration(model, samples, WindowLGBM(rounds=5), folds=3)
    assert calibration.coefficients != [0.0, 0.0]
    assert {"hybrid", "structure"} <= set(intervals)
    assert all(low < high for low, high in intervals.values())
    fitted = fit_hardware_model("cpu", samples, WindowLGBM(rounds=5), calibration_folds=4)
    assert fitted.calibration.coefficients == [0.0, 0.0] and fitted.summary["calibration_folds"] is None


def test_calibration_fit_recovers_a_power_of_the_op_count():
    from itercast.predict.reconciliation import Calibration

    rng = np.random.default_rng(0)
    ops = rng.integers(20, 20_000, size=200)
    predicted = rng.uniform(1, 500, size=200)
    truth = predicted * np.exp(-0.1 + 0.015 * np.log(ops))
    truth[:10] *= 3  # outliers move a least-absolute-deviation fit little
    calibration = Calibration.fit(predicted, ops, truth)
    np.testing.assert_allclose(calibration.coefficients, [-0.1, 0.015], atol=1e-6)
    np.testing.assert_allclose(calibration.apply(predicted[10:], ops[10:]), truth[10:], rtol=1e-6)
    assert Calibration().apply([2.0], [100]) == pytest.approx([2.0])
    # a prediction <= 0 (a weak model's reconciled time) is left out of the fit; too few left: identity
    with_negative = Calibration.fit(np.r_[-1.0, 0.0, predicted[10:]], np.r_[100, 100, ops[10:]],
                                    np.r_[5.0, 5.0, truth[10:]])
    np.testing.assert_allclose(with_negative.coefficients, [-0.1, 0.015], atol=1e-6)
    assert Calibration.fit([-1.0, 2.0, 3.0, 4.0], [10, 20, 30, 40], [1.0, 2.0, 3.0, 4.0]).coefficients == [0.0, 0.0]


def test_a_version_3_file_reads_its_prior_as_it_was_fitted(predictor, tmp_path):
    """Before version 4 the roofline prior read the bytes column alone; such files keep doing so."""
    path = tmp_path / "v3.itc"
    predictor.save(path)
    document = json.loads(path.read_text())
    key = predictor.hardware[0]
    assert document["hardware"][key]["window_model"]["roofline_bytes_from_output"] is True
    document["version"] = 3
    del document["hardware"][key]["window_model"]["roofline_bytes_from_output"]
    path.write_text(json.dumps(document))
    old = Predictor.load(path).models[key].window_model.roofline
    assert not old.bytes_from_output and predictor.models[key].window_model.roofline.bytes_from_output
    np.testing.assert_array_equal(old.coefficients, predictor.models[key].window_model.roofline.coefficients)


def test_a_model_file_of_another_version_or_with_a_missing_field_fails_clearly(predictor, tmp_path):
    """Version 1 files had rows without the iteration context and one head/tail for every iteration:
    their boosters read other columns, so they must be retrained, not loaded."""
    path = tmp_path / "old.itc"
    predictor.save(path)
    document = json.loads(path.read_text())
    document["version"] = 1
    path.write_text(json.dumps(document))
    with pytest.raises(ItercastError, match="version 1, this itercast reads versions 2, 3, 4, 5, 6, 7, 8: retrain it"):
        Predictor.load(path)
    document["version"] = 3
    del next(iter(document["hardware"].values()))["window_model"]["time_weight"]
    path.write_text(json.dumps(document))
    with pytest.raises(ItercastError, match="malformed entry.*time_weight"):
        Predictor.load(path)


@pytest.mark.parametrize("flag,divided", [([], True), (["--no-machine-speed"], False)])
def test_train_cli_divides_by_the_machine_speed_unless_told(tmp_path, capsys, flag, divided):
    from tiny_collection import slowed_copies

    collection = tmp_path / "collection"
    collection.mkdir()
    slowed_copies(collection)
    assert main(["train", str(collection), "-o", str(tmp_path / "m.itc"), "--rounds", "5", "--json", *flag]) == 0
    (summary,) = json.loads(capsys.readouterr().out)["hardware"].values()
    low, high = summary["slowdown_range"]
    assert low == 1.0 and (high == pytest.approx(1.2) if divided else high == 1.0)


def test_every_older_readable_version_has_one_upgrade_step_to_the_next():
    from itercast.predict.model_file import MODEL_VERSION, READABLE_VERSIONS, UPGRADES

    assert sorted(UPGRADES) == list(range(min(READABLE_VERSIONS), MODEL_VERSION))
    assert READABLE_VERSIONS == (*sorted(UPGRADES), MODEL_VERSION)


def test_an_upgraded_entry_has_every_field_the_current_version_writes(predictor, tmp_path):
    from itercast.predict.model_file import MODEL_VERSION, upgrade

    path = tmp_path / "current.itc"
    predictor.save(path)
    current = next(iter(json.loads(path.read_text())["hardware"].values()))
    oldest = json.loads(json.dumps(current))
    for fields, name in ((oldest["reconciliation"], "gap_scale"), (oldest["reconciliation"], "min_share"),
                         (oldest["window_model"], "roofline_bytes_from_output"), (oldest, "calibration"),
                         (oldest["window_model"], "linear_bounds")):
        del fields[name]
    upgraded = upgrade(oldest, 2)
    assert set(upgraded) == set(current)
    assert set(upgraded["reconciliation"]) == set(current["reconciliation"])
    assert set(upgraded["window_model"]) == set(current["window_model"])
    assert upgrade(json.loads(json.dumps(current)), MODEL_VERSION) == current
