"""Chunking, edge cases of the format, and bad input."""

import gzip
import json
import random

import numpy as np
import pytest
from shared_data import vendored
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from itercast import TraceFormatError, _native, TraceTruncatedError
from itercast.trace import MISSING, TraceStream, read_trace
from reference import events_of, expected_fields

SMALL_TRACE = vendored("traces/hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz")
MEDIUM_TRACE = vendored("traces/hta/trace_filter/sampled_rank-0.json.gz")


def scan_in_chunks(data: bytes, sizes) -> tuple[dict, list, list]:
    """Feeds `data` cut at the given chunk sizes (cycled) to the native scanner."""
    scanner = _native.Scanner()
    view, position, index = memoryview(data), 0, 0
    while position < len(data):
        size = sizes[index % len(sizes)]
        scanner.feed(view[position:position + size])
        position += size
        index += 1
    scanner.finish()
    return scanner.take_events(), scanner.strings(), scanner.metadata()


def whole(data: bytes):
    return scan_in_chunks(data, [len(data)])


def assert_same_scan(left, right):
    (cols_a, strings_a, meta_a), (cols_b, strings_b, meta_b) = left, right
    assert strings_a == strings_b
    assert meta_a == meta_b
    assert cols_a.keys() == cols_b.keys()
    for key in cols_a:
        np.testing.assert_array_equal(cols_a[key], cols_b[key], err_msg=key)


@pytest.fixture(scope="module")
def small_raw() -> bytes:
    return gzip.decompress(SMALL_TRACE.read_bytes())


@pytest.fixture(scope="module")
def medium_raw() -> bytes:
    return gzip.decompress(MEDIUM_TRACE.read_bytes())


def test_one_byte_chunks_equal_whole_buffer(small_raw):
    assert_same_scan(scan_in_chunks(small_raw, [1]), whole(small_raw))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(min_value=1, max_value=5000), min_size=1, max_size=30))
def test_random_chunk_boundaries_equal_whole_buffer(medium_raw, sizes):
    assert_same_scan(scan_in_chunks(medium_raw, sizes), whole(medium_raw))


@settings(max_examples=60, deadline=None)
@given(cut=st.data())
def test_boundaries_inside_every_token_kind(cut):
    doc = (b'{"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "cpu_op", '
           b'"name": "aten::\\"quoted\\"\\u00e9\\ud83d\\ude00", "pid": "Spans", "tid": 7, '
           b'"ts": 1623143089861.123, "dur": 2.5e1, "args": {"External id": 12, "Input Dims": '
           b'[[8, 3, 224, 224], []], "nested": {"a": [1, {"b": null}]}, "stream": "hip 3", "grid": [1, 2, 3]}}'
           b', {"ph": "i", "name": "x", "ts": -5, "s": "t"}], "deviceProperties": [{"name": "GPU \\"A\\""}]}')
    sizes = cut.draw(st.lists(st.integers(min_value=1, max_value=len(doc)), min_size=1, max_size=10))
    assert_same_scan(scan_in_chunks(doc, sizes), whole(doc))


def read_doc(document) -> tuple:
    raw = json.dumps(document).encode()
    return read_trace(raw), events_of(document)


def test_bare_array_and_metadata_after_events():
    trace, events = read_doc([{"ph": "X", "name": "a", "ts": 1, "dur": 2}, {"ph": "M", "name": "b"}])
    assert len(trace) == 2 and trace.event(1)["name"] == "b"
    trace, _ = read_doc({"traceEvents": [{"ph": "X", "name": "a"}],
                         "deviceProperties": [{"name": "NVIDIA H100", "numSms": 132}],
                         "distributedInfo": {"rank": 3}})
    assert trace.devices == ["NVIDIA H100"]
    assert trace.distributed_info == {"rank": 3}


def test_values_of_every_kind_map_as_documented():
    event = {"ph": "X", "cat": None, "name": "n" * 20000, "pid": "Traces", "tid": "stream 7",
             "ts": None, "args": {"External id": True, "correlation": 1.5, "device": 2.0,
                                  "cid": 9, "bytes": "12", "grid": [1, 2], "block": [1, 2, 3]}}
    trace, _ = read_doc({"traceEvents": [event]})
    got = trace.event(0)
    assert got["name"] == "n" * 20000
    assert got["cat"] is None and got["ts_ns"] is None
    assert got["flags"] == 3 and trace.strings[got["pid"]] == "Traces"
    assert got["external_id"] is None  # a bool is not an integer
    assert got["correlation"] == 9  # cid comes after correlation: last wins
    assert got["device"] == 2 and got["bytes"] is None
    assert (got["grid_x"], got["block_x"], got["block_z"]) == (-1, 1, 3)


@pytest.mark.parametrize("text, expected_ns", [
    ("1623143089861.123", 1623143089861123),
    ("5588.3854", 5588385),  # sub-ns digits round to nearest
    ("0.0005", 0),  # exact tie rounds to even
    ("0.0015", 2),
    ("1.5e3", 1500000),
    ("-3", -3000),
    ("9223372036854775.807", 2**63 - 1),
    ("0.000000000000000000000000000000000000000000001", 0),
])
def test_timestamps_convert_exactly(text, expected_ns):
    trace = read_trace(b'{"traceEvents": [{"ph": "X", "ts": ' + text.encode() + b"}]}")
    assert trace["ts_ns"][0] == expected_ns


def test_timestamp_out_of_range_is_an_error():
    with pytest.raises(TraceFormatError, match="ts out of range"):
        read_trace(b'{"traceEvents": [{"ts": 1e300}]}')
    with pytest.raises(TraceFormatError, match="ts out of range"):
        read_trace(b'{"traceEvents": [{"ts": 9223372036854775.808}]}')


