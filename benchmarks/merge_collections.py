"""One collection made of several: a manifest.csv (and labels.csv) whose trace paths point into each.

    PYTHONPATH=python python3 benchmarks/merge_collections.py OUT DIR [DIR ...]

Rows keep their columns; a configuration in more than one collection is taken from the first. The
traces stay where they are (absolute paths: an evaluation cache of the merged collection also serves
each collection alone, its keys being the same trace paths): e.g. the zoo evaluated with lines collected
apart added to it.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from itercast.collect.manifest import LABELS_NAME, MANIFEST_NAME


def read_rows(path: Path) -> tuple[list[str], list[dict]]:
    if not path.exists():
        return [], []
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def merge(out: Path, sources: list[Path]) -> tuple[int, int]:
    """Writes OUT's manifest and label passes; returns (configurations, label pass rows)."""
    out.mkdir(parents=True, exist_ok=True)
    columns, manifest, seen = [], [], set()
    label_columns, labels = [], []
    for source in sources:
        fields, rows = read_rows(source / MANIFEST_NAME)
        columns += [c for c in fields if c not in columns]
        for row in rows:
            if row["config_id"] in seen:
                continue
            seen.add(row["config_id"])
            row["trace_path"] = str((source / row["trace_path"]).resolve())
            manifest.append(row)
        fields, rows = read_rows(source / LABELS_NAME)
        label_columns += [c for c in fields if c not in label_columns]
        labels += rows
    for name, fields, rows in ((MANIFEST_NAME, columns, manifest), (LABELS_NAME, label_columns, labels)):
        if rows:
            with open(out / name, "w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=fields)
                writer.writeheader()
                writer.writerows(rows)
    return len(manifest), len(labels)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    configurations, passes = merge(Path(sys.argv[1]), [Path(a) for a in sys.argv[2:]])
    print(f"{configurations} configurations, {passes} label pass rows in {sys.argv[1]}")
