import csv

import pytest

from itercast.collect.manifest import COLUMNS, LABEL_COLUMNS
from itercast.errors import ItercastError
from itercast.predict.dataset import Dataset

MANIFEST = list(COLUMNS)  # the collector's; those a row leaves out are written empty
LABELS = list(LABEL_COLUMNS)


def write_csv(path, columns, rows):
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def manifest_row(config_id, step_ms, status="ok", model="resnet18", arch="resnet"):
    return {"config_id": config_id, "model": model, "family": "cnn", "arch": arch, "device": "cpu",
            "cpu_model": "Xeon", "threads": "1", "trace_path": f"traces/{config_id}.json",
            "step_ms": step_ms, "profiled_step_ms": "9.0", "batch_size": "2", "status": status}


@pytest.fixture
def collection(tmp_path):
    write_csv(tmp_path / "manifest.csv", MANIFEST, [
        manifest_row("a", "10.0"), manifest_row("b", "20.0", model="resnet34"),
        manifest_row("c", "", status="oom")])
    return tmp_path


def by_id(dataset):
    return {config.config_id: config for config in dataset.configs}


def test_manifest_rows_become_configs_of_status_ok(collection):
    configs = by_id(Dataset.from_manifest(collection))
    assert sorted(configs) == ["a", "b"]
    assert configs["a"].step_ms == 10.0 and configs["a"].label_passes == 1 and configs["a"].label_spread == 0
    assert configs["b"].model == "resnet34" and configs["b"].line == "resnet"
    assert configs["a"].hardware == "cpu:Xeon:1t"
    assert configs["a"].trace_path == collection / "traces" / "a.json"


def test_label_passes_make_the_label_their_median_with_the_manifest_measurement(collection):
    write_csv(collection / "labels.csv", LABELS, [
        {"config_id": "a", "label_pass": "1", "step_ms": "12.0", "status": "ok"},
        {"config_id": "a", "label_pass": "2", "step_ms": "11.0", "status": "ok"},
        {"config_id": "b", "label_pass": "1", "step_ms": "30.0", "status": "ok"},
        {"config_id": "b", "label_pass": "2", "step_ms": "", "status": "timeout"}])
    configs = by_id(Dataset.from_manifest(collection / "manifest.csv"))
    assert configs["a"].step_ms == 11.0 and configs["a"].label_passes == 3
    assert configs["a"].label_spread == pytest.approx((1 / 11 + 0 + 1 / 11) / 3)
    assert configs["b"].step_ms == 25.0 and configs["b"].label_passes == 2  # the timeout is no label
    assert configs["b"].label_spread == pytest.approx(0.2)


@pytest.mark.parametrize("value", ["fast", "0", "nan"])
def test_a_bad_label_row_names_the_file_and_line(collection, value):
    write_csv(collection / "labels.csv", LABELS, [
        {"config_id": "a", "label_pass": "1", "step_ms": "12.0", "status": "ok"},
        {"config_id": "a", "label_pass": "2", "step_ms": value, "status": "ok"}])
    with pytest.raises(ItercastError, match=r"labels\.csv, line 3: bad row \(.*step_ms"):
        Dataset.from_manifest(collection)


def test_a_bad_manifest_row_names_the_file_and_line(collection):
    write_csv(collection / "manifest.csv", MANIFEST, [manifest_row("a", "slow")])
    with pytest.raises(ItercastError, match=r"manifest\.csv, line 2: bad row"):
        Dataset.from_manifest(collection)


def test_a_missing_manifest_or_one_without_ok_rows_is_a_clear_error(tmp_path):
    with pytest.raises(ItercastError, match="no manifest at"):
        Dataset.from_manifest(tmp_path)
    write_csv(tmp_path / "manifest.csv", MANIFEST, [manifest_row("c", "", status="error")])
    with pytest.raises(ItercastError, match="no configuration with status ok"):
        Dataset.from_manifest(tmp_path)


