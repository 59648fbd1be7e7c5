"""The scanner's fast paths (SWAR numbers, 16-byte key reads, per-field intern
caches, block-wise skipping of unwanted values) against json, on synthetic
documents full of what those paths special-case: escapes and backslash runs at
every offset of a 16/64-byte block, keys just under and over 16 bytes, numbers
of every digit count, and chunk boundaries anywhere."""

import json
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from itercast.trace import read_trace
from reference import events_of, expected_fields
from test_trace import actual_fields
from test_trace_stream import assert_same_scan, scan_in_chunks, whole

# Keys the scanner reads, spelled plainly and with escapes (which must still match).
KNOWN_KEYS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "args"]
ARG_KEYS = ["External id", "external id", "correlation", "cid", "Sequence number", "Fwd thread id",
            "stream", "device", "bytes", "Input Dims", "Input dims", "Input type", "grid", "block"]
OTHER_KEYS = ["Record function id", "Concrete Inputs", "Ev Idx", "a", "", "exactly16bytes__",
              "fifteen_bytes__", "seventeen_bytes__", "k\\", "\"", "ph ", "Input Dimsx"]


def escape_some(rng_bits: int, text: str) -> str:
    """JSON string body of `text`, with some plain characters written as \\u escapes."""
    out = []
    for i, ch in enumerate(text):
        if ch in '"\\':
            out.append("\\" + ch)
        elif rng_bits >> (i % 60) & 1 and ch.isascii() and ch.isprintable():
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


backslash_runs = st.builds(
    lambda pre, run, post: pre + "\\" * run + post,
    st.text(alphabet='ab"{}[],: \\', max_size=70), st.integers(0, 40), st.text(alphabet='ab"]}', max_size=5))

numbers = st.one_of(
    st.integers(min_value=-(10**25), max_value=10**25).map(str),
    st.builds(lambda i, f: f"{i}.{f}", st.integers(0, 10**20), st.text(alphabet="0123456789", min_size=1, max_size=12)),
    st.sampled_from(["0", "-0", "1e3", "2.5E-2", "12345678", "123456789", "1234567.0", "99999999.99999999"]),
)

scalars = st.one_of(numbers, backslash_runs.map(json.dumps), st.sampled_from(["null", "true", "false"]))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=5).map(lambda xs: "[" + ", ".join(xs) + "]"),
    st.lists(st.tuples(backslash_runs, inner), max_size=4).map(
        lambda kv: "{" + ",".join(json.dumps(k) + ":" + v for k, v in kv) + "}")), max_leaves=12)


