"""The hybrid pricing: what a model has not seen, priced from the trace's own times, and when it is used."""

import json

import numpy as np
import pytest

from itercast import ItercastError
from itercast.cli import main
from itercast.predict import Dataset, Predictor, featurise
from itercast.predict.hardware_model import iteration_terms
from itercast.predict.hybrid import OpRegimes, measured_each_op, op_features
from itercast.predict.predictor import choose_mode, same_hardware
from itercast.predict.rows import LOG_BYTES
from itercast.timeline import Hardware

from test_predictor import scaled_trace


@pytest.fixture(scope="module")
def dataset(tiny_collection):
    return Dataset.from_manifest(tiny_collection)


@pytest.fixture(scope="module")
def samples(dataset):
    return featurise(dataset.configs)


@pytest.fixture(scope="module")
def no_convolutions(dataset):
    """A predictor that never saw a convolution: trained on the MLP families only."""
    return Predictor(rounds=20, params={"min_data_in_leaf": 2}).fit(
        Dataset([c for c in dataset.configs if c.family != "cnn"], dataset.source))


def cnn_samples(samples):
    return [s for s in samples if s.config.family == "cnn"]


def test_op_regimes_flag_unseen_names_and_sizes_far_outside_training(samples):
    training = [s for s in samples if s.config.family != "cnn"]
    regimes = OpRegimes.fit(training)
    assert "aten::linear" in regimes.vocabulary and "aten::conv2d" not in regimes.vocabulary
    assert not any(regimes.unseen(s).any() for s in training)  # its own training ops are all seen
    cnn = cnn_samples(samples)[0]
    unseen = regimes.unseen(cnn)
    names = np.array(cnn.op_names)
    assert unseen[names == "aten::conv2d"].all()
    assert not unseen[names == "aten::linear"].any()
    # a linear op 1000x the largest training bytes is a regime the model has not seen
    ranges = {name: list(bounds) for name, bounds in regimes.ranges.items()}
    linear_bytes = op_features(cnn)[names == "aten::linear", LOG_BYTES]
    ranges["aten::linear"][3] = float(linear_bytes.min()) - np.log(1000)
    assert OpRegimes(ranges).unseen(cnn)[names == "aten::linear"].all()


def test_hybrid_replaces_exactly_the_unseen_ops_predicted_times_by_measured_ones(no_convolutions, samples):
    model = next(iter(no_convolutions.models.values()))
    model_unanchored = type(model)(**{**model.__dict__, "anchor_weight": 0.0, "anchor_slope": 0.0})
    tested = cnn_samples(samples)
    predicted_each = model.window_model.predict_each_op(tested)
    head_tail_ms = model.head_tail.predict_ns(iteration_terms(tested)[0]) / 1e6
    structure = model_unanchored.price(tested, "structure")
    hybrid = model_unanchored.price(tested, "hybrid")
    for k, sample in enumerate(tested):
        unseen = model.regimes.unseen(sample)
        assert unseen.any() and not unseen.all()
        expected = np.where(unseen[:, None], measured_each_op(sample), predicted_each[k]).sum() / 1e6
        assert hybrid.profiled_ms[k] == pytest.approx(expected + head_tail_ms[k], rel=1e-9)
        assert structure.profiled_ms[k] == pytest.approx(predicted_each[k].sum() / 1e6 + head_tail_ms[k], rel=1e-9)
    assert np.all(hybrid.measured_share > 0) and np.all(hybrid.measured_share == hybrid.unseen_share)
    assert np.all(structure.measured_share == 0) and np.all(structure.unseen_share > 0)


def test_structure_pricing_is_the_structure_only_prediction(no_convolutions, samples):
    model = next(iter(no_convolutions.models.values()))
    priced = model.price(samples, "structure")
    profiled, unprofiled = model.predict_samples(samples)
    np.testing.assert_allclose(priced.profiled_ms, profiled, rtol=1e-9)
    np.testing.assert_allclose(priced.unprofiled_ms, unprofiled, rtol=1e-9)


def test_the_anchor_weight_blends_towards_the_traces_all_measured_estimate(no_convolutions, samples):
    model = next(iter(no_convolutions.models.values()))
    weights = {w: type(model)(**{**model.__dict__, "anchor_weight": w, "anchor_slope": 0.0}) for w in (0.0, 0.5, 1.0)}
    priced = {w: m.price(samples, "hybrid").unprofiled_ms for w, m in weights.items()}
    times = model.op_times(samples).parts("measured")
    head_tail_ms = model.head_tail.predict_ns(iteration_terms(samples)[0]) / 1e6
    durations_ms, rest_ms = times[:, 0] / 1e6, times[:, 1] / 1e6 + head_tail_ms
    all_measured = model.reconciliation.floor(
        model.reconciliation.apply(durations_ms, rest_ms, iteration_terms(samples)[1]), durations_ms + rest_ms)
    np.testing.assert_allclose(priced[1.0], all_measured, rtol=1e-9)
    np.testing.assert_allclose(priced[0.5], np.sqrt(priced[0.0] * priced[1.0]), rtol=1e-9)


