"""benchmarks/label_vs_loop.py: a plain loop's step times, and labels compared with loops."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from itercast.collect.manifest import MANIFEST_NAME, Manifest, config_id

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "label_vs_loop.py"


def load_script():
    spec = importlib.util.spec_from_file_location("label_vs_loop", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


label_vs_loop = load_script()


def test_a_plain_loop_times_consecutive_steps_without_flushing_subnormals():
    torch = pytest.importorskip("torch")
    from itercast.collect.measure import flushes_denormals

    threads, flushing = torch.get_num_threads(), flushes_denormals()
    torch.set_flush_denormal(False)
    try:
        config = label_vs_loop.parse_config_id(config_id("mlp_512x3", 2, 256, "float32", "cpu", 1))
        times = label_vs_loop.loop_times(config, warmup=1, steps=3, variant="plain")
        assert len(times) == 3 and all(0 < ms < 10_000 for ms in times)
        assert torch.get_num_threads() == 1 and not flushes_denormals()
    finally:
        torch.set_num_threads(threads)
        torch.set_flush_denormal(flushing)


def test_a_configuration_id_reads_back_into_its_fields():
    fields = {"model": "lstm_cell_64", "batch_size": 32, "input_size": 128, "dtype": "bfloat16",
              "device": "cuda:1", "threads": 4}
    assert label_vs_loop.parse_config_id(config_id(**fields)) == fields
    assert label_vs_loop.parse_config_id("resnet18-b8-s32-float32-cpu-t1")["device"] == "cpu"
    with pytest.raises(ValueError, match="not a configuration id: 'resnet18-b8'"):
        label_vs_loop.parse_config_id("resnet18-b8")


def write_manifest(directory: Path, labels: dict[str, tuple[str, float]]) -> None:
    manifest = Manifest(directory / MANIFEST_NAME)
    for config, (family, step_ms) in labels.items():
        fields = label_vs_loop.parse_config_id(config)
        manifest.append({"config_id": config, **fields, "family": family, "arch": fields["model"],
                         "cpu_model": "test CPU", "step_ms": step_ms, "steps": 40, "label_protocol": "wall",
                         "profiled_step_ms": step_ms * 1.1, "profiled_steps": 3, "trace_path": f"traces/{config}",
                         "status": "ok"})


def test_labels_against_loops_by_hand(tmp_path, capsys):
    ids = {name: config_id(name, 8, 32, "float32", "cpu", 1) for name in "abcde"}
    # Labels (wall protocol, no label passes or references: the manifest's step_ms as they stand).
    write_manifest(tmp_path, {ids["a"]: ("mlp", 11.0), ids["b"]: ("mlp", 9.0), ids["c"]: ("mlp", 12.5),
                              ids["d"]: ("rnn", 19.0), ids["e"]: ("rnn", 30.0),
                              config_id("f", 8, 32, "float32", "cpu", 1): ("rnn", 5.0)})  # f: never looped
    rounds = {ids["a"]: [10, 9, 11], ids["b"]: [10, 10, 12], ids["c"]: [10],  # loops 10, 10, 10
              ids["d"]: [20, 20], ids["e"]: [20, 21, 19],  # loops 20, 20
              config_id("g", 8, 32, "float32", "cpu", 1): [1, 1, 1]}  # g: no label
    loops = tmp_path / "loops.csv"
    writer = label_vs_loop.LoopWriter(loops)
    for config, medians in rounds.items():
        for round_, median in enumerate(medians):
            writer.append({"config_id": config, "round": round_, "median_ms": median, "steps": 40, "iqr_ms": 0.1,
                           "variant": "plain", "finished_at": ""})
    out = tmp_path / "comparison.json"
    assert label_vs_loop.main(["--dataset", str(tmp_path), "--out", str(loops), "--compare",
                               "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    # label / loop - 1: a +10%, b -10%, c +25% (mlp); d -5%, e +50% (rnn).
    errors = {config: values["error"] for config, values in result["configs"].items()}
    assert errors == pytest.approx({ids["a"]: 0.10, ids["b"]: -0.10, ids["c"]: 0.25, ids["d"]: -0.05,
                                    ids["e"]: 0.50})
    assert result["configs"][ids["d"]]["rounds"] == 2 and result["configs"][ids["d"]]["loop_ms"] == 20
    # |e| sorted: .05 .10 .10 .25 .50 -> median .10; p90 at rank 0.9 * 4 = 3.6: .25 + .6 * (.50 - .25) = .40.
    assert result["overall"] == pytest.approx({"configs": 5, "median_abs": 0.10, "p90_abs": 0.40,
                                               "median_signed": 0.10})
    # mlp |e| .10 .10 .25: median .10, p90 at rank 1.8: .10 + .8 * .15 = .22; signed +.10 -.10 +.25 -> +.10.
    # rnn |e| .05 .50: median .275, p90 at rank .9: .05 + .9 * .45 = .455; signed -.05 +.50 -> +.225.
    assert result["families"]["mlp"] == pytest.approx({"configs": 3, "median_abs": 0.10, "p90_abs": 0.22,
                                                       "median_signed": 0.10})
    assert result["families"]["rnn"] == pytest.approx({"configs": 2, "median_abs": 0.275, "p90_abs": 0.455,
                                                       "median_signed": 0.225})
    assert result["loops_without_label"] == [config_id("g", 8, 32, "float32", "cpu", 1)]
    printed = capsys.readouterr().out
    assert "median 10.0%, p90 40.0%" in printed and "+50.0%" in printed


def test_a_subset_is_stratified_by_family_and_a_resumed_run_times_only_what_is_missing():
    families = {f"m{index}": "mlp" for index in range(6)} | {"r0": "rnn", "r1": "rnn"} | {"c0": "cnn"}
    chosen = label_vs_loop.stratified(families, 5, seed=1)
    assert len(chosen) == 5 and {families[config] for config in chosen} == {"mlp", "rnn", "cnn"}
    assert chosen == label_vs_loop.stratified(families, 5, seed=1)
    assert label_vs_loop.stratified(families, None, seed=1) == sorted(families)
    tasks = label_vs_loop.plan(["a", "b"], rounds=2, seed=0, done={("a", 0)}, variant="plain", workers=1)
    assert sorted(tasks) == [(0, ["b"]), (1, ["a"]), (1, ["b"])]
    worker = label_vs_loop.plan(["a", "b", "c"], rounds=1, seed=0, done=set(), variant="worker", workers=2)
    assert [round_ for round_, _ in worker] == [0, 0] and sorted(sum((ids for _, ids in worker), [])) == ["a", "b", "c"]
