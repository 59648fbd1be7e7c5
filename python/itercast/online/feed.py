"""Trace bytes as they arrive (plain JSON or gzip) in, one prediction per target out.

Every online tool reads traces this way: the Monitor from the file the
profiler exports, the watcher from files still being written, the service
from a request body. Each byte is read once; nothing is re-read at the end.
"""

from __future__ import annotations

import os
from typing import Iterator

from itercast.errors import TraceTooLargeError
from itercast.features import WindowCollector
from itercast.online.targets import Target
from itercast.predict import Prediction
from itercast.predict.predictor import IterationPrediction
from itercast.trace import CHUNK_SIZE, GZIP_MAGIC, Inflater


class TraceFeed:
    """``feed()`` raw bytes of one trace in any pieces, then ``predict()`` once.

    Gzip is recognised by its first two bytes. Targets that read windows of the
    same width and stride share one native stream. ``max_bytes`` caps the
    uncompressed size (a small gzip body can inflate to gigabytes).
    """

    def __init__(self, targets: list[Target], name: str | None = None, max_bytes: int | None = None):
        self.targets, self.name, self.max_bytes = targets, name, max_bytes
        self._streams = {shape: WindowCollector(*shape, name=name) for shape in {t.shape for t in targets}}
        self._head = b""  # the first bytes, until gzip or not can be told
        self._inflater: Inflater | None = None
        self._decided = False
        self.uncompressed_bytes = 0

    @property
    def is_gzip(self) -> bool:
        return self._inflater is not None

    @property
    def gzip_ended(self) -> bool:
        """Whether the data so far is gzip that ends exactly at the end of a member: a complete file."""
        return self._inflater is not None and self._inflater.ended

    def feed(self, raw: bytes) -> None:
        if not self._decided:
            self._head += raw
            if len(self._head) < len(GZIP_MAGIC):
                return
            raw, self._head, self._decided = self._head, b"", True
            if raw.startswith(GZIP_MAGIC):
                self._inflater = Inflater(self.name)
        pieces = self._inflater.feed(raw) if self._inflater else (raw,)
        for piece in pieces:
            self._feed_uncompressed(piece)

    def _feed_uncompressed(self, data: bytes) -> None:
        self.uncompressed_bytes += len(data)
        if self.max_bytes is not None and self.uncompressed_bytes > self.max_bytes:
            raise TraceTooLargeError(f"{self.name or 'the trace'} is larger than {self.max_bytes:,} bytes"
                                     " uncompressed")
        for stream in self._streams.values():
            stream.feed(data)

    def predict(self) -> dict[str, Prediction]:
        """Ends the trace; the prediction for each target, by hardware key."""
        if self._head:  # shorter than the gzip magic: plain (and surely not a trace, as the parser will say)
            self._feed_uncompressed(self._head)
        if self._inflater is not None:
            self._inflater.close()
        scanned = {}
        for shape, stream in self._streams.items():
            windows = stream.close()
            scanned[shape] = (stream.timeline(), windows)
        return {t.hardware: t.predictor.predict_timeline(*scanned[t.shape], t.hardware, t.mode, t.trace_hardware)
                for t in self.targets}


def read_from(path: str | os.PathLike, offset: int = 0, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """The bytes of a file from ``offset`` to its current end, in chunks."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        yield from iter(lambda: handle.read(chunk_size), b"")


def predict_file(targets: list[Target], path: str | os.PathLike) -> dict[str, Prediction]:
    """Every target's prediction for a whole trace file, streamed once."""
    feed = TraceFeed(targets, name=os.fspath(path))
    for chunk in read_from(path):
        feed.feed(chunk)
    return feed.predict()


def iterations_by_target(predictions: dict[str, Prediction]) -> list[tuple[IterationPrediction, dict[str, float]]]:
    """Each iteration of one trace with every target's predicted ms for it.

    All targets predicted the same trace, so their iteration lists line up.
    """
    by_target = {key: p.iterations for key, p in predictions.items()}
    first = next(iter(by_target.values()))
    return [(iteration, {key: its[i].predicted_ms for key, its in by_target.items()})
            for i, iteration in enumerate(first)]
