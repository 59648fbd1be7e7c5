"""Per-op-class and per-line error: the tables that show which regime a model misses."""

import json

import numpy as np
import pytest

from itercast.predict.op_classes import CLASS_NAMES, ClassTimes, class_rows, class_sums, class_table


def test_class_sums_add_each_rows_values_to_its_sample_and_class():
    classes = np.array([0, 0, 2, 2, 1])
    owners = np.array([0, 0, 0, 1, 1])
    sums = class_sums(classes, owners, np.array([[1.0, 2.0, 3.0, 4.0, 5.0], [10.0, 0.0, 0.0, 0.0, 1.0]]), 2)
    assert sums.shape == (2, len(CLASS_NAMES), 2)
    assert sums[0, 0].tolist() == [3.0, 10.0] and sums[0, 2].tolist() == [3.0, 0.0]
    assert sums[1, 2].tolist() == [4.0, 0.0] and sums[1, 1].tolist() == [5.0, 1.0]
    assert sums.sum() == pytest.approx(15.0 + 11.0)


def times_of(measured: dict, predicted: dict) -> ClassTimes:
    """ClassTimes of one configuration from {(class, label index): ns}."""
    def array(values):
        out = np.zeros((len(CLASS_NAMES), 2))
        for (name, label), ns in values.items():
            out[CLASS_NAMES.index(name), label] = ns
        return out

    times = ClassTimes()
    times.add(["c"], array(measured)[None], array(predicted)[None])
    return times


def test_an_under_predicted_class_shows_its_bias_and_leads_the_table():
    times = times_of({("embedding", 0): 600.0, ("matmul", 0): 400.0, ("matmul", 1): 100.0, ("view", 0): 1.0},
                     {("embedding", 0): 360.0, ("matmul", 0): 420.0, ("matmul", 1): 100.0, ("view", 0): 3.0})
    rows = class_rows(times)
    first = rows[0]
    assert (first["class"], first["label"]) == ("embedding", "duration")
    assert first["bias"] == pytest.approx(-0.4) and first["mre"] == pytest.approx(0.4)
    assert first["points"] == pytest.approx(240.0 / 1101.0)
    assert first["share"] == pytest.approx(600.0 / 1101.0)
    matmul = next(r for r in rows if (r["class"], r["label"]) == ("matmul", "duration"))
    assert matmul["bias"] == pytest.approx(0.05)
    # a class under 1% of the iteration is left out, however wrong
    assert not any(r["class"] == "view" for r in rows)
    assert "embedding" in class_table("lightgbm", times).splitlines()[2]


def test_only_keeps_the_named_configurations():
    times = times_of({("conv", 0): 1.0}, {("conv", 0): 2.0})
    assert not times.only({"other"}) and times.only({"c"}).measured.keys() == {"c"}


def test_evaluation_reports_every_line_and_the_classes_sum_to_the_measured_op_time(capsys):
    from itercast.cli import main
    from itercast.predict.baselines import measured_op_parts
    from itercast.predict.dataset import Dataset
    from itercast.predict.evaluate import Settings, evaluate, load_samples
    from tiny_collection import tiny_collection

    assert main(["evaluate", str(tiny_collection()), "--models", "lightgbm,median", "--folds", "2",
                 "--rounds", "5", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    lines = {c.line for c in Dataset.from_manifest(tiny_collection()).configs}
    assert {row["line"] for row in result["lines"]} == lines
    assert result["lines"][0]["lightgbm"] == max(row["lightgbm"] for row in result["lines"])  # worst first
    assert result["models"]["lightgbm"]["op_classes"] and not result["models"]["median"]["op_classes"]

    samples = load_samples(Dataset.from_manifest(tiny_collection()))
    evaluation = evaluate(samples, Settings(models=("lightgbm",), folds=2, rounds=5))
    times = evaluation.results[0].op_classes
    durations, gaps = measured_op_parts(samples)
    for sample, duration, gap in zip(samples, durations, gaps):
        measured = times.measured[sample.config.config_id]
        assert measured[:, 0].sum() == pytest.approx(duration) and measured[:, 1].sum() == pytest.approx(gap)
    assert "per op class" in evaluation.op_class_tables()
    assert "worst" in evaluation.line_table(limit=2) and len(evaluation.line_table(limit=2).splitlines()) == 3
