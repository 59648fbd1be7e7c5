"""The parts of docs/features.md that the native feature schema defines, generated from it.

docs/features.md marks each part ``<!-- generated: NAME -->`` ... ``<!-- end generated -->``;
:func:`render` rewrites what lies between from the native module (``scripts/features-doc``
writes the file; tests/test_features.py checks it is current).
"""

from __future__ import annotations

import re

from itercast import _native

_BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.DOTALL)


def schema_version() -> str:
    return (f"Schema version: {_native.FEATURE_SCHEMA_VERSION} (models record it and refuse another; "
            "its history: csrc/timeline/feature_schema.hpp).\n")


def window_aggregates() -> str:
    aggregates = [c for c in _native.Timeline(width=1, stride=1).window_columns() if c.startswith("agg.")]
    return f"After the `width` op blocks, {len(aggregates)} aggregates:\n{_code_list(aggregates)}.\n"


def model_row() -> str:
    layout = _native.row_layout()
    neighbours = _code_list(layout.neighbour_features)
    parts = [f"the op's {layout.op_features} features", f"its window's {layout.aggregates} aggregates",
             f"the view of the ops before and after it (`prev.` and `next.`: {neighbours}; zeros at the window's edges)",
             _code_list(layout.position_columns), "the iteration's context: " + _code_list(layout.context_columns)]
    return (f"A model row ({layout.columns} columns) holds, in order: " + "; ".join(parts) + ".\n")


def _code_list(names) -> str:
    return ", ".join(f"`{name}`" for name in names)


def op_columns() -> str:
    rows = ["| # | column | meaning |", "|---|---|---|"]
    rows += [f"| {i} | `{name}` | {meaning} |" for i, (name, meaning) in enumerate(_native.feature_columns())]
    return "\n".join(rows) + "\n"


SECTIONS = {"schema-version": schema_version, "window-aggregates": window_aggregates, "model-row": model_row,
            "op-columns": op_columns}


def render(text: str) -> str:
    """``text`` with every generated block's body made anew; a block of an unknown name raises KeyError."""
    return _BLOCK.sub(lambda m: m.group(1) + SECTIONS[m.group("name")]() + m.group(4), text)


def block_names(text: str) -> list[str]:
    return [m.group("name") for m in _BLOCK.finditer(text)]
