"""itercast demo end to end, on the tiny collection (collecting is tested in tests/collect)."""

from itercast.cli import main


def test_demo_evaluates_trains_and_predicts_the_held_out_model(tiny_collection, tmp_path, capsys):
    out = tmp_path / "demo"
    code = main(["demo", "--out", str(out), "--collection", str(tiny_collection), "--held-out", "mlp-deep",
                 "--ets-seconds", "2"])
    printed = capsys.readouterr().out
    assert code == 0
    for model in ("lightgbm", "ets", "opbased", "linear", "median"):
        assert model in printed
    held_out_lines = [line for line in printed.splitlines() if line.strip().startswith("mlp-deep-b")]
    configs = [row for row in (tiny_collection / "manifest.csv").read_text().splitlines() if row.startswith("mlp-deep-")]
    assert len(held_out_lines) == len(configs) > 0
    assert all("hybrid" in line and "structure" in line and "measured" in line for line in held_out_lines)
    assert all(line.endswith("label floor -") for line in held_out_lines)  # the tiny collection has no repeat pass
    assert "label floor: not measured" in printed
    assert (out / "model.itc").stat().st_size > 0
    assert (out / "predicted_vs_measured.png").read_bytes()[:4] == b"\x89PNG"


def test_demo_refuses_an_unknown_held_out_model(tiny_collection, tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--collection", str(tiny_collection),
                 "--held-out", "no_such_model"]) != 0
    assert "no_such_model" in capsys.readouterr().err