def test_a_pass_over_many_configurations_is_rescaled_by_its_drift_before_the_median(tmp_path):
    from itercast.predict.dataset import MIN_DRIFT_CONFIGS

    ids = [f"c{index}" for index in range(MIN_DRIFT_CONFIGS)]
    write_csv(tmp_path / "manifest.csv", MANIFEST, [manifest_row(config_id, "10.0") for config_id in ids])
    slower = {config_id: 11.0 for config_id in ids} | {"c0": 13.2}  # the machine 1.1x slower; c0 1.2x more
    write_csv(tmp_path / "labels.csv", LABELS, [
        {"config_id": config_id, "label_pass": label_pass, "step_ms": ms, "status": "ok"}
        for label_pass in (1, 2) for config_id, ms in slower.items()])
    configs = by_id(Dataset.from_manifest(tmp_path))
    assert configs["c1"].step_ms == pytest.approx(10.0) and configs["c1"].label_spread == pytest.approx(0)
    assert configs["c0"].step_ms == pytest.approx(12.0)  # median of 10, 12, 12


def test_a_pass_over_a_few_configurations_is_taken_as_measured(collection):
    write_csv(collection / "labels.csv", LABELS, [
        {"config_id": "a", "label_pass": "1", "step_ms": "11.0", "status": "ok"},
        {"config_id": "b", "label_pass": "1", "step_ms": "22.0", "status": "ok"}])
    configs = by_id(Dataset.from_manifest(collection))
    assert configs["a"].step_ms == pytest.approx(10.5) and configs["b"].step_ms == pytest.approx(21.0)


def profiler_step(number, start, length, mm_us, extra_op=False):
    def op(name, ts, dur):
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": start + ts, "dur": dur,
                "args": {"Input Dims": [[8, 8], [8, 8]], "Input type": ["float", "float"]}}

    events = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{number}", "pid": 1, "tid": 1,
               "ts": start, "dur": length}, op("aten::mm", 10, mm_us), op("aten::relu", 400, 20)]
    return events + ([op("aten::add", 450, 10)] if extra_op else [])


def test_op_labels_are_the_median_over_the_repeats_of_the_kept_iteration():
    import json

    from itercast.predict.dataset import sample_from_trace

    events = (profiler_step(1, 0, 500, mm_us=30) + profiler_step(2, 1000, 600, mm_us=300)
              + profiler_step(3, 2000, 700, mm_us=40)
              + profiler_step(4, 3000, 100, mm_us=1000, extra_op=True))  # other ops: no repeat of the kept
    sample = sample_from_trace(json.dumps({"traceEvents": events}).encode())
    assert sample.profiled_ns == 600_000  # the kept iteration: the median by duration, whose mm took 300 us
    duration, gap = sample.windows.y[0, 0]
    assert duration == 40_000  # the median of 30, 300 and 40 us; 1000 would move it to 170
    assert gap == 350_000  # mm ends 40, 310 and 50 us in; relu starts at 400 us
    assert sample.windows.y_sum[0] == pytest.approx(sample.windows.y[0].sum())


def test_a_manifest_without_config_ids_is_a_clear_error(tmp_path):
    columns = [column for column in MANIFEST if column != "config_id"]
    write_csv(tmp_path / "manifest.csv", columns,
              [{k: v for k, v in manifest_row("a", "10.0").items() if k != "config_id"}])
    with pytest.raises(ItercastError, match=r"manifest\.csv, line 2: bad row"):
        Dataset.from_manifest(tmp_path)


@pytest.mark.parametrize("value", ["0", "-3.5", "nan", "inf"])
@pytest.mark.parametrize("column", ["step_ms", "profiled_step_ms"])
def test_a_label_that_is_not_a_positive_time_names_the_file_line_and_column(tmp_path, column, value):
    row = manifest_row("a", "10.0") | {column: value}
    write_csv(tmp_path / "manifest.csv", MANIFEST, [manifest_row("b", "20.0"), row])
    with pytest.raises(ItercastError, match=rf"manifest\.csv, line 3: bad row \({column} '{value}' is not a positive"):
        Dataset.from_manifest(tmp_path)


def speed_collection(path, reference_noise=1.0, skip_reference=None):
    """MIN_DRIFT_CONFIGS configurations timed twice; in the label pass the machine ran c0-c9 20% slower,
    and their reference workload ``reference_noise`` as much slower as their steps."""
    from itercast.predict.dataset import MIN_DRIFT_CONFIGS

    ids = [f"c{index}" for index in range(MIN_DRIFT_CONFIGS)]
    slowed = set(ids[:10])
    rows = [manifest_row(config_id, "10.0") | {"reference_ms": "3.0"} for config_id in ids]
    passes = [{"config_id": config_id, "label_pass": "1", "step_ms": 12.0 if config_id in slowed else 10.0,
               "reference_ms": 3.0 * (1.2 if config_id in slowed else 1.0) ** reference_noise, "status": "ok"}
              for config_id in ids]
    if skip_reference:
        rows[skip_reference]["reference_ms"] = ""
    write_csv(path / "manifest.csv", MANIFEST, rows)
    write_csv(path / "labels.csv", LABELS, passes)
    return path


