"""The scanner against Python's json module on every trace (the corpus's, or the vendored subset), and its API."""

import gzip
import json
from decimal import Decimal

import numpy as np
import pytest
from shared_data import trace_params, trace_paths

from itercast.trace import read_trace
from reference import events_of, expected_fields, load_json



def actual_fields(trace, index: int) -> dict:
    cols, strings = trace.columns, trace.strings

    def text(column):
        value = int(cols[column][index])
        return strings[value] if value >= 0 else None

    def int_or_str(column, bit):
        value = int(cols[column][index])
        return ("str", strings[value]) if cols["flags"][index] & bit else ("int", value)

    raw_dims, raw_types, raw_concrete = text("input_dims"), text("input_types"), text("concrete_inputs")
    return {
        "ph": int(cols["ph"][index]),
        "cat": text("cat"),
        "name": text("name"),
        "ts_ns": int(cols["ts_ns"][index]),
        "dur_ns": int(cols["dur_ns"][index]),
        "external_id": int(cols["external_id"][index]),
        "correlation": int(cols["correlation"][index]),
        "sequence_number": int(cols["sequence_number"][index]),
        "fwd_thread_id": int(cols["fwd_thread_id"][index]),
        "device": int(cols["device"][index]),
        "bytes": int(cols["bytes"][index]),
        "input_dims": None if raw_dims is None else json.loads(raw_dims),
        "input_types": None if raw_types is None else json.loads(raw_types),
        "concrete_inputs": None if raw_concrete is None else json.loads(raw_concrete),
        "pid": int_or_str("pid", 1),
        "tid": int_or_str("tid", 2),
        "stream": int_or_str("stream", 4),
        "flags": int(cols["flags"][index]),
        "grid": tuple(int(cols[f"grid_{a}"][index]) for a in "xyz"),
        "block": tuple(int(cols[f"block_{a}"][index]) for a in "xyz"),
    }


@pytest.mark.parametrize("path", trace_params())
def test_every_event_and_field_matches_json(path):
    document = load_json(path)
    events = events_of(document)
    trace = read_trace(path)
    assert len(trace) == len(events)
    for index, event in enumerate(events):
        expected = expected_fields(event)
        actual = actual_fields(trace, index)
        if actual != expected:
            diff = {k: (actual[k], expected[k]) for k in expected if actual[k] != expected[k]}
            pytest.fail(f"{path.name} event {index}: (ours, json) differ: {diff}")
    raw = gzip.decompress(path.read_bytes())
    offsets = trace["offset"]
    assert np.all(np.diff(offsets) > 0)
    assert all(raw[o] == ord("{") for o in offsets[:: max(1, len(offsets) // 1000)].tolist())
    assert trace.nbytes == len(raw)
    if isinstance(document, dict):
        expected_meta = {k: v for k, v in document.items() if k != "traceEvents"}
        ours = {k: json.loads(v, parse_float=Decimal) for k, v in trace.raw_metadata.items()}
        assert ours == expected_meta


@pytest.mark.parametrize("size_hint", [0, 1 << 20])
def test_columns_grow_past_any_size_hint(size_hint):
    """Columns reserved up front or grown from nothing (through large allocations, whose memory
    is kept and reused once freed: the second pass runs in the first one's) hold the same events."""
    from itercast import _native
    from itercast.trace import scan_source

    largest = max(trace_paths(), key=lambda path: path.stat().st_size)
    expected = read_trace(largest)
    for _ in range(2):
        scanner = _native.Scanner(size_hint)
        scan_source(scanner, largest)
        columns = scanner.take_events()
        assert len(columns["offset"]) == len(expected) > 50_000
        for field, values in columns.items():
            np.testing.assert_array_equal(values, expected[field], err_msg=field)
        del columns, scanner
