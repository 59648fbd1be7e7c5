"""Splits keep whole groups out of training; metrics match hand-computed numbers."""

import numpy as np
import pytest

from itercast.errors import ItercastError
from itercast.predict.evaluate import Metrics, split_folds
from tiny_collection import tiny_samples


@pytest.fixture(scope="module")
def samples():
    return tiny_samples()


def test_arch_split_keeps_every_architecture_on_one_side(samples):
    (train, test), = split_folds(samples, "arch", seed=3)
    train_models = {samples[i].config.model for i in train}
    test_models = {samples[i].config.model for i in test}
    assert test_models and not train_models & test_models
    assert sorted(np.concatenate([train, test])) == list(range(len(samples)))


def test_line_split_keeps_a_models_size_variants_with_it(samples):
    from dataclasses import replace

    models = sorted({s.config.model for s in samples})
    line_of = {model: f"line{i // 2}" for i, model in enumerate(models)}  # two models per line
    lined = [replace(s, config=replace(s.config, line=line_of[s.config.model])) for s in samples]
    for train, test in split_folds(lined, "line", folds=2, seed=0):
        assert not {lined[i].config.line for i in train} & {lined[i].config.line for i in test}
        assert len({lined[i].config.model for i in test}) >= 2  # a line goes out whole


def test_a_manifest_without_lines_splits_by_model():
    from itercast.predict.dataset import Dataset

    from tiny_collection import tiny_collection

    dataset = Dataset.from_manifest(tiny_collection())
    assert all(c.line == c.model for c in dataset.configs)


def test_config_split_partitions_the_configurations(samples):
    (train, test), = split_folds(samples, "config", seed=1)
    assert set(train).isdisjoint(test) and len(train) + len(test) == len(samples)
    assert len(test) == round(0.2 * len(samples))


def test_k_folds_test_each_sample_once_and_never_train_on_its_architecture(samples):
    folds = split_folds(samples, "arch", folds=3, seed=0)
    tested = np.concatenate([test for _, test in folds])
    assert sorted(tested) == list(range(len(samples)))
    for train, test in folds:
        assert not {samples[i].config.model for i in train} & {samples[i].config.model for i in test}


def test_splits_are_deterministic_for_a_seed_and_vary_across_seeds(samples):
    def test_sets(seed):
        return [tuple(test) for _, test in split_folds(samples, "arch", folds=2, seed=seed)]

    assert test_sets(5) == test_sets(5)
    assert any(test_sets(seed) != test_sets(5) for seed in range(6, 12))


def test_more_folds_than_groups_is_an_error(samples):
    with pytest.raises(ItercastError, match="folds"):
        split_folds(samples, "arch", folds=100)


def test_metrics_on_hand_computed_numbers():
    metrics = Metrics.of([110.0, 90.0, 200.0], [100.0, 100.0, 100.0])
    assert metrics.mre == pytest.approx((0.1 + 0.1 + 1.0) / 3)
    assert metrics.rmse_ms == pytest.approx(np.sqrt((100 + 100 + 10000) / 3))
    assert metrics.p90 == pytest.approx(0.1 + 0.8 * 0.9)  # linear interpolation between 0.1 and 1.0