def test_measurements_are_divided_by_the_machine_speed_fitted_on_the_label_passes(tmp_path):
    dataset = Dataset.from_manifest(speed_collection(tmp_path))
    assert dataset.machine_speed.exponent == pytest.approx(1.0) and dataset.machine_speed.pairs == len(dataset)
    assert dataset.machine_speed.medians == {"cpu:Xeon:1t": 3.0}
    assert all(config.step_ms == pytest.approx(10.0) for config in dataset.configs)  # the slowdown divided out
    assert all(config.label_spread == pytest.approx(0.0) for config in dataset.configs)
    raw = by_id(Dataset.from_manifest(tmp_path, machine_speed=False))
    assert raw["c0"].step_ms == pytest.approx(11.0) and raw["c0"].slowdown == 1.0


def test_a_reference_that_moves_twice_as_much_as_the_steps_gets_half_the_exponent(tmp_path):
    dataset = Dataset.from_manifest(speed_collection(tmp_path, reference_noise=2.0))
    assert dataset.machine_speed.exponent == pytest.approx(0.5)
    assert by_id(dataset)["c0"].step_ms == pytest.approx(10.0)


def test_the_trace_pass_machine_speed_divides_the_profiled_label_and_the_trace_times(tmp_path):
    import json

    from itercast.predict.dataset import sample_from_trace

    speed_collection(tmp_path)
    rows = list(csv.DictReader(open(tmp_path / "manifest.csv")))
    rows[0]["reference_ms"] = "6.0"  # the machine at half speed while c0's trace was recorded
    write_csv(tmp_path / "manifest.csv", list(rows[0]), rows)
    c0 = by_id(Dataset.from_manifest(tmp_path))["c0"]
    assert c0.slowdown > 1.1 and c0.profiled_step_ms == pytest.approx(9.0 / c0.slowdown)
    trace = json.dumps({"traceEvents": profiler_step(1, 0, 500, mm_us=30)}).encode()
    measured, divided = sample_from_trace(trace), sample_from_trace(trace, c0)
    assert divided.windows.y == pytest.approx(measured.windows.y / c0.slowdown)
    assert divided.profiled_ns == pytest.approx(measured.profiled_ns / c0.slowdown)
    assert divided.with_config(None).windows.y == pytest.approx(measured.windows.y)  # and back


@pytest.mark.parametrize("skip", [None, 3])
def test_without_label_passes_or_with_a_row_lacking_its_reference_nothing_is_divided(tmp_path, skip):
    speed_collection(tmp_path, skip_reference=skip)
    if skip is None:
        (tmp_path / "labels.csv").unlink()
    dataset = Dataset.from_manifest(tmp_path)
    assert dataset.machine_speed is None or dataset.machine_speed.exponent == 0.0
    assert all(config.slowdown == 1.0 for config in dataset.configs)


def test_a_manifest_the_collector_writes_is_read_in_its_own_columns(tmp_path):
    from itercast.collect.manifest import Manifest

    row = {column: None for column in COLUMNS} | {
        "config_id": "a", "model": "resnet18", "family": "cnn", "arch": "resnet", "device": "cpu", "cpu_model": "Xeon",
        "threads": 1, "trace_path": "traces/a.json", "step_ms": 10.0, "profiled_step_ms": 9.0, "batch_size": 2,
        "status": "ok"}
    Manifest(tmp_path / "manifest.csv").append(row)
    (config,) = Dataset.from_manifest(tmp_path).configs
    assert (config.config_id, config.line, config.hardware, config.step_ms, config.batch_size) == (
        "a", "resnet", "cpu:Xeon:1t", 10.0, 2)


def paired(config_id, ratio, reference_ms, step_ms="99.0", **fields):
    return {**manifest_row(config_id, step_ms, **fields), "label_protocol": "paired-rounds",
            "label_ratio": str(ratio), "label_reference_ms": str(reference_ms)}


