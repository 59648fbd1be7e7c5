"""Where the test data lives: a small subset vendored under tests/data (always there), and the
external corpus, the read-only shared/ folder ($ITERCAST_SHARED, or ../shared next to the
repository root), which the corpus-wide tests use and skip without."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
VENDORED = Path(__file__).resolve().parent / "data"  # same layout as shared/: traces/, workloads/
CORPUS_ABSENT = "external trace corpus absent: set ITERCAST_SHARED to the shared/ folder to run these"
# Traces larger than this (uncompressed) make a corpus-wide test slow: json.loads alone takes seconds.
SLOW_TRACE_BYTES = 20_000_000


def corpus_dir() -> Path | None:
    """The shared/ folder, or None when there is none. A set ITERCAST_SHARED that holds no corpus
    is an error, not a skip: CI sets it, and must run every test."""
    configured = os.environ.get("ITERCAST_SHARED")
    root = Path(configured) if configured else REPO.parent / "shared"
    if (root / "traces" / "MANIFEST.csv").exists():
        return root
    if configured:
        raise FileNotFoundError(f"ITERCAST_SHARED={configured} holds no traces/MANIFEST.csv")
    return None


def shared_dir() -> Path:
    """The shared/ folder; RuntimeError (which the tests that need it turn into a skip) without one."""
    root = corpus_dir()
    if root is None:
        raise RuntimeError(CORPUS_ABSENT)
    return root


def vendored(relative: str) -> Path:
    """A file of the vendored subset, by its path under shared/ (e.g. "traces/hta/..."). """
    return VENDORED / relative


def manifest_rows(traces: Path) -> list[dict]:
    with open(traces / "MANIFEST.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def kineto_rows(traces: Path, keep=lambda row: True) -> list[dict]:
    """Manifest rows of the Kineto traces (those with traceEvents) that pass `keep`."""
    return [row for row in manifest_rows(traces) if row["events"] and keep(row)]


def trace_dir() -> Path:
    """traces/ of the corpus when present, else of the vendored subset."""
    root = corpus_dir()
    return (root or VENDORED) / "traces"


def trace_paths(keep=lambda row: True) -> list[Path]:
    traces = trace_dir()
    return [traces / row["path"] for row in kineto_rows(traces, keep)]


def trace_params(keep=lambda row: True) -> list:
    """pytest params over the Kineto traces whose manifest row passes `keep`: the corpus's when it is
    present (the vendored files are copies of some of them); otherwise the vendored ones, and one
    skipped param that stands for the rest of the corpus. Traces over SLOW_TRACE_BYTES are marked slow."""
    traces = trace_dir()
    params = [pytest.param(traces / row["path"], id=Path(row["path"]).name[:40],
                           marks=[pytest.mark.slow] if int(row["raw_bytes"]) > SLOW_TRACE_BYTES else [])
              for row in kineto_rows(traces, keep)]
    if corpus_dir() is None:
        params.append(pytest.param(None, id="corpus", marks=pytest.mark.skip(reason=CORPUS_ABSENT)))
    return params
