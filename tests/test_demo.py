"""itercast demo end to end, on the tiny collection (collecting is tested in tests/collect)."""

import contextlib
import csv
import io
import re

import pytest

from itercast.cli import main
from itercast.cli.demo import MAX_FOLDS

HELD_OUT = "mlp-deep"
BASELINES = ("ets", "opbased", "linear", "median", "trace-time")


@pytest.fixture(scope="module")
def demo(tiny_collection, tmp_path_factory):
    """(exit code, stdout, output directory) of one demo run, shared by the tests that read it."""
    out = tmp_path_factory.mktemp("demo") / "demo"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["demo", "--out", str(out), "--collection", str(tiny_collection), "--held-out", HELD_OUT,
                     "--ets-seconds", "2"])
    return code, printed.getvalue(), out


@pytest.fixture(scope="module")
def evaluated(tiny_collection):
    """The configurations the demo's evaluation covers: every one but the held-out architecture's."""
    with open(tiny_collection / "manifest.csv", newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row["model"] != HELD_OUT]
    return rows


def test_demo_evaluates_trains_and_predicts_the_held_out_model(demo, tiny_collection):
    code, printed, out = demo
    assert code == 0
    for model in ("hybrid", "lightgbm", *BASELINES):
        assert model in printed
    held_out_lines = [line for line in printed.splitlines() if line.strip().startswith(f"{HELD_OUT}-b")]
    configs = [row for row in (tiny_collection / "manifest.csv").read_text().splitlines()
               if row.startswith(f"{HELD_OUT}-")]
    assert len(held_out_lines) == len(configs) > 0
    assert all("hybrid" in line and "structure" in line and "measured" in line for line in held_out_lines)
    assert all(line.endswith("label floor -") for line in held_out_lines)  # the tiny collection has no repeat pass
    assert "label floor: not measured" in printed
    assert (out / "model.itc").stat().st_size > 0
    assert (out / "predicted_vs_measured.png").read_bytes()[:4] == b"\x89PNG"


def test_demo_tests_every_architecture_exactly_once(demo, evaluated):
    """k folds by architecture, not one random holdout: each architecture but the held-out one is a test
    architecture in exactly one fold, and every configuration of it is tested there."""
    _, printed, _ = demo
    architectures = sorted({row["model"] for row in evaluated})
    folds = min(MAX_FOLDS, len(architectures))
    fold_lines = re.findall(r"^  fold (\d+)/(\d+) tests (\d+) configurations of (.+)$", printed, re.MULTILINE)
    assert [(int(k), int(of)) for k, of, _, _ in fold_lines] == [(k, folds) for k in range(1, folds + 1)]
    tested = [name for *_, names in fold_lines for name in names.split(", ")]
    assert sorted(tested) == architectures  # each once: none twice, none left out
    assert sum(int(count) for _, _, count, _ in fold_lines) == len(evaluated)
    for *_, count, names in fold_lines:
        assert int(count) == sum(row["model"] in names.split(", ") for row in evaluated)

    # the table says the same of the folds the models were scored on
    header = next(line for line in printed.splitlines() if "test configurations per fold" in line)
    assert f"split by arch ({folds} folds" in header
    per_fold = [int(size) for size in re.search(r"test configurations per fold: \[([\d, ]+)\]", header)[1].split(",")]
    assert len(per_fold) == folds and sum(per_fold) == len(evaluated)
    assert header.startswith(f"{len(evaluated)} configurations, {len(architectures)} architectures")
    assert f"each of the {len(architectures)} architectures is a test architecture once" in printed
    # the ETS reference's budget is the total, split over the folds
    assert "ets: " in printed and f"epochs in a {2 / folds:g} s budget per fold" in printed


def test_demo_lists_the_predictors_default_model_before_the_baselines(demo):
    """The hybrid (what Predictor.predict gives for a trace from the target), then lightgbm (its pricing
    from structure alone), then the baselines, in the overall table and in the per-family one."""
    _, printed, _ = demo
    lines = printed.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("model "))
    end = next(k for k, line in enumerate(lines) if line.startswith("label floor"))
    rows = [line.split()[0] for line in lines[start + 1:end]]
    assert rows == ["hybrid", "lightgbm", *BASELINES]
    family_header = next(line for line in lines if line.startswith("family (MRE vs step_ms)"))
    assert family_header.split()[5:] == ["hybrid", "lightgbm", *BASELINES]


def test_demo_refuses_an_unknown_held_out_model(tiny_collection, tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--collection", str(tiny_collection),
                 "--held-out", "no_such_model"]) != 0
    assert "no_such_model" in capsys.readouterr().err
