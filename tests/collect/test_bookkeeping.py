import io
import re

import pytest

from itercast.collect import zoo
from itercast.collect.manifest import COLUMNS, LABEL_PROTOCOL_COLUMNS, REFERENCE_COLUMNS, Manifest
from itercast.collect.progress import Progress
from itercast.collect.runner import Config, check_settings, grid
from itercast.errors import ItercastError


def config(**changes) -> Config:
    settings = dict(spec=zoo.MODELS["resnet18"], batch_size=8, input_size=32, dtype="float32",
                    device="cpu", threads=1)
    settings.update(changes)
    return Config(**settings)


def test_config_id_is_stable_and_distinguishes_every_setting():
    assert config().id == "resnet18-b8-s32-float32-cpu-t1"
    assert config(device="cuda:1").id == "resnet18-b8-s32-float32-cuda1-t1"
    variants = [config(), config(batch_size=16), config(input_size=64), config(dtype="bfloat16"),
                config(device="cuda"), config(threads=2), config(spec=zoo.MODELS["resnet34"])]
    assert len({variant.id for variant in variants}) == len(variants)


def test_grid_crosses_models_input_sizes_and_batch_sizes():
    specs = [zoo.MODELS["resnet18"], zoo.MODELS["ncf"]]
    configs = grid(specs, (2, 8), None, "float32", "cpu", 1)
    assert len(configs) == 2 * 2 + 1 * 2  # resnet18 has two default input sizes, ncf one
    assert {c.input_size for c in grid(specs, (2,), (48,), "float32", "cpu", 1)} == {48}


@pytest.mark.parametrize("device, threads, dtype, message", [
    ("tpu", 1, "float32", "unknown device 'tpu'; use cpu, cuda or cuda:N"),
    ("cpu", 0, "float32", "threads must be at least 1"),
    ("cpu", 1, "int8", "unknown dtype 'int8'; choose from "),
])
def test_bad_settings_are_user_errors_naming_the_setting(device, threads, dtype, message):
    with pytest.raises(ItercastError, match=re.escape(message)):
        check_settings(device, threads, dtype)


def test_manifest_round_trips_types_and_missing_values(tmp_path):
    manifest = Manifest(tmp_path / "manifest.csv")
    manifest.append({**config().row(), "status": "timeout", "message": "slow, \"very\"\nslow"})
    manifest.append({**config(batch_size=2).row(), "status": "ok", "step_ms": 1.5, "params": 7})
    first, second = manifest.rows()
    assert first["batch_size"] == 8 and first["step_ms"] is None
    assert first["message"] == "slow, \"very\"\nslow"
    assert second["step_ms"] == 1.5 and second["params"] == 7
    assert manifest.finished_ids() == {config().id, config(batch_size=2).id}
    assert set(first) == set(COLUMNS)


def test_a_manifest_with_other_columns_is_refused(tmp_path):
    (tmp_path / "manifest.csv").write_text("model,status\nx,ok\n")
    with pytest.raises(ItercastError, match="other columns"):
        Manifest(tmp_path / "manifest.csv")


BEFORE_PROFILE_REFERENCE = {"profile_reference_ms": float}


@pytest.mark.parametrize("left_out", [BEFORE_PROFILE_REFERENCE, {**BEFORE_PROFILE_REFERENCE, **LABEL_PROTOCOL_COLUMNS},
                                      {**BEFORE_PROFILE_REFERENCE, **LABEL_PROTOCOL_COLUMNS,
                                       **dict.fromkeys(REFERENCE_COLUMNS)}],
                         ids=["before the profile's reference", "before the label protocol",
                              "before the reference workload"])
def test_an_earlier_manifest_is_resumed_in_its_own_columns_and_reads_as_wall_labels(tmp_path, left_out):
    earlier = [column for column in COLUMNS if column not in left_out]
    path = tmp_path / "manifest.csv"
    path.write_text(",".join(earlier) + "\n")
    manifest = Manifest(path)
    manifest.append({**config().row(), "status": "ok", "step_ms": 2.0, "reference_ms": 3.0,
                     "label_protocol": "paired-rounds", "label_ratio": 4.0})
    assert path.read_text().splitlines()[0] == ",".join(earlier)
    (row,) = manifest.rows()
    assert row["step_ms"] == 2.0 and row["profile_reference_ms"] is None
    assert row["reference_ms"] == (None if "reference_ms" in left_out else 3.0)
    if "label_protocol" in left_out:
        assert row["label_ratio"] is None and manifest.label_protocols() == {"wall": [config().id]}
    else:
        assert row["label_ratio"] == 4.0 and manifest.label_protocols() == {"paired-rounds": [config().id]}


def test_a_manifest_missing_only_the_reference_columns_is_refused(tmp_path):
    path = tmp_path / "manifest.csv"
    path.write_text(",".join(column for column in COLUMNS if column not in REFERENCE_COLUMNS) + "\n")
    with pytest.raises(ItercastError, match="other columns"):
        Manifest(path)


def test_progress_reports_counts_and_an_eta():
    stream = io.StringIO()
    progress = Progress(4, stream)
    progress.advance("first: ok")
    progress.advance("second: error")
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("[") and "1/4" in lines[0] and "first: ok" in lines[0]
    assert "2/4" in lines[1] and "ETA 0:00:" in lines[1]
