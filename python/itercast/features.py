"""Sliding-window features over each iteration's op sequence (ETS: width 12, stride 3).

``windows(path)`` gives the arrays a model trains on; :class:`WindowCollector`
takes bytes as they arrive and gives the windows at the end. Windows never cross iterations; a short last
window is padded with all-zero blocks whose ``is_op`` flag is 0, so padding
can never be mistaken for an op.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Sequence

import numpy as np

from itercast import _native
from itercast.trace import CHUNK_SIZE, ScanSession, Source, scan_source

DEFAULT_WIDTH = 12
DEFAULT_STRIDE = 3


@dataclass
class Windows:
    """Window arrays of one trace (or a batch of them).

    ``x``: (windows, row) float32, one row per window (see ``columns``);
    ``y``: (windows, width, 2) float64, (duration, gap) in ns per position, 0 for padding;
    ``y_sum``: (windows,) the window's summed duration + gap;
    ``index``: (windows, 3) int64, (iteration, first op position, ops in the window).
    """

    x: np.ndarray
    y: np.ndarray
    y_sum: np.ndarray
    index: np.ndarray
    width: int
    stride: int
    columns: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.x)

    def __iter__(self) -> Iterator[np.ndarray]:
        """Unpacks as ``X, y, index``."""
        return iter((self.x, self.y, self.index))

    @property
    def mask(self) -> np.ndarray:
        """(windows, width) bool: which positions hold an op."""
        return np.arange(self.width)[None, :] < self.index[:, 2:3]

    @classmethod
    def concatenate(cls, parts: Sequence["Windows"]) -> "Windows":
        first = parts[0]
        return cls(*(np.concatenate([getattr(p, name) for p in parts]) for name in ("x", "y", "y_sum", "index")),
                   width=first.width, stride=first.stride, columns=first.columns)


def _native_timeline(width: int, stride: int, extra: Sequence[float] = ()):
    if width < 1 or not 1 <= stride <= width:
        raise ValueError(f"windows need width >= 1 and 1 <= stride <= width (got width={width}, stride={stride})")
    return _native.Timeline(width=width, stride=stride, extra=list(extra))


def _take(native, width: int, stride: int) -> Windows:
    arrays = native.take_windows()
    return Windows(arrays["x"], arrays["y"], arrays["y_sum"], arrays["index"], width, stride,
                   columns=native.window_columns())


def windows(source: Source, width: int = DEFAULT_WIDTH, stride: int = DEFAULT_STRIDE,
            extra: Sequence[float] = (), chunk_size: int = CHUNK_SIZE) -> Windows:
    """Window features and labels of a whole trace (path or bytes)."""
    native = _native_timeline(width, stride, extra)
    scan_source(native, source, chunk_size)
    return _take(native, width, stride)


def timeline_and_windows(source: Source, width: int = DEFAULT_WIDTH, stride: int = DEFAULT_STRIDE,
                         extra: Sequence[float] = (), chunk_size: int = CHUNK_SIZE):
    """The :class:`~itercast.timeline.Timeline` and its :class:`Windows` from one pass over a trace."""
    from itercast.timeline import Timeline

    native = _native_timeline(width, stride, extra)
    name = scan_source(native, source, chunk_size)
    return Timeline(native, name), _take(native, width, stride)


class WindowCollector:
    """Bytes in as they arrive, windows out at the end: ``feed()`` chunks of any size, then ``close()``.

    Batch-only: no window comes out before ``close()``. An iteration's op labels (durations, gaps)
    take its device work, and Kineto writes every host event before every GPU event, so in a
    profiler file no iteration is known complete before the file ends. What feeding as the file is
    written saves is the time to scan it: ``close()`` then only links and windows
    (docs/features.md, "Windows from a file being written").
    """

    def __init__(self, width: int = DEFAULT_WIDTH, stride: int = DEFAULT_STRIDE, extra: Sequence[float] = (),
                 name: str | None = None):
        self.width, self.stride, self.name = width, stride, name
        self._native = _native_timeline(width, stride, extra)
        self._session = ScanSession(self._native, name)

    def feed(self, data) -> None:
        self._session.feed(data)

    def close(self) -> Windows:
        """Every window of the trace."""
        self._session.finish()
        return _take(self._native, self.width, self.stride)

    def timeline(self):
        """The operator :class:`~itercast.timeline.Timeline` of the stream, once closed."""
        from itercast.timeline import Timeline

        return Timeline(self._native, self.name)

    @property
    def bytes_fed(self) -> int:
        return self._native.bytes_fed
