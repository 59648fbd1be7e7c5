"""Every model of the harness fits and predicts; the ETS reference ignores padding."""

import numpy as np
import pytest

from itercast.predict.baselines import FlopsBytesLinear, OpBased, TrainingMedian, measured_op_time
from itercast.predict.ets import ETSReference, masked_l1, stacked_windows
from itercast.predict.evaluate import MODEL_NAMES, Settings, new_model
from itercast.predict.window_model import WINDOW_MODELS
from itercast.predict.rows import F
from tiny_collection import tiny_samples


@pytest.fixture(scope="module")
def samples():
    return tiny_samples()


@pytest.fixture(scope="module")
def ets(samples):
    return ETSReference(max_seconds=30, max_epochs=1, seed=0).fit(samples[:8])


# the models that predict op times (trace-time predicts whole iterations from the trace)
OP_MODELS = [name for name in MODEL_NAMES if not WINDOW_MODELS[name].iteration_level]


@pytest.mark.parametrize("name", OP_MODELS)
def test_each_model_predicts_held_out_op_times_within_tenfold_of_the_measured(samples, name):
    """Generous enough for the untuned baselines on a tiny collection; a wrong unit, target transform or
    sample order is off by far more."""
    model = new_model(name, Settings(rounds=5, ets_seconds=5))
    if name == "ets":
        model.max_epochs = 1
    ratio = model.fit(samples[:8]).predict_op_time(samples[8:]) / measured_op_time(samples[8:])
    assert np.all((ratio > 0.1) & (ratio < 10)), ratio


def test_training_median_predicts_the_median_training_op_time(samples):
    model = TrainingMedian().fit(samples)
    assert model.predict_op_time(samples[:2]) == pytest.approx([np.median(measured_op_time(samples))] * 2)


def test_measured_op_time_counts_each_op_once(samples):
    sample = samples[0]
    windows = sample.windows
    per_op = {}
    for w, (_, start, count) in enumerate(windows.index):
        for p in range(count):
            per_op[start + p] = windows.y[w, p].sum()
    assert len(per_op) == sample.op_count
    assert measured_op_time([sample])[0] == pytest.approx(sum(per_op.values()))


def test_linear_model_recovers_an_exact_linear_relation(samples, monkeypatch):
    from itercast.predict import baselines

    totals = baselines.iteration_totals(samples)
    exact = totals @ np.array([2e-3, 0.0, 5e3])
    monkeypatch.setattr(baselines, "measured_op_time", lambda s: exact[: len(s)])
    model = FlopsBytesLinear().fit(samples)
    assert model.predict_op_time(samples) == pytest.approx(exact, rel=1e-6)


def _replace_windows(sample, x=None, y=None):
    windows = sample.windows
    changed = type(windows)(windows.x if x is None else x, windows.y if y is None else y, windows.y_sum,
                            windows.index, windows.width, windows.stride, windows.columns)
    return type(sample)(sample.config, changed, sample.op_count, sample.head_tail_ns, sample.profiled_ns)


def test_opbased_ignores_the_window_context(samples):
    """Random window aggregates change nothing for OpBased: it sees each op's own features only."""
    model = OpBased(rounds=5).fit(samples)
    sample = samples[0]
    x = sample.windows.x.copy()
    aggregates = x[:, sample.windows.width * (F + 1):]
    aggregates[:] = np.random.default_rng(0).normal(size=aggregates.shape)
    assert model.predict_op_time([_replace_windows(sample, x=x)]) == pytest.approx(model.predict_op_time([sample]))


def _with_noisy_padding(sample, rng):
    """The sample with random features and labels written into its padding positions."""
    windows = sample.windows
    x, y = windows.x.copy(), windows.y.copy()
    padding = ~windows.mask
    blocks = x[:, : windows.width * (F + 1)].reshape(len(x), windows.width, F + 1)
    blocks[padding] = rng.normal(size=(padding.sum(), F + 1)).astype(np.float32)
    y[padding] = rng.uniform(1e3, 1e9, size=(padding.sum(), 2))
    return _replace_windows(sample, x=x, y=y)


