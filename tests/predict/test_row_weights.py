import numpy as np
import pytest

from itercast.predict.lgbm import DEFAULT_SAMPLE_EXPONENT, DEFAULT_TIME_WEIGHT, WindowLGBM, row_weights


def test_no_time_weight_and_sample_exponent_one_mean_all_rows_alike():
    assert row_weights(np.array([1.0, 1e6, 5.0]), np.array([0, 0, 1]), 0.0, 1.0) is None


@pytest.mark.parametrize("exponent", [0.0, 0.5, 1.0])
def test_a_sample_of_n_rows_weighs_n_to_the_sample_exponent(exponent):
    duration = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
    sample = np.array([0, 0, 0, 0, 0, 0, 0, 0, 1])  # eight rows and one
    weights = row_weights(duration, sample, 0.0, exponent)
    if exponent == 1.0:
        assert weights is None
        return
    assert weights.mean() == pytest.approx(1.0)
    assert weights[:8].sum() / weights[8] == pytest.approx(8 ** exponent)
    np.testing.assert_allclose(weights[:8], weights[0])  # no time weight: alike within a sample


def test_time_weights_follow_each_ops_share_of_its_iteration():
    # Sample 0: one op takes 90% of the time; sample 1: two ops, equal, ten times as long in all.
    duration = np.array([90.0, 5.0, 5.0, 1000.0, 1000.0])
    sample = np.array([0, 0, 0, 1, 1])
    weights = row_weights(duration, sample, 1.0, sample_exponent=1.0)
    assert weights.mean() == pytest.approx(1.0)
    # All time-share: within a sample, proportional to duration; a sample weighs by its rows, not its time.
    np.testing.assert_allclose(weights[:3] / weights[0], [1.0, 5 / 90, 5 / 90])
    np.testing.assert_allclose(weights[:3].sum() / weights[3:].sum(), 3 / 2)
    half = row_weights(duration, sample, 0.5, sample_exponent=1.0)
    np.testing.assert_allclose(half, 0.5 + 0.5 * weights)  # both parts have mean 1
    assert half.min() > 0.4  # a tiny op keeps half its weight


def test_time_weights_are_bounded_and_survive_an_iteration_without_time():
    weights = row_weights(np.array([0.0, 0.0, 3.0]), np.array([0, 0, 1]), 0.5)
    assert np.isfinite(weights).all() and (weights > 0).all()
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="time_weight"):
            row_weights(np.ones(2), np.zeros(2, dtype=int), bad)
        with pytest.raises(ValueError, match="time_weight"):
            WindowLGBM(time_weight=bad)
        with pytest.raises(ValueError, match="sample_exponent"):
            row_weights(np.ones(2), np.zeros(2, dtype=int), 0.5, bad)
        with pytest.raises(ValueError, match="sample_exponent"):
            WindowLGBM(sample_exponent=bad)


def test_both_boosters_weigh_samples_and_only_durations_weigh_ops_by_time(tiny_collection, monkeypatch):
    lightgbm = pytest.importorskip("lightgbm")
    from itercast.predict import Dataset, featurise

    samples = featurise(Dataset.from_manifest(tiny_collection).configs)
    seen = []
    real = lightgbm.Dataset

    def recording(x, target, **kwargs):
        seen.append(kwargs.get("weight"))
        return real(x, target, **kwargs)

    monkeypatch.setattr(lightgbm, "Dataset", recording)
    model = WindowLGBM(rounds=5).fit(samples)
    assert model.time_weight == DEFAULT_TIME_WEIGHT
    duration_rows, gap_rows = seen
    rows = model._training_rows(samples)
    np.testing.assert_allclose(duration_rows, row_weights(rows.duration, rows.sample, DEFAULT_TIME_WEIGHT,
                                                               DEFAULT_SAMPLE_EXPONENT))
    np.testing.assert_allclose(gap_rows, row_weights(rows.duration, rows.sample, 0.0, DEFAULT_SAMPLE_EXPONENT))
    assert not np.allclose(gap_rows, duration_rows)
    again = WindowLGBM.from_dict(model.to_dict())
    assert (again.time_weight, again.sample_exponent) == (DEFAULT_TIME_WEIGHT, DEFAULT_SAMPLE_EXPONENT)
