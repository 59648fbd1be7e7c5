"""The operator timeline against independent Python readings of the traces (the corpus's, or the vendored subset)."""

import json
from collections import defaultdict

import numpy as np
import pytest
from shared_data import trace_params, vendored

from itercast.cli import main
from itercast.timeline import FEATURE_COLUMNS, read_timeline
from reference import events_of, exact_ns, load_json

RUNTIME = {"cuda_runtime", "Runtime", "cuda_driver"}
KERNEL = {"kernel", "Kernel"}
DEVICE = KERNEL | {"gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
STEP_CATS = {"user_annotation", "cpu_op", "Operator"}

GPU_TRACES = trace_params(lambda row: int(row["kernels"] or 0) > 0)
STEP_TRACES = trace_params(lambda row: int(row["steps"] or 0) > 0)
CUDA_TRACE = vendored("traces/hta/trace_filter/sampled_rank-0.json.gz")


def union_length(intervals):
    total, open_, close = 0, None, None
    for start, end in sorted(intervals):
        if close is None or start > close:
            if close is not None:
                total += close - open_
            open_, close = start, end
        else:
            close = max(close, end)
    return total + (close - open_ if close is not None else 0)


def reference_iterations(path):
    """Per ProfilerStep: kernel count and GPU busy time, straight from the JSON.

    A device activity belongs to the step whose span holds its launch (the
    runtime call with the same correlation), or its own start if unlaunched.
    """
    events = [e for e in events_of(load_json(path)) if e.get("ph") == "X" and e.get("dur") is not None]
    steps = sorted((exact_ns(e["ts"]), exact_ns(e["ts"]) + exact_ns(e["dur"]))
                   for e in events if str(e.get("name", "")).startswith("ProfilerStep#")
                   and e.get("cat") in STEP_CATS)
    launches = {}
    for e in events:
        if e.get("cat") in RUNTIME and "correlation" in e.get("args", {}):
            launches[e["args"]["correlation"]] = exact_ns(e["ts"])
    kernels, busy = defaultdict(int), defaultdict(list)
    for e in events:
        if e.get("cat") not in DEVICE:
            continue
        start = exact_ns(e["ts"])
        when = launches.get(e.get("args", {}).get("correlation", e.get("args", {}).get("cid")), start)
        for index, (step_start, step_end) in enumerate(steps):
            if step_start <= when < step_end:
                busy[index].append((start, start + max(exact_ns(e["dur"]), 0)))
                kernels[index] += e["cat"] in KERNEL
    return [(kernels[i], union_length(busy[i])) for i in range(len(steps))]


@pytest.mark.parametrize("path", STEP_TRACES)
def test_iteration_kernels_and_gpu_busy_match_reference(path):
    timeline = read_timeline(path)
    expected = reference_iterations(path)
    got = [(it.kernels, it.gpu_busy_ns) for it in timeline.iterations]
    assert [k for k, _ in got] == [k for k, _ in expected]
    for (_, ours), (_, theirs) in zip(got, expected):
        assert ours == pytest.approx(theirs, rel=1e-3, abs=1)


@pytest.mark.parametrize("path", STEP_TRACES)
def test_durations_and_gaps_add_up_to_iteration_time_exactly(path):
    timeline = read_timeline(path)
    assert timeline.iterations
    for it in timeline.iterations:
        ops = it.ops
        total = it.head_ns + int(timeline.ops["duration_ns"][ops].sum()) + int(
            timeline.ops["gap_ns"][ops].sum()) + it.tail_ns
        assert total == it.dur_ns, it.name
        if it.ops.stop == it.ops.start:
            assert it.head_ns == it.dur_ns  # an iteration without ops is all head


@pytest.mark.parametrize("path", GPU_TRACES)
def test_kernels_with_a_launch_in_the_trace_are_linked_to_an_op(path):
    timeline = read_timeline(path)
    launched = timeline.kernels_total - timeline.kernels_unlaunched
    assert timeline.kernels_linked >= 0.99 * launched
    # Unlaunched kernels really have no runtime call in the file (launched before profiling).
    events = events_of(load_json(path))
    correlations = {e["args"].get("correlation") for e in events
                    if e.get("cat") in RUNTIME and isinstance(e.get("args"), dict)}
    orphans = sum(1 for e in events if e.get("cat") in KERNEL and e.get("ph") == "X"
                  and e["args"].get("correlation", e["args"].get("cid")) not in correlations)
    assert timeline.kernels_unlaunched <= orphans


def test_feature_matrix_has_the_documented_width():
    timeline = read_timeline(CUDA_TRACE)
    assert timeline.features.shape == (len(timeline.ops["name"]), len(FEATURE_COLUMNS))
    assert timeline.features.dtype == np.float32
    names = [name for name, _ in FEATURE_COLUMNS]
    assert len(set(names)) == len(names)
    phase = timeline.features[:, [names.index(f"phase={p}") for p in ("forward", "backward", "optimizer")]]
    assert np.all(phase.sum(axis=1) == 1)
    np.testing.assert_array_equal(phase.argmax(axis=1), timeline.ops["phase"])


def test_ops_json_cli(capsys):
    assert main(["ops", str(CUDA_TRACE), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [it["name"] for it in summary["iterations"]] == ["ProfilerStep#551", "ProfilerStep#552"]
    assert summary["kernels_total"] == 1154
    assert summary["kernels_linked"] + summary["kernels_unlaunched"] == 1154
    assert all(it["ops"] > 0 and it["gpu_busy_ns"] > 0 for it in summary["iterations"])
    assert sum(it["kernels"] for it in summary["iterations"]) <= 1154