def test_scoring_on_a_subset_keeps_only_those_configurations():
    from itercast.predict.evaluate import Evaluation, ModelResult, Settings

    result = ModelResult("m", predicted_ms=[110.0, 90.0, 200.0, 50.0], predicted_profiled_ms=[1.0, 2.0, 3.0, 4.0],
                         measured_ms=[100.0, 100.0, 100.0, 100.0], measured_profiled_ms=[1.0, 1.0, 1.0, 1.0],
                         families=["a", "a", "b", "b"], config_ids=["x-b2", "x-b8", "y-b2", "z-b2"],
                         models=["x", "x", "y", "z"], train_seconds=[1.0, 2.0], predict_seconds=4.0,
                         hardware=["cpu:A:1t", "cuda:B", "cpu:A:1t", "cuda:B"])
    evaluation = Evaluation(Settings(models=("m",)), 4, 3, [2, 2], [result])
    subset = evaluation.only({"x-b8", "y-b2", "not-tested"})
    kept, = subset.results
    assert kept.config_ids == ["x-b8", "y-b2"] and kept.families == ["a", "b"]
    assert kept.hardware == ["cuda:B", "cpu:A:1t"]
    assert kept.step.mre == pytest.approx((0.1 + 1.0) / 2)
    assert kept.profiled.mre == pytest.approx((1.0 + 2.0) / 2)
    assert kept.family_mre() == {"a": pytest.approx(0.1), "b": pytest.approx(1.0)}
    assert kept.latency_ms == pytest.approx(result.latency_ms)  # per iteration, as before
    assert (subset.configurations, subset.architectures) == (2, 2)
    assert "scored on these configurations only" in subset.table()
    assert evaluation.results[0].step.mre == pytest.approx((0.1 + 0.1 + 1.0 + 0.5) / 4)  # untouched
    with pytest.raises(ItercastError, match="none of the given configurations"):
        evaluation.only({"not-tested"})


def test_an_evaluation_over_two_targets_is_broken_down_by_hardware():
    from itercast.predict.evaluate import Evaluation, ModelResult, Settings

    result = ModelResult("m", predicted_ms=[110.0, 90.0, 200.0], predicted_profiled_ms=[1.0, 1.0, 1.0],
                         measured_ms=[100.0, 100.0, 100.0], measured_profiled_ms=[1.0, 1.0, 1.0],
                         families=["a", "a", "b"], config_ids=["x-cpu", "x-cuda", "y-cuda"], models=["x", "x", "y"],
                         hardware=["cpu:Xeon:1t", "cuda:NVIDIA H200", "cuda:NVIDIA H200"])
    evaluation = Evaluation(Settings(models=("m",)), 3, 2, [3], [result])
    rows = evaluation.group_rows("hardware")
    assert rows == [{"hardware": "cpu:Xeon:1t", "configurations": 1, "m": pytest.approx(0.1)},
                    {"hardware": "cuda:NVIDIA H200", "configurations": 2, "m": pytest.approx((0.1 + 1.0) / 2)}]
    table = evaluation.hardware_table()
    assert "cuda:NVIDIA H200" in table and "55.0%" in table and "10.0%" in table
    assert evaluation.to_dict()["hardware"] == rows
    one = Evaluation(Settings(models=("m",)), 1, 1, [1], [result.only({"x-cpu"})])
    assert one.hardware_table() is None  # one target: the overall row says it all


def test_every_figure_stays_under_its_heading_however_wide():
    """A 2000x miss (a median baseline on odd data) and a long model name widen their columns instead of
    pushing the figures after them out from under their headings."""
    from itercast.predict.evaluate import Evaluation, ModelResult, Settings

    def result(name, predicted):
        return ModelResult(name, predicted_ms=[predicted, 100.0], predicted_profiled_ms=[predicted, 1.0],
                           measured_ms=[0.05, 100.0], measured_profiled_ms=[0.05, 1.0], families=["a", "b"],
                           config_ids=["x", "y"], models=["x", "y"], train_seconds=[1.0], predict_seconds=0.1,
                           hardware=["cpu:A:1t", "cpu:A:1t"])

    results = [result("median", 200.0), result("lightgbm-constant-long-name", 0.05)]
    evaluation = Evaluation(Settings(models=tuple(r.name for r in results)), 2, 2, [2], results)
    def ends(line):  # where each word of a line ends
        return {index for index, char in enumerate(line) if char != " " and line[index + 1:index + 2] in (" ", "")}

    for table in (evaluation.table(), evaluation.family_table()):
        lines = table.splitlines()
        header = next(line for line in lines if line.startswith(("model ", "family ")))
        rows = [line for line in lines if line.split()[:1] in (["median"], ["lightgbm-constant-long-name"], ["a"])]
        assert len(rows) == (2 if table.startswith("2 configurations") else 1)
        for row in rows:
            figures = ends(row) - {min(ends(row))}  # the name's end aside
            assert figures <= ends(header), (row, header)  # every figure ends where a heading does
    assert "199950.0%" in evaluation.table() and "399900.0%" in evaluation.family_table()