@pytest.mark.parametrize("document, message", [
    (b'{"traceEvents": [{"ph": "X",, }]}', "expected a key"),
    (b'{"traceEvents": [{"ph": "X"} {"ph": "X"}]}', "expected ',' or ']'"),
    (b'{"traceEvents": [{"args": {"a": [1, 2}}]}', "mismatched bracket"),
    (b'{"traceEvents": 5}', "traceEvents is not an array"),
    (b'{"traceEvents": []} xyz', "unexpected data after"),
    (b'<html>', "must start with"),
    (b'{"traceEvents": [{"name": "bad \\q escape"}]}', "invalid escape"),
])
def test_malformed_input_names_offset_and_excerpt(document, message):
    with pytest.raises(TraceFormatError, match=message) as info:
        read_trace(document)
    assert 0 <= info.value.offset <= len(document)
    assert info.value.line == 1


def test_error_in_a_file_names_path_line_and_offset(tmp_path):
    path = tmp_path / "bad.json"
    path.write_bytes(b'{"traceEvents": [\n{"ph": "X"},\n{"ph": "X", "ts": tru}\n]}')
    with pytest.raises(TraceFormatError, match="ts is not a number") as info:
        read_trace(path)
    error = info.value
    assert error.path == str(path) and error.line == 3
    assert path.read_bytes()[error.offset:].startswith(b"tru}")
    assert str(path) in str(error) and "line 3" in str(error)


@pytest.mark.parametrize("cut", [1, 40, 400, 5000])
def test_truncated_file_says_truncated(small_raw, tmp_path, cut):
    path = tmp_path / "cut.json"
    path.write_bytes(small_raw[:cut])
    with pytest.raises(TraceTruncatedError, match="truncated"):
        read_trace(path)


def test_truncated_gzip_says_truncated(tmp_path):
    packed = SMALL_TRACE.read_bytes()
    path = tmp_path / "cut.json.gz"
    path.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(TraceTruncatedError, match="gzip stream is truncated"):
        read_trace(path)


def test_empty_and_non_kineto_documents():
    with pytest.raises(TraceTruncatedError, match="empty"):
        read_trace(b"   ")
    with pytest.raises(TraceFormatError, match="not a Kineto trace"):
        read_trace(b'{"nodes": []}')


def test_plain_gzip_and_tmp_files_read_alike(small_raw, tmp_path):
    plain, packed, tmp = tmp_path / "t.json", tmp_path / "t.json.gz", tmp_path / "t.json.tmp"
    plain.write_bytes(small_raw)
    packed.write_bytes(gzip.compress(small_raw))
    tmp.write_bytes(gzip.compress(small_raw[:1000]) + gzip.compress(small_raw[1000:]))  # two members
    columns = [read_trace(p, chunk_size=777).columns for p in (plain, packed, tmp)]
    for other in columns[1:]:
        for key in columns[0]:
            np.testing.assert_array_equal(columns[0][key], other[key])


def mutate(data: bytes, rng: random.Random) -> bytes:
    kind = rng.randrange(3)
    position = rng.randrange(len(data))
    if kind == 0:
        return data[:position]
    if kind == 1:
        return data[:position] + bytes([rng.randrange(256)]) + data[position + 1:]
    return data[:position] + data[position + rng.randrange(1, 64):]


def python_events(data: bytes):
    try:
        return events_of(json.loads(data, parse_float=__import__("decimal").Decimal))
    except (ValueError, UnicodeDecodeError, RecursionError, AttributeError):
        return None


@pytest.mark.parametrize("seed", range(4))
def test_fuzzed_traces_parse_or_raise_and_agree_with_json(small_raw, seed):
    """Truncation, byte flips and deletions never crash; what parses agrees with json."""
    rng = random.Random(seed)
    outcomes = {"parsed": 0, "raised": 0}
    for _ in range(150):
        data = mutate(small_raw, rng)
        chunk = rng.choice([1 << 20, rng.randrange(1, 4096)])
        try:
            trace = read_trace(data, chunk_size=chunk)
        except TraceFormatError:
            outcomes["raised"] += 1
            continue
        outcomes["parsed"] += 1
        events = python_events(data)
        if events is None:
            continue  # we are more lenient than json here; that is allowed
        assert len(trace) == len(events)
        for index in rng.sample(range(len(events)), min(20, len(events))):
            assert expected_fields(events[index])["ts_ns"] == trace["ts_ns"][index]
    assert outcomes["parsed"] > 0 and outcomes["raised"] > 0


def test_feed_returns_events_as_they_complete(small_raw):
    stream = TraceStream()
    first = stream.feed(small_raw[: len(small_raw) // 2])
    second = stream.feed(small_raw[len(small_raw) // 2:])
    last = stream.close()
    total = len(first["ts_ns"]) + len(second["ts_ns"]) + len(last["ts_ns"])
    assert len(first["ts_ns"]) > 0 and total == len(read_trace(small_raw))
    assert len(last["ts_ns"]) == 0


def test_missing_sentinel_is_int64_min():
    assert MISSING == -(2**63)


def test_empty_string_as_the_first_interned_string():
    """Used to crash: interning "" before any other string pointed into a chunk not yet allocated."""
    trace = read_trace(b'{"traceEvents": [{"cat": "", "name": ""}, {"name": "a"}, {"cat": ""}]}')
    assert [trace.event(i)["name"] for i in range(3)] == ["", "a", None]
    assert trace.event(2)["cat"] == ""
