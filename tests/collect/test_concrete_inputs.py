"""The timed steps are profiled without concrete inputs, which are then taken from one more profiled step."""

import gzip
import json
from dataclasses import replace

import numpy as np
import pytest

from itercast import FEATURE_COLUMNS, op_table
from itercast.collect.concrete_inputs import can_switch_off, copy_concrete_inputs
from itercast.collect.measure import measure, trace_name
from itercast.collect.runner import Config
from itercast.collect.zoo import MODELS


def step(ts: int, dur: int) -> dict:
    return {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{ts}", "ts": ts, "dur": dur}


def op(name: str, dims, ts: int, concrete=None, types=None) -> dict:
    args = {"Input Dims": dims, "Concrete Inputs": concrete or [""] * len(dims),
            "Input type": types or [""] * len(dims)}
    return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": 1, "args": args}


CONV = ("aten::convolution", [[8, 3, 32, 32], [64, 3, 7, 7], []])


def shapes_trace() -> dict:
    return {"traceEvents": [step(0, 100), op(*CONV, 1, ["", "", "[2, 2]"], ["float", "float", "ScalarList"]),
                            op("aten::relu", [[8, 64, 16, 16]], 5), op(*CONV, 9, ["", "", "[1, 1]"])]}


def timed_trace(*steps_ops) -> dict:
    events = []
    for k, names in enumerate(steps_ops):
        events.append(step(1000 * (k + 1), 100))
        for i, (name, dims) in enumerate(names):
            events.append(op(name, dims, 1000 * (k + 1) + 1 + 4 * i))
    events.append(op(*CONV, 5000))  # outside every step: left alone
    return {"traceEvents": events}


def concrete(trace: dict) -> list:
    return [event["args"]["Concrete Inputs"] for event in trace["traceEvents"] if event.get("cat") == "cpu_op"]


def test_each_steps_ops_take_the_concrete_inputs_and_types_of_the_same_op_in_the_shapes_step():
    same = [CONV, ("aten::relu", [[8, 64, 16, 16]]), CONV]
    timed = timed_trace(same, same)
    assert copy_concrete_inputs(timed, shapes_trace()) == (6, 6)
    assert concrete(timed)[:3] == [["", "", "[2, 2]"], [""], ["", "", "[1, 1]"]]
    assert concrete(timed)[3:6] == concrete(timed)[:3]
    assert concrete(timed)[6] == ["", "", ""]
    assert timed["traceEvents"][1]["args"]["Input type"] == ["float", "float", "ScalarList"]


def test_a_step_with_other_ops_matches_by_name_and_occurrence_and_never_across_shapes():
    smaller_conv = (CONV[0], [[2, 3, 8, 8], [64, 3, 7, 7], []])
    other = [("aten::add", [[4]]), CONV, smaller_conv, ("aten::relu", [[8, 64, 16, 16]])]
    timed = timed_trace(other)
    assert copy_concrete_inputs(timed, shapes_trace()) == (2, 4)
    add, first, second, relu, _ = concrete(timed)
    assert first == ["", "", "[2, 2]"] and relu == [""]
    assert second == ["", "", ""] and add == [""]  # its shapes differ from the second reference conv's


needs_switch = pytest.mark.skipif(not can_switch_off(), reason="this torch cannot profile without concrete inputs")


@needs_switch
def test_a_profiled_convnet_keeps_its_strides_and_the_same_features_either_way(tmp_path, quick_protocol):
    config = Config(MODELS["resnet18"], 2, 32, "float32", "cpu", 1)
    tables = {}
    for separate in (True, False):
        out = tmp_path / str(separate)
        out.mkdir()
        row = measure(config, replace(quick_protocol, separate_concrete_inputs=separate), out)
        assert row["profiled_steps"] == quick_protocol.profile_active
        assert [path.name for path in out.iterdir()] == [trace_name(config.id)]  # no partial or shapes file
        with gzip.open(out / trace_name(config.id), "rt") as handle:
            events = json.load(handle)["traceEvents"]
        strides = {tuple(e["args"]["Concrete Inputs"][3:4]) for e in events if e.get("name") == "aten::convolution"}
        assert ("[2, 2]",) in strides and ("",) not in strides
        tables[separate] = op_table(out / trace_name(config.id))
    columns = [name for name, _ in FEATURE_COLUMNS]
    assert len(tables[True]) == len(tables[False]) > 0
    assert np.array_equal(tables[True][columns].to_numpy(), tables[False][columns].to_numpy())


def test_a_tensor_lists_shapes_blank_in_the_timed_step_are_taken_from_the_shapes_step():
    cat = ("aten::cat", [[[32, 1, 192], [32, 64, 192]], []])
    shapes = {"traceEvents": [step(0, 100), op(*cat, 1, ["", "1"], ["TensorList", "Scalar"])]}
    timed = {"traceEvents": [step(1000, 100), op("aten::cat", [[], []], 1001, ["", "1"], ["TensorList", "Scalar"])]}
    assert copy_concrete_inputs(timed, shapes) == (1, 1)
    assert timed["traceEvents"][1]["args"]["Input Dims"] == cat[1]