def test_a_cpu_trace_is_priced_by_structure_unless_its_hardware_is_named(no_convolutions, dataset):
    path = next(c.trace_path for c in dataset.configs if c.family == "cnn")
    key = no_convolutions.hardware[0]
    plain = no_convolutions.predict(path)
    assert plain.mode == "structure" and "does not say what hardware" in plain.mode_reason
    assert plain.measured_time_fraction == 0.0 and plain.unseen_time_fraction > 0
    named = no_convolutions.predict(path, trace_hardware=key)
    assert named.mode == "hybrid" and named.measured_time_fraction >= named.unseen_time_fraction > 0
    elsewhere = no_convolutions.predict(path, trace_hardware="cpu:another CPU:1t")
    assert elsewhere.mode == "structure" and "not on the target" in elsewhere.mode_reason
    forced = no_convolutions.predict(path, mode="hybrid")
    assert forced.mode == "hybrid" and forced.predicted_ms == pytest.approx(named.predicted_ms, rel=1e-12)
    with pytest.raises(ItercastError, match="unknown mode 'trace'"):
        no_convolutions.predict(path, mode="trace")


def test_the_hybrid_follows_the_traces_measured_times_and_structure_does_not(no_convolutions, dataset):
    path = next(c.trace_path for c in dataset.configs if c.family == "cnn")
    key = no_convolutions.hardware[0]
    plain = no_convolutions.predict(scaled_trace(path, 1), trace_hardware=key)
    slow = no_convolutions.predict(scaled_trace(path, 3), trace_hardware=key)
    assert slow.predicted_ms > 1.5 * plain.predicted_ms
    plain_structure = no_convolutions.predict(scaled_trace(path, 1), mode="structure")
    slow_structure = no_convolutions.predict(scaled_trace(path, 3), mode="structure")
    assert slow_structure.predicted_ms == pytest.approx(plain_structure.predicted_ms, rel=1e-9)


@pytest.mark.parametrize("trace, target, told, expected", [
    (Hardware("NVIDIA H200"), "cuda:NVIDIA H200", None, ("hybrid", "ran on the target")),
    (Hardware("NVIDIA H100"), "cuda:NVIDIA H200", "cuda:NVIDIA H200", ("structure", "H100, not on the target")),
    (Hardware.cpu("unknown", 0), "cuda:NVIDIA H200", "cuda:NVIDIA H200", ("structure", "CPU, the target is a GPU")),
    (Hardware("NVIDIA H200"), "cpu:Xeon:1t", None, ("structure", "GPU, the target is a CPU")),
    (Hardware.cpu("unknown", 0), "cpu:Xeon:1t", None, ("structure", "does not say")),
    (Hardware.cpu("unknown", 0), "cpu:Xeon:1t", "cpu:Xeon:1t", ("hybrid", "as the caller says")),
    (Hardware.cpu("unknown", 0), "cpu:Xeon:1t", "cpu:Xeon:2t", ("structure", "not on the target")),
])
def test_auto_mode_is_hybrid_only_for_a_trace_from_the_target(trace, target, told, expected):
    mode, reason = choose_mode("auto", trace, target, told)
    assert mode == expected[0] and expected[1] in reason


def test_hardware_keys_compare_by_kind_and_name():
    assert same_hardware("gpu:NVIDIA H200", "cuda:NVIDIA H200")
    assert same_hardware("cpu:Intel Xeon:1t", "cpu:intel xeon:1t")
    assert not same_hardware("cpu:Intel Xeon:1t", "cpu:Intel Xeon:2t")
    assert not same_hardware("cpu:NVIDIA H200", "cuda:NVIDIA H200")


