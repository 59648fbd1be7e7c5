"""Follow a directory where the profiler writes traces; predict each one as it completes.

Kineto writes ``NAME.tmp`` and renames it to ``NAME`` at the end; torch's
``tensorboard_trace_handler`` leaves one ``*.pt.trace.json[.gz]`` per cycle
(gzip written in place). The watcher polls the directory (no inotify
dependency), reads only the bytes each file gained since the last poll into
a :class:`~itercast.online.feed.TraceFeed`, and finishes from that stream
state when the file is complete: renamed from ``.tmp``, a gzip stream that
reached its end, or a plain file whose size held still for one poll.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from itercast.errors import ItercastError
from itercast.online.feed import TraceFeed, iterations_by_target, read_from
from itercast.online.targets import Target

TRACE_SUFFIXES = (".json", ".json.gz")
WRITING_SUFFIX = ".tmp"


@dataclass(frozen=True)
class WatchedIteration:
    file: str
    iteration: str
    predicted_ms: dict[str, float]  # per target hardware
    measured_ms: float | None  # the iteration's duration in the trace (profiler attached)
    modes: dict[str, str] = field(default_factory=dict)  # per target hardware: how it was priced

    def describe(self) -> str:
        measured = f"{self.measured_ms:.3f} ms" if self.measured_ms is not None else "-"
        predicted = "  ".join(f"{key} {ms:.3f} ms" + (f" ({self.modes[key]})" if key in self.modes else "")
                              for key, ms in self.predicted_ms.items())
        return f"{self.file}  {self.iteration}  predicted {predicted}  measured {measured}"

    def to_dict(self) -> dict:
        return {"file": self.file, "iteration": self.iteration, "predicted_ms": self.predicted_ms,
                "measured_ms": self.measured_ms, "mode": self.modes}


@dataclass
class CompletedTrace:
    """A trace file that is complete: its iterations, or why it could not be predicted."""

    file: str
    iterations: list[WatchedIteration] = field(default_factory=list)
    error: str | None = None


@dataclass
class _Followed:
    """A trace file being followed: how far it has been read, into which stream."""

    feed: TraceFeed
    offset: int = 0
    size_at_last_poll: int = -1
    was_tmp: bool = False


class TraceWatcher:
    """``poll()`` once per interval; each call returns the traces that completed since the last."""

    def __init__(self, directory: str | os.PathLike, targets: list[Target]):
        self.directory = Path(directory)
        self.targets = targets
        self._followed: dict[str, _Followed] = {}
        self._finished: set[str] = set()
        if not self.directory.is_dir():
            raise ItercastError(f"{self.directory} is not a directory")

    def poll(self, final: bool = False) -> list[CompletedTrace]:
        """Reads what each trace file gained. ``final``: also finish every file not named ``.tmp``."""
        sizes = self._trace_files()
        names = {name.removesuffix(WRITING_SUFFIX) for name in sizes} - self._finished
        for gone in set(self._followed) - names:  # deleted before it completed
            del self._followed[gone]
        completed = []
        for name in sorted(names):
            writing = name not in sizes
            path = self.directory / (name + WRITING_SUFFIX if writing else name)
            followed = self._followed.setdefault(name, _Followed(TraceFeed(self.targets, name=name)))
            try:
                self._read_new_bytes(followed, path)
            except FileNotFoundError:  # renamed or deleted since the listing: next poll sees it
                continue
            except ItercastError as error:
                completed.append(self._finish(name, error=error))
                continue
            if not writing and (final or self._is_complete(followed, sizes[name])):
                completed.append(self._finish(name))
                continue
            followed.size_at_last_poll = sizes[name + WRITING_SUFFIX] if writing else sizes[name]
            followed.was_tmp |= writing
        return completed

    @property
    def in_progress(self) -> list[str]:
        return sorted(self._followed)

    def _trace_files(self) -> dict[str, int]:
        """Size of every trace-like file (finished or being written) in the directory."""
        sizes = {}
        with os.scandir(self.directory) as entries:
            for entry in entries:
                name = entry.name.removesuffix(WRITING_SUFFIX)
                if name.endswith(TRACE_SUFFIXES) and entry.is_file():
                    sizes[entry.name] = entry.stat().st_size
        return sizes

    @staticmethod
    def _read_new_bytes(followed: _Followed, path: Path) -> None:
        for chunk in read_from(path, followed.offset):
            followed.feed.feed(chunk)
            followed.offset += len(chunk)

    @staticmethod
    def _is_complete(followed: _Followed, size: int) -> bool:
        if followed.was_tmp:  # Kineto renames only once it has written everything
            return True
        if followed.feed.is_gzip:
            return followed.feed.gzip_ended
        return size == followed.size_at_last_poll  # written in place: done once it stops growing

    def _finish(self, name: str, error: ItercastError | None = None) -> CompletedTrace:
        followed = self._followed.pop(name)
        self._finished.add(name)
        if error is None:
            try:
                predictions = followed.feed.predict()
            except ItercastError as failure:
                error = failure
        if error is not None:
            return CompletedTrace(name, error=str(error))
        modes = {key: prediction.mode for key, prediction in predictions.items()}
        return CompletedTrace(name, [WatchedIteration(name, it.name, predicted, it.measured_ms, modes)
                                     for it, predicted in iterations_by_target(predictions)])

    def run(self, on_trace: Callable[[CompletedTrace], None], interval_s: float = 0.5,
            once: bool = False, timeout_s: float | None = None) -> None:
        """Polls until ``timeout_s`` passes (forever if None); ``once``: a single pass over what is there."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            final = once or (deadline is not None and time.monotonic() >= deadline)
            for trace in self.poll(final=final):
                on_trace(trace)
            if final:
                return
            time.sleep(interval_s)
