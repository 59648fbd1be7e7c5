"""Straightforward pure-Python readings of traces, to check the native code against."""

from __future__ import annotations

import gzip
import json
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

MISSING = -(2**63)


def load_json(path: Path | bytes):
    """The whole document as Python's json reads it, decimals kept exact."""
    raw = path if isinstance(path, bytes) else Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw, parse_float=Decimal)


def events_of(document) -> list:
    return document if isinstance(document, list) else document.get("traceEvents", [])


def exact_ns(value) -> int:
    """Microseconds (int or exact Decimal) to nanoseconds, nearest, ties to even."""
    if value is None:
        return MISSING
    return int((Decimal(value) * 1000).to_integral_value(rounding=ROUND_HALF_EVEN))


def exact_int(value) -> int:
    """An integer field as the scanner reads it: integral and within int64, else MISSING."""
    if isinstance(value, bool):
        return MISSING
    if isinstance(value, Decimal) and value == value.to_integral_value():
        value = int(value)
    if isinstance(value, int) and -(2**63) <= value < 2**63:
        return value
    return MISSING


def last_of(args: dict, *keys):
    """The value of whichever of `keys` comes last in the object (JSON: last wins)."""
    found = None
    for key, value in args.items():
        if key in keys:
            found = value
    return found


def dim3(value) -> tuple[int, int, int]:
    if (isinstance(value, list) and len(value) == 3
            and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31 for v in value)):
        return tuple(value)
    return (-1, -1, -1)


def expected_fields(event: dict) -> dict:
    """What the scanner must report for one event, with strings as text (None = absent)."""
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    ph = event.get("ph")
    out = {
        "ph": ord(ph[0]) if isinstance(ph, str) and ph else 0,
        "cat": event.get("cat") if isinstance(event.get("cat"), str) else None,
        "name": event.get("name") if isinstance(event.get("name"), str) else None,
        "ts_ns": exact_ns(event.get("ts")),
        "dur_ns": exact_ns(event.get("dur")),
        "external_id": exact_int(last_of(args, "External id", "external id")),
        "correlation": exact_int(last_of(args, "correlation", "cid")),
        "sequence_number": exact_int(args.get("Sequence number")),
        "fwd_thread_id": exact_int(args.get("Fwd thread id")),
        "device": exact_int(args.get("device")),
        "bytes": exact_int(args.get("bytes")),
        "input_dims": last_of(args, "Input Dims", "Input dims"),
        "input_types": args.get("Input type"),
        "concrete_inputs": args.get("Concrete Inputs"),
    }
    flags = 0
    for field, source, bit in (("pid", event.get("pid"), 1), ("tid", event.get("tid"), 2),
                               ("stream", args.get("stream"), 4)):
        if isinstance(source, str):
            flags |= bit
            out[field] = ("str", source)
        else:
            out[field] = ("int", exact_int(source))
    out["flags"] = flags
    out["grid"] = dim3(args.get("grid"))
    out["block"] = dim3(args.get("block"))
    return out