def test_ets_padding_reaches_neither_output_nor_loss(samples, ets):
    import torch

    rng = np.random.default_rng(0)
    padded = [s for s in samples if not s.windows.mask.all()]
    assert padded, "the tiny traces end in short windows"
    noisy = [_with_noisy_padding(s, rng) for s in padded]
    assert ets.predict_op_time(noisy) == pytest.approx(ets.predict_op_time(padded), rel=1e-5)

    (blocks, labels, lengths), (noisy_blocks, noisy_labels, _) = stacked_windows(padded), stacked_windows(noisy)
    outputs = ets.window_outputs(blocks, lengths)
    assert np.all(outputs[np.arange(blocks.shape[1])[None, :] >= lengths[:, None]] == 0)
    n = torch.from_numpy(lengths)
    assert masked_l1(torch.from_numpy(outputs), torch.from_numpy(labels), n).item() == pytest.approx(
        masked_l1(torch.from_numpy(outputs), torch.from_numpy(noisy_labels), n).item())
    assert np.allclose(ets.window_outputs(noisy_blocks, lengths), outputs, rtol=1e-5)


def test_ets_stops_at_the_first_batch_that_reaches_its_epoch_budget(samples):
    """Epoch one is every window (its last batch short); epoch two stops once half of it is seen."""
    windows, batch = len(stacked_windows(samples[:8])[0]), 8
    ets = ETSReference(max_seconds=30, max_epochs=1.5, batch_size=batch, seed=0).fit(samples[:8])
    batches_of_the_second_epoch = -(-windows // (2 * batch))
    assert ets.epochs_done == pytest.approx((windows + batches_of_the_second_epoch * batch) / windows)


def test_oracle_diagnostic_returns_the_measured_op_time(samples):
    oracle = new_model("oracle", Settings())
    assert oracle.fit(samples[:2]).predict_op_time(samples) == pytest.approx(measured_op_time(samples))


@pytest.mark.parametrize("name,predict_rows", [("lightgbm", "central"), ("lightgbm-central", "central"),
                                               ("lightgbm-all", "all")])
def test_lightgbm_variants_differ_only_in_the_rows_they_score(samples, name, predict_rows):
    model = new_model(name, Settings(rounds=5))
    assert model.name == name and model.predict_rows == predict_rows
    assert model.label_params == new_model("lightgbm", Settings(rounds=5)).label_params
    assert np.all(model.fit(samples).predict_op_time(samples) > 0)


def test_lightgbm_constant_differs_only_in_its_duration_leaves(samples):
    model, default = new_model("lightgbm-constant", Settings(rounds=5)), new_model("lightgbm", Settings(rounds=5))
    assert model.name == "lightgbm-constant" and model.predict_rows == default.predict_rows
    assert model.label_params == {"gap": default.label_params["gap"]}
    model.fit(samples)
    assert not model.boosters["duration"]._forest.has_linear
    assert np.all(model.predict_op_time(samples) > 0)


@pytest.mark.parametrize("name", OP_MODELS)
def test_models_that_predict_durations_and_gaps_get_a_gap_scale_of_their_own(samples, name):
    """The reconciliation scales gaps apart from durations for models that predict the two; the others'
    one summed op time gets one scale."""
    from itercast.predict.hardware_model import fit_hardware_model

    model = new_model(name, Settings(rounds=5, ets_seconds=5))
    if name == "ets":
        model.max_epochs = 1
    fitted = fit_hardware_model("cpu", samples[:8], model)
    durations, gaps = fitted.window_model.predict_op_parts(samples[8:])
    np.testing.assert_allclose(durations + gaps, fitted.window_model.predict_op_time(samples[8:]), rtol=1e-9)
    rec = fitted.reconciliation
    if model.separates_gaps:
        assert name in ("lightgbm", "hybrid", "ets") and np.all(gaps > 0) and rec.gap_scale != rec.scale
    else:
        assert not np.any(gaps) and rec.gap_scale == rec.scale


@pytest.mark.parametrize("name", sorted(name for name, kind in WINDOW_MODELS.items() if not kind.iteration_level))
def test_every_registered_model_predicts_gaps_exactly_when_it_says_it_separates_them(samples, name):
    model = new_model(name, Settings(rounds=5, ets_seconds=5))
    if name == "ets":
        model.max_epochs = 1
    assert model.name == name
    durations, gaps = model.fit(samples[:8]).predict_op_parts(samples[8:])
    assert np.all(durations > 0)
    assert np.all(gaps > 0) if model.separates_gaps else not np.any(gaps)