@st.composite
def member_value(draw, key):
    """JSON text of a value for `key`, of the kind traces give it."""
    if key in ("cat", "name", "ph") or key == "stream" and draw(st.booleans()):
        return json.dumps(draw(backslash_runs))
    if key in ("ts", "dur"):  # within int64 nanoseconds (beyond is an error, tested elsewhere)
        return draw(numbers.filter(lambda n: abs(Decimal(n)) < 10**15))
    if key in ("pid", "tid", "External id", "Sequence number", "bytes", "device"):
        return draw(numbers.filter(lambda n: abs(Decimal(n)) < 2**63))  # the reference has no int64 overflow
    if key.startswith("Input"):  # lists, as in traces (a float here would read back as float, not Decimal)
        return draw(st.lists(values, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"))
    return draw(values)


def escaped_key(draw, key):
    return escape_some(draw(st.integers(0, 2**60)) if draw(st.booleans()) else 0, key)


@st.composite
def member(draw, key):
    key_text = escaped_key(draw, key)
    value = draw(member_value(key))
    space = draw(st.sampled_from(["", " ", "\n      "]))
    return f'{space}"{key_text}":{draw(st.sampled_from(["", " "]))}{value}'


@st.composite
def document(draw):
    events = []
    for _ in range(draw(st.integers(1, 6))):
        members = draw(st.lists(st.sampled_from(KNOWN_KEYS + OTHER_KEYS), unique=True, max_size=8).filter(
            lambda keys: "args" not in keys).flatmap(lambda keys: st.tuples(*map(member, keys))))
        members = list(members)
        if draw(st.booleans()):
            # Unique keys: with duplicates json keeps the last and we may merge (real traces have none).
            args = draw(st.lists(st.sampled_from(ARG_KEYS + OTHER_KEYS), unique=True, max_size=8).flatmap(
                lambda keys: st.tuples(*map(member, keys))))
            members.append('"args": {' + ",".join(args) + "}")
        events.append("{" + ",".join(draw(st.permutations(members))) + "}")
    return ('{"traceEvents": [' + ", ".join(events) + "]}").encode()


def assert_matches_json(data: bytes):
    assert_scan_matches_json(data)
    # Trailing spaces give every event the room the scanner's fast event path
    # needs (it leaves events near a buffer's end to the general path).
    assert_scan_matches_json(data + b" " * 160)


def assert_scan_matches_json(data: bytes):
    trace = read_trace(data)
    events = events_of(json.loads(data, parse_float=Decimal))
    assert len(trace) == len(events)
    for index, event in enumerate(events):
        actual = actual_fields(trace, index)
        for field in ("input_dims", "input_types", "concrete_inputs"):  # raw JSON text, exact decimals
            if actual[field] is not None:
                actual[field] = json.loads(trace.strings[int(trace[field][index])], parse_float=Decimal)
        assert actual == expected_fields(event)


@settings(max_examples=120, deadline=None)
@given(doc=document(), cuts=st.data())
def test_synthetic_events_match_json_in_any_chunking(doc, cuts):
    assert_matches_json(doc)
    sizes = cuts.draw(st.lists(st.integers(min_value=1, max_value=len(doc)), min_size=1, max_size=12))
    assert_same_scan(scan_in_chunks(doc, sizes), whole(doc))


@settings(max_examples=100, deadline=None)
@given(pad=st.integers(0, 80), run=st.integers(0, 70), tail=st.sampled_from(['"', '\\"x"', ']', '}']))
def test_backslash_runs_across_block_edges(pad, run, tail):
    """A run of backslashes ending at every offset of a 16- or 64-byte block, in a skipped value."""
    text = "x" * pad + "\\" * run + tail
    skipped = json.dumps({"s": [text, {"t": text}]})
    doc = ('{"traceEvents": [{"ph": "X", "args": {"Concrete Inputs": ' + skipped + ', "External id": 7, '
           '"Input type": ' + json.dumps([text]) + '}, "name": ' + json.dumps(text) + ', "ts": 1}]}').encode()
    assert_matches_json(doc)
    for size in (1, 7, 16, 63, 64, 65):
        assert_same_scan(scan_in_chunks(doc, [size]), whole(doc))


@settings(max_examples=200, deadline=None)
@given(digits=st.integers(1, 24), frac=st.integers(0, 12), neg=st.booleans())
def test_numbers_of_every_length(digits, frac, neg):
    whole_part = "".join(str((i * 7 + 3) % 10) for i in range(digits))  # no leading zero
    text = ("-" if neg else "") + whole_part + ("." + "5" * frac if frac else "")
    integer = text.split(".")[0] if digits <= 18 else "1"  # the reference has no int64 overflow
    doc = ('{"traceEvents": [{"ts": ' + text + ', "dur":' + text + ', "pid": ' + integer +
           ', "args": {"External id": ' + integer + "}}]}").encode()
    try:
        trace = read_trace(doc)
    except ValueError:
        # ts/dur out of int64 nanoseconds: an error, never a silently wrapped value
        assert abs(Decimal(text)) * 1000 >= 2**63
        return
    assert actual_fields(trace, 0) == expected_fields(json.loads(doc, parse_float=Decimal)["traceEvents"][0])
    for size in (1, 3, 8, 9):
        assert_same_scan(scan_in_chunks(doc, [size]), whole(doc))


container_items = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.text(alphabet='ab[]{}" ,:\\', max_size=20).map(json.dumps),
    st.sampled_from(["[]", "{}", "[[]]", '{"a": "}"}', '["]"]', "true", "null", "[1, [2, [3]]]"]),
)


@settings(max_examples=150, deadline=None)
@given(items=st.lists(container_items, max_size=30), pad=st.integers(0, 70), nested=st.booleans())
def test_containers_of_any_length_and_content(items, pad, nested):
    """Arrays and objects read raw (Input Dims) or skipped, from a few bytes to past the
    256 bytes the 64-byte block skipper handles, with brackets, braces, quotes and
    backslashes inside strings, at every offset of a block."""
    array = "[" + ", ".join(items) + "]"
    if nested:
        array = "[" + array + ", [[" + array + "]]]"
    obj = "{" + ", ".join(f'"k{i}": {item}' for i, item in enumerate(items)) + "}"
    doc = ('{"traceEvents": [{"ph": "X", "name": "' + "n" * pad + '", "args": {"Input Dims": ' + array +
           ', "Other": ' + obj + ', "Input type": ' + obj + ', "External id": 3}, "x": ' + array +
           ', "y": ' + obj + ', "ts": 5}]}').encode()
    assert_matches_json(doc)
    for size in (1, 64, 65, 200):
        assert_same_scan(scan_in_chunks(doc, [size]), whole(doc))
