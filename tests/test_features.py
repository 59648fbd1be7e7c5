"""Sliding windows: layout, tail handling, labels, and streaming equivalence."""

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from shared_data import vendored
from hypothesis import given, settings
from hypothesis import strategies as st

from itercast.features import WindowCollector, windows
from itercast.timeline import FEATURE_COLUMNS, read_timeline

TRACE = vendored("traces/hta/trace_filter/sampled_rank-0.json.gz")
CPU_TRACE = vendored("traces/hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
F = len(FEATURE_COLUMNS)


def cpu_trace(op_counts: list[int]) -> bytes:
    """One ProfilerStep per entry, holding that many sequential ops of 10 us."""
    events, t = [], 0
    for step, count in enumerate(op_counts):
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1,
                       "tid": 1, "ts": t, "dur": 20 * count + 5})
        for k in range(count):
            events.append({"ph": "X", "cat": "cpu_op", "name": "aten::add" if k % 2 else "aten::mm",
                           "pid": 1, "tid": 1, "ts": t + 1 + 20 * k, "dur": 10,
                           "args": {"Input Dims": [[4, 8], [8, 2 + k]], "Input type": ["float", "float"]}})
        t += 20 * count + 10
    return json.dumps({"traceEvents": events}).encode()


@pytest.mark.parametrize("ops, width, stride, starts, counts", [
    (13, 12, 3, [0, 3], [12, 10]),
    (12, 12, 3, [0], [12]),
    (5, 12, 3, [0], [5]),
    (9, 4, 2, [0, 2, 4, 6], [4, 4, 4, 3]),
    (1, 1, 1, [0], [1]),
])
def test_window_starts_and_tail(ops, width, stride, starts, counts):
    w = windows(cpu_trace([ops]), width=width, stride=stride)
    assert w.index[:, 1].tolist() == starts
    assert w.index[:, 2].tolist() == counts
    assert w.x.shape == (len(starts), width * (F + 1) + 24)


def test_padding_blocks_are_all_zero_and_unmistakable():
    w = windows(cpu_trace([13]), width=12, stride=3)
    blocks = w.x[:, : 12 * (F + 1)].reshape(len(w), 12, F + 1)
    assert np.all(blocks[w.mask][:, 0] == 1)  # every real op says so
    assert np.all(blocks[~w.mask] == 0)  # padding: zeros everywhere, is_op included
    assert np.all(w.y[~w.mask] == 0)


def test_windows_never_cross_iterations():
    w = windows(cpu_trace([7, 13, 2]), width=4, stride=2)
    timeline = read_timeline(cpu_trace([7, 13, 2]))
    for it in timeline.iterations:
        mine = w.index[w.index[:, 0] == it.index]
        assert np.all(mine[:, 1] + mine[:, 2] <= it.ops.stop - it.ops.start)
        covered = set()
        for _, start, count in mine.tolist():
            covered.update(range(start, start + count))
        assert covered == set(range(it.ops.stop - it.ops.start))


def test_rows_and_labels_come_from_the_timeline():
    timeline, w = read_timeline(TRACE), windows(TRACE)
    for row, (iteration, start, count) in zip(range(len(w)), w.index.tolist()):
        first = timeline.iterations[iteration].ops.start + start
        ops = slice(first, first + count)
        blocks = w.x[row, : 12 * (F + 1)].reshape(12, F + 1)[:count]
        np.testing.assert_array_equal(blocks[:, 1:], timeline.features[ops])
        np.testing.assert_array_equal(w.y[row, :count, 0], timeline.ops["duration_ns"][ops])
        np.testing.assert_array_equal(w.y[row, :count, 1], timeline.ops["gap_ns"][ops])
        assert w.y_sum[row] == timeline.ops["duration_ns"][ops].sum() + timeline.ops["gap_ns"][ops].sum()


def test_labels_averaged_over_covering_windows_sum_back_to_op_time():
    timeline, w = read_timeline(TRACE), windows(TRACE)
    for it in timeline.iterations:
        n = it.ops.stop - it.ops.start
        total, covering = np.zeros(n), np.zeros(n)
        for row in np.where(w.index[:, 0] == it.index)[0]:
            _, start, count = w.index[row]
            total[start:start + count] += w.y[row, :count].sum(axis=1)
            covering[start:start + count] += 1
        op_time = (total / covering).sum()
        assert op_time == pytest.approx(it.dur_ns - it.head_ns - it.tail_ns, rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(min_value=1, max_value=3000), min_size=1, max_size=8))
def test_streaming_with_random_chunks_is_bit_identical(sizes):
    raw = gzip.decompress(TRACE.read_bytes())
    whole = windows(raw)
    stream, position, index = WindowCollector(), 0, 0
    while position < len(raw):
        size = sizes[index % len(sizes)]
        assert stream.feed(raw[position:position + size]) is None
        position, index = position + size, index + 1
    batch = stream.close()
    for name in ("x", "y", "y_sum", "index"):
        np.testing.assert_array_equal(getattr(batch, name), getattr(whole, name))


def test_collected_windows_and_bad_arguments():
    stream = WindowCollector(width=4, stride=2)
    stream.feed(cpu_trace([9]))
    assert stream.close().index[:, 1].tolist() == [0, 2, 4, 6]
    with pytest.raises(ValueError, match="stride"):
        windows(CPU_TRACE, width=4, stride=5)


def test_the_trace_reader_does_not_import_the_features():
    """trace.py reads events, features.py builds on it: TraceStream makes no windows."""
    import ast

    import itercast
    import itercast.trace

    tree = ast.parse(Path(itercast.trace.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert "itercast.features" not in imported
    with pytest.raises(TypeError, match="unexpected keyword argument 'width'"):
        itercast.TraceStream(width=4, stride=2)


def test_docs_features_md_is_generated_from_the_native_schema():
    """scripts/features-doc rewrites the generated parts; run it after changing the schema."""
    from itercast.schema_doc import SECTIONS, block_names, render

    docs = (Path(__file__).resolve().parent.parent / "docs" / "features.md").read_text()
    assert render(docs) == docs
    assert sorted(block_names(docs)) == sorted(SECTIONS)


def test_a_stale_generated_part_is_rewritten():
    from itercast.schema_doc import render

    stale = "<!-- generated: schema-version -->\nSchema version: 0\n<!-- end generated -->\n"
    assert render(stale) != stale and render(render(stale)) == render(stale)
