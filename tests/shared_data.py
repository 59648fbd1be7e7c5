"""Where the read-only shared data lives, and what it holds."""

import csv
import os
from pathlib import Path


REPO = Path(__file__).resolve().parent.parent


def shared_dir() -> Path:
    root = Path(os.environ.get("ITERCAST_SHARED", REPO.parent / "shared"))
    if not (root / "traces" / "MANIFEST.csv").exists():
        raise RuntimeError(
            f"shared data not found at {root}: set ITERCAST_SHARED to the shared/ folder"
        )
    return root


def manifest_rows() -> list[dict]:
    with open(shared_dir() / "traces" / "MANIFEST.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def kineto_traces() -> list[Path]:
    """Every shared file that is a Kineto trace (has traceEvents)."""
    root = shared_dir() / "traces"
    return [root / row["path"] for row in manifest_rows() if row["events"]]
