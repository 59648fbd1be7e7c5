"""The scanner's learned event layouts against json: many events written from
a few skeletons (the same keys, order and spacing, as profilers write them),
skeletons that share all but a late member (as a profiler's kinds of events
do), more skeletons than the scanner keeps layouts for, with values that change
length, kind (a number where a string was, null or an object where args
was an object) and escaping from one event to the next, and skeletons that
differ from each other by one space or one key."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from test_trace_fastpaths import (ARG_KEYS, KNOWN_KEYS, OTHER_KEYS, assert_matches_json, escaped_key,
                                  member_value, values)
from test_trace_stream import assert_same_scan, scan_in_chunks, whole

SPACES = ["", " ", "\n    ", "\n      "]


@st.composite
def skeleton(draw):
    top = draw(st.lists(st.sampled_from([k for k in KNOWN_KEYS if k != "args"] + OTHER_KEYS),
                        unique=True, min_size=1, max_size=7))
    args = draw(st.one_of(st.none(), st.lists(st.sampled_from(ARG_KEYS + OTHER_KEYS), unique=True, max_size=6)))
    order = draw(st.permutations(top + ([] if args is None else ["args"])))
    keys = {key: escaped_key(draw, key) for key in order + (args or [])}
    spacing = {key: (draw(st.sampled_from(SPACES)), draw(st.sampled_from(["", " "]))) for key in keys}
    return order, args, keys, spacing


@st.composite
def variant(draw, shape):
    """The skeleton with one later member changed: a key added or dropped in args, or one member's spacing."""
    order, args, keys, spacing = shape
    keys, spacing, args = dict(keys), dict(spacing), None if args is None else list(args)
    if args is not None and draw(st.booleans()):
        if args and draw(st.booleans()):
            args.pop(draw(st.integers(0, len(args) - 1)))
        else:
            new = draw(st.sampled_from(ARG_KEYS + OTHER_KEYS))
            if new not in args:
                args.append(new)
                keys[new] = escaped_key(draw, new)
                spacing[new] = (draw(st.sampled_from(SPACES)), " ")
    else:
        key = draw(st.sampled_from(sorted(spacing)))
        spacing[key] = (draw(st.sampled_from(SPACES)), draw(st.sampled_from(["", " "])))
    return order, args, keys, spacing


@st.composite
def related_skeletons(draw):
    """A few skeletons, some of them variants of others (sharing all but a late member)."""
    shapes = draw(st.lists(skeleton(), min_size=1, max_size=5))
    for _ in range(draw(st.integers(0, 14))):
        shapes.append(draw(variant(draw(st.sampled_from(shapes)))))
    return shapes


@st.composite
def value_for(draw, key):
    """Mostly a value of the usual kind for the key; sometimes any value at all
    (but ts and dur are numbers or null: anything else is an error, tested elsewhere)."""
    if draw(st.integers(0, 9)):
        return draw(member_value(key))
    return draw(st.sampled_from(["null", "7"])) if key in ("ts", "dur") else draw(values)


@st.composite
def event_from(draw, shape):
    order, args, keys, spacing = shape

    def member(key, value):
        before, after = spacing[key]
        return f'{before}"{keys[key]}":{after}{value}'

    members = []
    for key in order:
        if key != "args":
            members.append(member(key, draw(value_for(key))))
        elif draw(st.integers(0, 9)):
            members.append(member(key, "{" + ",".join(member(arg, draw(value_for(arg))) for arg in args) + "}"))
        else:
            members.append(member(key, draw(values)))
    return "{" + ",".join(members) + "}"


@settings(max_examples=80, deadline=None)
@given(shapes=related_skeletons(), data=st.data())
def test_events_of_a_few_skeletons_match_json(shapes, data):
    picks = data.draw(st.lists(st.integers(0, len(shapes) - 1), min_size=1, max_size=80))
    events = [data.draw(event_from(shapes[pick])) for pick in picks]
    doc = ('{"traceEvents": [' + ", ".join(events) + "]}").encode()
    assert_matches_json(doc)
    sizes = data.draw(st.lists(st.integers(min_value=1, max_value=len(doc)), min_size=1, max_size=6))
    assert_same_scan(scan_in_chunks(doc, sizes), whole(doc))


def kineto_op(name, ts: str, args: str) -> str:
    return ('{\n    "ph": "X", "cat": "cpu_op", "name": ' + json.dumps(name) + ', "pid": 7, "tid": 7,\n'
            '    "ts": ' + ts + ', "dur": 1.5,\n    "args": {' + args + '}\n  }')


def test_a_value_of_another_kind_in_a_learnt_place_is_read_as_itself():
    """After two ops of one layout, values of other kinds in the same places:
    none may be read as the learnt kind, skipped with its neighbours or lost."""
    learnt = [kineto_op("aten::mm", "10.250", '"External id": 3, "Input Dims": [[2, 3]]')] * 2
    changed = [
        kineto_op("aten::add", "11", '"External id": "3", "Input Dims": [[4]]'),
        kineto_op("aten::add", "12.0001", '"External id": 4, "Input Dims": null'),
        kineto_op('a"b', "-13.5", '"External id": 5.5, "Input Dims": "[[4]]"'),
        kineto_op("aten::mul", "1e3", '"External id": 18446744073709551616, "Input Dims": {}'),
        kineto_op(5, "14", '"External id": null, "Input Dims": []'),
        kineto_op(None, "15", '"External id": [6], "Input Dims": [[1]]'),
        kineto_op(["x", "y"], "16", '"External id": {"a": 7}, "Input Dims": [[1]]'),
    ]
    doc = ('{"traceEvents": [' + ", ".join(learnt + changed) + "]}").encode()
    assert_matches_json(doc)


def test_a_layout_that_parts_from_the_text_early_is_not_resumed_late():
    """Two layouts share the first member only: one reads cat and dur inside
    args, the other at the top level. An event that fails the first after
    those members must not be finished by the second, whose later members
    happen to match the rest of the text: its args members are not the
    event's cat and dur, and its closing brace is not the event's end."""
    top_level = '{"ph": "X", "cat": "c", "dur": 1, "z": {}}'
    in_args = '{"ph": "X", "args": {"cat": "c", "dur": 1}}'
    longer_args = '{"ph": "X", "args": {"cat": "c", "dur": 1, "z": {}}}'
    doc = ('{"traceEvents": [' + ", ".join([top_level] * 2 + [in_args] * 2 + [longer_args] * 2) + "]}").encode()
    assert_matches_json(doc)