def test_a_paired_rounds_label_is_its_ratio_times_the_collections_median_reference_step(tmp_path):
    write_csv(tmp_path / "manifest.csv", MANIFEST, [
        paired("a", 2.0, 4.0), paired("b", 3.0, 5.0), paired("c", 0.5, 9.0)])
    dataset = Dataset.from_manifest(tmp_path)
    assert dataset.label_protocol == "paired-rounds" and dataset.label_floor is None
    assert {key: config.step_ms for key, config in by_id(dataset).items()} == {"a": 10.0, "b": 15.0, "c": 2.5}


def fresh_loop(config_id, ratio, reference_ms, profile_reference_ms=None):
    row = {**paired(config_id, ratio, reference_ms), "label_protocol": "fresh-loop"}
    return row | ({} if profile_reference_ms is None else {"profile_reference_ms": str(profile_reference_ms)})


def test_a_trace_taken_on_a_slow_machine_is_divided_by_the_slowdown_its_profile_saw(tmp_path):
    """The labels' median reference is 5 ms; b's profile ran beside references of 10 ms (2x slow), c's of 4 ms,
    and a has no profile reference (a collection from before): its trace is left as it is."""
    write_csv(tmp_path / "manifest.csv", MANIFEST, [
        fresh_loop("a", 2.0, 4.0), fresh_loop("b", 3.0, 5.0, 10.0), fresh_loop("c", 0.5, 9.0, 4.0)])
    dataset = Dataset.from_manifest(tmp_path)
    configs = by_id(dataset)
    assert dataset.label_protocol == "fresh-loop"
    assert {key: config.step_ms for key, config in configs.items()} == {"a": 10.0, "b": 15.0, "c": 2.5}
    assert {key: config.slowdown for key, config in configs.items()} == {"a": 1.0, "b": 2.0, "c": 0.8}
    assert {key: config.profiled_step_ms for key, config in configs.items()} == pytest.approx(
        {"a": 9.0, "b": 4.5, "c": 11.25})
    assert Dataset.from_manifest(tmp_path, machine_speed=False).configs[1].slowdown == 1.0


def test_the_label_floor_compares_each_repeat_pass_with_the_first(tmp_path):
    rows = [paired(f"c{index}", 1.0 + index, 5.0) for index in range(40)]
    write_csv(tmp_path / "manifest.csv", MANIFEST, rows)
    # The repeat pass runs 10% slower throughout (drift, divided out) and c0-c7 stray a further 4%.
    repeats = [{"config_id": f"c{index}", "label_pass": "1", "status": "ok", "label_protocol": "paired-rounds",
                "label_ratio": str((1.0 + index) * 1.1 * (1.04 if index < 8 else 1.0)), "label_reference_ms": "5.5"}
               for index in range(38)]
    write_csv(tmp_path / "labels.csv", LABELS, repeats)
    floor = Dataset.from_manifest(tmp_path).label_floor
    assert floor.median == pytest.approx(0.0) and floor.p90 == pytest.approx(0.04)
    assert (floor.configs, floor.unrepeated) == (38, 2)
    assert "over 38 configurations (2 not repeated)" in floor.describe()


def test_labels_of_two_protocols_in_one_collection_are_refused_naming_them(tmp_path):
    write_csv(tmp_path / "manifest.csv", MANIFEST, [paired("a", 2.0, 4.0), manifest_row("b", "20.0")])
    with pytest.raises(ItercastError, match=r"mixes label protocols \(paired-rounds: a \(manifest.csv\); wall: b"):
        Dataset.from_manifest(tmp_path)
    write_csv(tmp_path / "manifest.csv", MANIFEST, [paired("a", 2.0, 4.0)])
    write_csv(tmp_path / "labels.csv", LABELS, [{"config_id": "a", "label_pass": "1", "step_ms": "8.0", "status": "ok"}])
    with pytest.raises(ItercastError, match=r"wall: a \(labels.csv\)"):
        Dataset.from_manifest(tmp_path)


def test_label_passes_that_cover_none_of_the_manifest_are_refused(collection):
    write_csv(collection / "labels.csv", LABELS, [
        {"config_id": "elsewhere", "label_pass": "1", "step_ms": "12.0", "status": "ok"}])
    with pytest.raises(ItercastError, match="cover none of the manifest's configurations.*elsewhere"):
        Dataset.from_manifest(collection)
