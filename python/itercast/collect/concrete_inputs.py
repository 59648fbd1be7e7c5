"""Timing a profiled step without the profiler holding its tensors.

With ``record_shapes=True``, ``torch.profiler`` records each op's concrete
inputs (a convolution's stride and padding, a dropout's p), and keeps the
inputs alive until the profile ends (pytorch/pytorch#133444). Every tensor a
step frees is then still held, so the next allocations come from fresh pages
that the kernel must fault in and zero, and the large-activation models' op
times in the trace were inflated most (up to 2.6x; docs/decisions.md,
benchmarks/profiler_inflation.py).

So a configuration is profiled twice: the timed steps with concrete inputs
off (the trace keeps single scalars, but a list argument such as a stride is
blank and typed "", and so are a tensor list's shapes), then one step with
them on, whose ops' input arguments are copied onto the timed ops, matched by
position in the step and checked by name and by the shapes both recorded.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

# The arguments that recording concrete inputs fills in (strides too, in the torch releases that write
# them only with concrete inputs).
CONCRETE_ARGS = ("Concrete Inputs", "Input type", "Input Dims", "Input Strides")


def can_switch_off() -> bool:
    """Whether this torch can profile shapes without concrete inputs (torch >= 2.3)."""
    import torch

    return hasattr(torch._C._profiler, "_set_record_concrete_inputs_enabled_val")


def record_concrete_inputs(enabled: bool) -> None:
    import torch

    torch._C._profiler._set_record_concrete_inputs_enabled_val(enabled)


def load_trace_json(path: Path) -> dict:
    """A gzipped Kineto trace as written by the profiler, parsed whole (the collection's own traces)."""
    with gzip.open(path, "rt") as handle:
        return json.load(handle)


def save_trace_json(trace: dict, path: Path) -> None:
    # json.dumps, not json.dump: dump streams through the pure-Python encoder, 1 s of a small model's 2.4 s
    # collection; one string from the C encoder, compressed in one call, takes a fraction of it.
    text = json.dumps(trace, separators=(",", ":"))
    with gzip.open(path, "wt", compresslevel=6) as handle:
        handle.write(text)


def is_profiler_step(event: dict) -> bool:
    """A host-side ProfilerStep#N span."""
    return (event.get("cat") == "user_annotation" and event.get("ph") == "X"
            and str(event.get("name", "")).startswith("ProfilerStep#"))


def _steps(events: list[dict]) -> list[list[dict]]:
    """Each ProfilerStep#'s host ops (category cpu_op), in start order."""
    spans = sorted((event["ts"], event["ts"] + event["dur"]) for event in events if is_profiler_step(event))
    ops = sorted((event for event in events if event.get("cat") == "cpu_op" and event.get("ph") == "X"),
                 key=lambda event: (event["ts"], -event["dur"]))  # an op before the ops it nests
    steps: list[list[dict]] = [[] for _ in spans]
    k = 0
    for op in ops:
        while k < len(spans) and op["ts"] >= spans[k][1]:
            k += 1
        if k == len(spans):
            break
        if op["ts"] >= spans[k][0]:
            steps[k].append(op)
    return steps


def copy_concrete_inputs(timed: dict, shapes: dict) -> tuple[int, int]:
    """Gives each op of ``timed``'s steps the input arguments (``CONCRETE_ARGS``) of the same op of
    ``shapes``' (first) step. Ops match by position in the step when the steps run the same op names in
    the same order, else by name and occurrence; a pair whose recorded shapes differ is left alone.
    Returns (ops given concrete inputs, timed ops in steps)."""
    [reference, *_] = _steps(shapes["traceEvents"]) or [[]]
    by_name: dict[str, list[dict]] = {}
    for op in reference:
        by_name.setdefault(op["name"], []).append(op)
    given = total = 0
    for ops in _steps(timed["traceEvents"]):
        total += len(ops)
        for op, source in _pairs(ops, reference, by_name):
            args, extra = op.setdefault("args", {}), source.get("args", {})
            if not _same_shapes(args.get("Input Dims", []), extra.get("Input Dims", [])):
                continue
            args.update({key: extra[key] for key in CONCRETE_ARGS if key in extra})
            given += 1
    return given, total


def _same_shapes(timed: list, full: list) -> bool:
    """Whether every input shape the timed op recorded is the full op's (a blank one is a tensor list)."""
    return len(timed) == len(full) and all(a == b or a == [] for a, b in zip(timed, full))


def _pairs(ops: list[dict], reference: list[dict], by_name: dict[str, list[dict]]):
    if [op["name"] for op in ops] == [op["name"] for op in reference]:
        return zip(ops, reference)
    seen: dict[str, int] = {}
    pairs = []
    for op in ops:
        n = seen[op["name"]] = seen.get(op["name"], -1) + 1
        if n < len(by_name.get(op["name"], ())):
            pairs.append((op, by_name[op["name"]][n]))
    return pairs


def merge_traces(timed_path: Path, shapes_path: Path) -> tuple[tuple[int, int], dict]:
    """Rewrites ``timed_path`` with the concrete inputs of ``shapes_path`` (see copy_concrete_inputs); returns
    the counts and the merged trace as written (so that nobody reads it back)."""
    timed = load_trace_json(timed_path)
    counts = copy_concrete_inputs(timed, load_trace_json(shapes_path))
    save_trace_json(timed, timed_path)
    return counts, timed
