import json

from shared_data import vendored

from itercast.cli import main
from itercast.trace import read_trace

TRACE = vendored("traces/hta/trace_filter/sampled_rank-0.json.gz")


def test_scan_json_prints_one_object_with_the_summary(capsys):
    assert main(["scan", str(TRACE), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    trace = read_trace(TRACE)
    assert summary["bytes"] == trace.nbytes and summary["events"] == len(trace) == 4855
    assert sum(summary["by_category"].values()) == 4855
    assert summary["by_category"]["kernel"] == 1154
    assert [step["name"] for step in summary["iterations"]] == ["ProfilerStep#551", "ProfilerStep#552"]
    assert all(step["dur_ns"] > 0 for step in summary["iterations"])
    assert summary["seconds"] > 0 and summary["devices"] == []  # the trace records no deviceProperties


def test_scan_json_names_the_devices_the_trace_records(tmp_path, capsys):
    path = tmp_path / "devices.json"
    path.write_text('{"traceEvents": [], "deviceProperties": [{"name": "NVIDIA H100"}, {"name": "NVIDIA A100"}]}')
    assert main(["scan", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["devices"] == ["NVIDIA H100", "NVIDIA A100"]


def test_scan_text_lists_iterations(capsys):
    assert main(["scan", str(TRACE)]) == 0
    out = capsys.readouterr().out
    assert "ProfilerStep#552" in out and "4,855 events" in out


def test_scan_bad_input_exits_nonzero_with_location(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"traceEvents": [{"ph": X}]}')
    assert main(["scan", str(bad)]) != 0
    error = capsys.readouterr().err
    assert str(bad) in error and "byte 24" in error and "line 1" in error


def test_scan_missing_file_exits_nonzero(tmp_path, capsys):
    assert main(["scan", str(tmp_path / "absent.json")]) != 0
    assert "absent.json" in capsys.readouterr().err