def test_the_prediction_says_how_it_was_priced_with_an_interval(tiny_collection, dataset, tmp_path, capsys):
    predictor = Predictor(rounds=20, params={"min_data_in_leaf": 2}).fit(dataset)
    model = next(iter(predictor.models.values()))
    assert {"hybrid", "structure"} <= set(model.intervals)
    path = tmp_path / "model.itc"
    predictor.save(path)
    loaded = Predictor.load(path).models[model.hardware]
    assert loaded.intervals == model.intervals and loaded.anchor_weight == model.anchor_weight
    assert loaded.regimes.ranges.keys() == model.regimes.ranges.keys()
    for name, bounds in model.regimes.ranges.items():
        assert loaded.regimes.ranges[name] == pytest.approx(bounds)
    trace = dataset.configs[0].trace_path
    assert main(["predict", str(path), str(trace), "--json", "--hardware", model.hardware]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["mode"] == "hybrid" and answer["unseen_time_fraction"] == 0.0
    low, high = answer["interval_ms"]
    assert low < high
    assert [low, high] == pytest.approx(answer["predicted_ms"] * np.exp(model.intervals["hybrid"]), rel=1e-9)
    assert main(["predict", str(path), str(trace), "--mode", "structure"]) == 0
    printed = capsys.readouterr().out
    assert "priced by structure: structure asked for" in printed and "80% interval" in printed


def test_a_version_7_file_counts_every_size_of_a_seen_name_as_seen(tiny_collection, dataset, tmp_path):
    predictor = Predictor(rounds=10, params={"min_data_in_leaf": 2}).fit(dataset)
    path = tmp_path / "v7.itc"
    predictor.save(path)
    document = json.loads(path.read_text())
    document["version"] = 7
    for entry in document["hardware"].values():
        for key in ("regimes", "anchor_weight", "anchor_slope", "intervals"):
            del entry[key]
    path.write_text(json.dumps(document))
    model = Predictor.load(path).models[predictor.hardware[0]]
    assert model.intervals == {} and model.regimes.vocabulary == model.vocabulary
    assert all(bounds == [-np.inf, np.inf, -np.inf, np.inf] for bounds in model.regimes.ranges.values())
    prediction = Predictor.load(path).predict(dataset.configs[0].trace_path, mode="hybrid")
    assert prediction.interval_ms is None and prediction.measured_time_fraction == pytest.approx(model.anchor_weight)


def test_the_anchor_is_the_blend_with_the_least_held_out_error():
    from itercast.predict.hardware_model import fit_anchor

    step = np.array([10.0, 20.0, 40.0, 80.0])
    untouched = np.ones(4)  # the profiler took no share of any trace
    assert fit_anchor(step * 1.5, step, untouched, step) == (1.0, 0.0)  # the trace's times exact: trust them
    assert fit_anchor(step, step * 0.5, untouched, step) == (0.0, 0.0)  # the structure exact
    # over- and under-predicting by the same factor: the geometric middle is exact
    assert fit_anchor(step * 2.0, step / 2.0, untouched, step) == (pytest.approx(0.5), 0.0)
    # the trace's times exact where the profiler took nothing, the structure where it took half the step
    share = np.array([1.0, 1.0, 0.5, 0.5])
    measured_only = np.where(share == 1.0, step, step * 3.0)
    weight, slope = fit_anchor(step * 1.5 * np.where(share == 1.0, 1.0, 1 / 1.5), measured_only, share, step)
    assert weight == 1.0 and slope <= -2.0  # 1 + slope * 0.5 <= 0: all structure there


def test_a_predictor_fits_its_anchor_weight_unless_given_one(dataset):
    fitted = Predictor(rounds=10, params={"min_data_in_leaf": 2}).fit(dataset)
    fixed = Predictor(rounds=10, params={"min_data_in_leaf": 2}, anchor_weight=0.3).fit(dataset)
    fitted_model, fixed_model = (next(iter(p.models.values())) for p in (fitted, fixed))
    assert fixed_model.anchor_weight == 0.3
    assert 0.0 <= fitted_model.anchor_weight <= 1.0 and fitted_model.summary["anchor_weight"] == fitted_model.anchor_weight
    assert fitted_model.summary["anchor_slope"] == fitted_model.anchor_slope and fixed_model.anchor_slope == 0.0


def test_a_structure_interval_widens_with_the_share_resting_on_unseen_ops(no_convolutions, samples):
    from dataclasses import replace

    from itercast.predict.hardware_model import UNSEEN_OPS

    model = replace(next(iter(no_convolutions.models.values())),
                    intervals={"structure": [-0.1, 0.1], "hybrid": [-0.1, 0.1], UNSEEN_OPS: [np.log(0.5), np.log(3.0)]})
    structure, hybrid = model.price(samples, "structure"), model.price(samples, "hybrid")
    u = structure.unseen_share
    assert (u > 0).any() and (u == 0).any()
    np.testing.assert_allclose(structure.low_ms, structure.unprofiled_ms * np.exp(-0.1) * (1 - u + 0.5 * u))
    np.testing.assert_allclose(structure.high_ms, structure.unprofiled_ms * np.exp(0.1) * (1 - u + 3.0 * u))
    # the hybrid measured those ops: its interval is the held-out one alone
    np.testing.assert_allclose(hybrid.high_ms / hybrid.unprofiled_ms, np.exp(0.1))