def floor_evaluation(floor):
    from itercast.predict.evaluate import Evaluation, ModelResult, Settings

    result = ModelResult("m", predicted_ms=[110.0, 90.0, 200.0], predicted_profiled_ms=[1.0, 1.0, 1.0],
                         measured_ms=[100.0, 100.0, 100.0], measured_profiled_ms=[1.0, 1.0, 1.0],
                         families=["a", "a", "b"], config_ids=["x1", "x2", "y1"], models=["x", "x", "y"],
                         lines=["x", "x", "y"], hardware=["cpu:A:1t"] * 3, train_seconds=[1.0])
    return Evaluation(Settings(models=("m",)), 3, 2, [3], [result], label_floor=floor)


def test_the_label_floor_stands_beside_every_mre():
    from itercast.predict.dataset import LabelFloor

    floor = LabelFloor(0.02, 0.05, 3, 0, {"x1": 0.01, "x2": 0.03, "y1": 0.08})
    evaluation = floor_evaluation(floor)
    assert ("label floor: a repeat label pass differs from the first by 2.0% (median; mean 4.0%, p90 5.0%) "
            "over 3 configurations: an MRE near it") in evaluation.table()
    family = evaluation.family_table().splitlines()
    assert family[0].split()[-2:] == ["label", "floor"]
    assert family[1].split() == ["a", "2", "10.0%", "2.0%"] and family[2].split() == ["b", "1", "100.0%", "8.0%"]
    assert evaluation.line_rows()[0] == {"line": "y", "configurations": 1, "m": pytest.approx(1.0),
                                         "label floor": pytest.approx(0.08)}
    assert evaluation.to_dict()["label_floor"] == {"median": 0.02, "mean": pytest.approx(0.04), "p90": 0.05,
                                                   "configs": 3, "unrepeated": 0}
    assert evaluation.only({"x1"}).label_floor is floor
    bare = floor_evaluation(None)
    assert "label floor: not measured" in bare.table() and "floor" not in bare.family_table()
    assert bare.to_dict()["label_floor"] is None


@pytest.mark.parametrize("low, high, most, ticks", [
    (3.0, 9.0, 7, [3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
    (3.0, 9.0, 5, [5.0]),
    (1.05, 1.45, 5, [1.1, 1.2, 1.3, 1.4]),
    (0.8, 30.0, 7, [1.0, 2.0, 5.0, 10.0, 20.0]),
    (0.5, 2000.0, 7, [1.0, 10.0, 100.0, 1000.0]),
    (1e-3, 1e6, 4, [1e-3, 1.0, 1e3, 1e6]),
])
def test_log_ticks_are_1_2_5_per_decade_or_finer_then_decades_then_every_nth(low, high, most, ticks):
    from itercast.predict.evaluate import sparse_log_ticks

    assert sparse_log_ticks(low, high, most) == pytest.approx(ticks)


@pytest.mark.parametrize("measured", [[1.0, 1.1, 1.2, 1.3, 1.5], [2.0, 3.6, 6.6, 12.0, 40.0],
                                      [0.02, 0.5, 40.0, 900.0, 20000.0]],
                         ids=["within a decade", "a decade and more", "six decades"])
def test_the_plots_tick_labels_do_not_overlap(measured):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from itercast.predict.evaluate import Evaluation, ModelResult, Settings

    result = ModelResult("m", predicted_ms=[value * 1.1 for value in measured], measured_ms=measured,
                         predicted_profiled_ms=[value * 0.9 for value in measured], measured_profiled_ms=measured,
                         families=["a"] * 5, config_ids=list("vwxyz"), models=list("vwxyz"))
    figure = Evaluation(Settings(models=("m",)), 5, 5, [5], [result]).plot()
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    for axis in figure.axes:
        for side in (axis.xaxis, axis.yaxis):
            boxes = [label.get_window_extent(renderer) for label in side.get_ticklabels(which="both")
                     if label.get_visible() and label.get_text()]
            assert len(boxes) >= 2
            assert not any(first.overlaps(second) for i, first in enumerate(boxes) for second in boxes[i + 1:])
    plt.close(figure)
