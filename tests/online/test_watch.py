import gzip
import json

import pytest

import itercast.online.watch as watch_module
from itercast.cli import main
from itercast.online import load_targets
from itercast.online.watch import TraceWatcher


def pieces(data: bytes, count: int):
    size = -(-len(data) // count)
    return [data[i:i + size] for i in range(0, len(data), size)]


@pytest.fixture
def bytes_read(monkeypatch):
    """Counts every byte the watcher reads from files."""
    total = [0]
    original = watch_module.read_from

    def counting(path, offset=0):
        for chunk in original(path, offset):
            total[0] += len(chunk)
            yield chunk

    monkeypatch.setattr(watch_module, "read_from", counting)
    return total


def expected_lines(predictor, trace, name):
    by_key = {key: predictor.predict(trace, key) for key in predictor.hardware}
    first = by_key[predictor.hardware[0]]
    return [(name, it.name, {key: p.iterations[i].predicted_ms for key, p in by_key.items()}, it.measured_ms)
            for i, it in enumerate(first.iterations)]


def as_tuples(completed):
    return [(it.file, it.iteration, it.predicted_ms, it.measured_ms) for it in completed.iterations]


def test_a_tmp_file_written_in_chunks_is_read_once_and_finished_on_rename(
        tmp_path, predictor, trace_file, bytes_read):
    data = trace_file.read_bytes()
    watcher = TraceWatcher(tmp_path, load_targets(predictor))
    name = "worker0.123.pt.trace.json"
    written = tmp_path / f"{name}.tmp"
    with open(written, "wb") as handle:
        for piece in pieces(data, 5):
            handle.write(piece)
            handle.flush()
            assert watcher.poll() == []
            assert watcher.in_progress == [name]
    assert bytes_read[0] == len(data)
    written.rename(tmp_path / name)
    [completed] = watcher.poll()
    assert completed.error is None
    assert as_tuples(completed) == expected_lines(predictor, trace_file, name)
    assert bytes_read[0] == len(data)  # the rename is finished from the stream: nothing re-read
    assert watcher.poll() == [] and watcher.in_progress == []


def test_a_gzip_file_written_in_place_completes_when_its_stream_ends(tmp_path, predictor, trace_file, bytes_read):
    data = gzip.compress(trace_file.read_bytes())
    watcher = TraceWatcher(tmp_path, load_targets(predictor, "test-cpu-b"))
    path = tmp_path / "w.pt.trace.json.gz"
    chunks = pieces(data, 4)
    with open(path, "wb") as handle:
        for piece in chunks[:-1]:
            handle.write(piece)
            handle.flush()
            assert watcher.poll() == []
        handle.write(chunks[-1])
    [completed] = watcher.poll()
    assert [it.predicted_ms for it in completed.iterations] == [
        {"cpu:test-cpu-b:1t": it.predicted_ms} for it in predictor.predict(trace_file, "test-cpu-b").iterations]
    assert bytes_read[0] == len(data)


def test_a_plain_file_completes_once_its_size_holds_still(tmp_path, predictor, trace_file):
    (tmp_path / "copied.json").write_bytes(trace_file.read_bytes())
    (tmp_path / "notes.txt").write_text("not a trace")
    watcher = TraceWatcher(tmp_path, load_targets(predictor))
    assert watcher.poll() == []
    [completed] = watcher.poll()
    assert completed.file == "copied.json" and len(completed.iterations) == 2


def test_a_broken_trace_is_reported_once(tmp_path, predictor):
    (tmp_path / "bad.pt.trace.json").write_bytes(b'{"traceEvents": [ nonsense ]}')
    watcher = TraceWatcher(tmp_path, load_targets(predictor))
    [completed] = watcher.poll()
    assert completed.iterations == [] and "bad.pt.trace.json" in completed.error
    assert watcher.poll(final=True) == []


def test_watch_cli_once_prints_one_line_per_iteration(tmp_path, model_path, trace_file, capsys):
    (tmp_path / "a.pt.trace.json").write_bytes(trace_file.read_bytes())
    (tmp_path / "b.pt.trace.json.gz").write_bytes(gzip.compress(trace_file.read_bytes()))
    (tmp_path / "c.pt.trace.json.tmp").write_bytes(trace_file.read_bytes()[:1000])
    assert main(["watch", str(tmp_path), "--model", str(model_path), "--once", "--json"]) == 0
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines()]
    assert [(line["file"], line["iteration"]) for line in lines] == [
        ("a.pt.trace.json", "ProfilerStep#1"), ("a.pt.trace.json", "ProfilerStep#2"),
        ("b.pt.trace.json.gz", "ProfilerStep#1"), ("b.pt.trace.json.gz", "ProfilerStep#2")]
    assert set(lines[0]["predicted_ms"]) == {"cpu:test-cpu-a:1t", "cpu:test-cpu-b:1t"}
    assert "c.pt.trace.json: still being written" in err
    assert lines[0]["mode"] == {"cpu:test-cpu-a:1t": "structure", "cpu:test-cpu-b:1t": "structure"}
    assert main(["watch", str(tmp_path), "--model", str(model_path), "--hardware", "test-cpu-a", "--once"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("a.pt.trace.json  ProfilerStep#1  predicted cpu:test-cpu-a:1t ") and "measured" in first
    assert "(structure)" in first  # a CPU trace names no CPU


def test_watch_cli_prices_traces_from_the_named_hardware_by_the_hybrid(tmp_path, model_path, trace_file, capsys):
    (tmp_path / "a.pt.trace.json").write_bytes(trace_file.read_bytes())
    assert main(["watch", str(tmp_path), "--model", str(model_path), "--once", "--json",
                 "--trace-hardware", "cpu:test-cpu-a:1t"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["mode"] == {"cpu:test-cpu-a:1t": "hybrid", "cpu:test-cpu-b:1t": "structure"}
    assert main(["watch", str(tmp_path), "--model", str(model_path), "--once", "--json", "--mode", "structure",
                 "--trace-hardware", "cpu:test-cpu-a:1t"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["mode"] == {"cpu:test-cpu-a:1t": "structure", "cpu:test-cpu-b:1t": "structure"}
