"""Reading Kineto (PyTorch profiler) traces into columnar numpy arrays.

The native scanner does the parsing; this module opens files (plain, gzip, or
a ``.tmp`` file Kineto is still writing), feeds them in chunks and wraps the
result. Nothing here holds more than one chunk of the file at a time.
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Iterator, Union

import numpy as np

from itercast import _native
from itercast.errors import TraceFormatError, TraceTruncatedError

#: Value of an integer column where the event does not carry the field.
MISSING: int = _native.MISSING
#: Bits of the ``flags`` column: the field held a string (its id in ``strings``).
PID_IS_STRING, TID_IS_STRING, STREAM_IS_STRING = 1, 2, 4

CHUNK_SIZE = 4 << 20
GZIP_MAGIC = b"\x1f\x8b"
# Categories of ProfilerStep spans usable as iteration labels (2021 traces: Operator).
STEP_CATEGORIES = ("user_annotation", "cpu_op", "Operator")

Source = Union[str, os.PathLike, bytes, bytearray, memoryview]


@dataclass(frozen=True)
class Step:
    """One ``ProfilerStep#N`` span."""

    name: str
    ts_ns: int
    dur_ns: int


class Trace:
    """A scanned trace: one numpy array per event field plus the string table.

    Integer columns hold :data:`MISSING` where the event lacks the field;
    string-id columns (``name``, ``cat``, ``input_dims``, ``input_types``,
    ``concrete_inputs``) hold -1; the last three refer to the raw JSON text.
    """

    def __init__(self, columns: dict[str, np.ndarray], strings: list[str],
                 metadata: list[tuple[str, str]], nbytes: int, path: str | None = None):
        self.columns = columns
        self.strings = strings
        self.raw_metadata = dict(metadata)
        self.nbytes = nbytes
        self.path = path

    def __len__(self) -> int:
        return len(self.columns["ts_ns"])

    def __getitem__(self, column: str) -> np.ndarray:
        return self.columns[column]

    def __repr__(self) -> str:
        where = f" from {self.path}" if self.path else ""
        return f"<Trace{where}: {len(self)} events, {len(self.strings)} strings>"

    @cached_property
    def metadata(self) -> dict[str, Any]:
        """Top-level keys other than traceEvents, parsed."""
        return {key: json.loads(raw) for key, raw in self.raw_metadata.items()}

    @property
    def device_properties(self) -> list[dict]:
        return list(self.metadata.get("deviceProperties") or [])

    @property
    def distributed_info(self) -> dict | None:
        return self.metadata.get("distributedInfo")

    @property
    def devices(self) -> list[str]:
        return [str(device.get("name", "")) for device in self.device_properties]

    def string_id(self, text: str) -> int:
        """Id of an interned string, or -1."""
        return self._string_ids.get(text, -1)

    @cached_property
    def _string_ids(self) -> dict[str, int]:
        return {text: index for index, text in enumerate(self.strings)}

    @cached_property
    def phases(self) -> np.ndarray:
        """The ``ph`` column as one-character byte strings."""
        return self.columns["ph"].view("S1")

    def categories(self) -> np.ndarray:
        """Category name per event ("" where absent)."""
        return self._names_of(self.columns["cat"])

    def names(self) -> np.ndarray:
        return self._names_of(self.columns["name"])

    def _names_of(self, ids: np.ndarray) -> np.ndarray:
        table = np.array(self.strings + [""], dtype=object)
        return table[np.where(ids < 0, len(self.strings), ids)]

    def count_by_category(self) -> dict[tuple[str, str], int]:
        """Event counts per (ph, cat); events without a category count under ""."""
        return _category_names(_count_category_keys(self.columns), self.strings)

    def profiler_steps(self) -> list[Step]:
        """``ProfilerStep#N`` spans in start order (the gpu_user_annotation twins excluded)."""
        step_cats = {self.string_id(cat) for cat in STEP_CATEGORIES} - {-1}
        step_names = {i for i, text in enumerate(self.strings) if text.startswith("ProfilerStep#")}
        if not step_cats or not step_names:
            return []
        cols = self.columns
        mask = (np.isin(cols["name"], list(step_names)) & np.isin(cols["cat"], list(step_cats))
                & (cols["ph"] == ord("X")))
        order = np.argsort(cols["ts_ns"][mask], kind="stable")
        names, starts, durations = (cols[c][mask][order] for c in ("name", "ts_ns", "dur_ns"))
        return [Step(self.strings[n], int(t), int(d))
                for n, t, d in zip(names.tolist(), starts.tolist(), durations.tolist())]

    def event(self, index: int) -> dict[str, Any]:
        """One event as a dict of its present fields (for inspection and tests)."""
        out = {}
        for column, values in self.columns.items():
            value = values[index].item()
            if column == "ph":
                value = chr(value) if value else None
            elif column in ("cat", "name", "input_dims", "input_types", "concrete_inputs"):
                value = self.strings[value] if value >= 0 else None
            elif value == MISSING:
                value = None
            out[column] = value
        return out


def _count_category_keys(columns: dict[str, np.ndarray]) -> dict[int, int]:
    """Event counts per (ph, cat id), keyed by ph << 32 | cat id."""
    keys = columns["ph"].astype(np.int64) << 32 | (columns["cat"].astype(np.int64) & 0xFFFFFFFF)
    unique, counts = np.unique(keys, return_counts=True)
    return dict(zip(unique.tolist(), counts.tolist()))


def _category_names(counts: dict[int, int], strings: list[str]) -> dict[tuple[str, str], int]:
    result = {}
    for key, count in sorted(counts.items()):
        ph, cat = chr(key >> 32) if key >> 32 else "", key & 0xFFFFFFFF
        result[(ph, "" if cat == 0xFFFFFFFF else strings[cat])] = count
    return result


@dataclass
class TraceSummary:
    """What ``itercast scan`` reports, gathered while streaming: memory does not grow with the trace."""

    nbytes: int
    events: int
    counts: dict[tuple[str, str], int]  # per (ph, cat), as Trace.count_by_category
    steps: list[Step]
    devices: list[str]


def summarise_trace(source: Source, chunk_size: int = CHUNK_SIZE) -> TraceSummary:
    """Streams a trace (as :func:`read_trace` takes it) keeping only counts and ProfilerStep spans."""
    stream = TraceStream(source_name(source))  # errors name the file
    summary = _StepCounts(stream)
    stream.session.scan(source, chunk_size, after_each=lambda: summary.reduce(stream.take_events()))
    steps = Trace(summary.step_columns(), stream.strings, stream.metadata(), stream.bytes_fed, stream.name)
    return TraceSummary(stream.bytes_fed, stream.events, _category_names(summary.counts, stream.strings),
                        steps.profiler_steps(), steps.devices)


class _StepCounts:
    """Event batches of a TraceStream reduced to counts and step candidates as they come."""

    STEP_COLUMNS = ("ph", "cat", "name", "ts_ns", "dur_ns")

    def __init__(self, stream: "TraceStream"):
        self.stream = stream
        self.counts: dict[int, int] = {}
        self._steps: list[dict[str, np.ndarray]] = []
        self._step_name_ids: set[int] = set()
        self._names_seen = 0

    def step_columns(self) -> dict[str, np.ndarray]:
        if not self._steps:
            return {column: np.zeros(0, dtype=np.int64) for column in self.STEP_COLUMNS}
        return {column: np.concatenate([batch[column] for batch in self._steps]) for column in self.STEP_COLUMNS}

    def reduce(self, columns: dict[str, np.ndarray]) -> None:
        if not len(columns["ts_ns"]):
            return
        for key, count in _count_category_keys(columns).items():
            self.counts[key] = self.counts.get(key, 0) + count
        strings = self.stream.strings
        self._step_name_ids.update(i for i in range(self._names_seen, len(strings))
                                   if strings[i].startswith("ProfilerStep#"))
        self._names_seen = len(strings)
        keep = np.isin(columns["name"], list(self._step_name_ids))
        if keep.any():
            self._steps.append({column: columns[column][keep] for column in self.STEP_COLUMNS})


class ScanSession:
    """A native scanning session (a ``_native.Scanner`` or ``_native.Timeline``) fed from Python, as C++'s
    ScanSession is: every reader here goes through one, so parse errors read alike.

    A parse error becomes :class:`TraceFormatError` (:class:`TraceTruncatedError` for a document cut
    short) naming the source; a document without a traceEvents array is refused when it ends.
    """

    def __init__(self, native, name: str | None = None):
        self.native, self.name = native, name

    def feed(self, data) -> None:
        try:
            self.native.feed(data)
        except _native.ParseError as error:
            raise _format_error(error, self.name) from None

    def finish(self) -> None:
        try:
            self.native.finish()
        except _native.ParseError as error:
            raise _format_error(error, self.name) from None
        if not self.native.saw_trace_events:
            raise TraceFormatError("no traceEvents array: not a Kineto trace", path=self.name)

    def scan(self, source: Source, chunk_size: int = CHUNK_SIZE, after_each=None) -> None:
        """Feeds a whole source (path or bytes, plain or gzip) and finishes; ``after_each()``, if given, is
        called after each chunk and after the end. A parse error's message gives the line of the source."""
        try:
            for chunk in iter_chunks(source, chunk_size):
                self.feed(chunk)
                if after_each is not None:
                    after_each()
            self.finish()
            if after_each is not None:
                after_each()
        except TraceFormatError as error:
            if error.offset >= 0 and error.line is None and not isinstance(error, TraceTruncatedError):
                error.line = line_at(source, error.offset)
                error.args = (error._describe(),)
            raise


class TraceStream:
    """Push interface to the scanner: ``feed()`` chunks, ``close()`` at the end.

    Each ``feed`` returns the events completed by that chunk as a dict of numpy
    columns; string ids index :attr:`strings`, which grows as names appear.
    For sliding-window features see :class:`itercast.features.WindowCollector`.
    """

    def __init__(self, name: str | None = None, size_hint: int = 0):
        """``size_hint``: expected uncompressed bytes, if known (sizes the first batch's columns)."""
        self._scanner = _native.Scanner(size_hint)
        self.session = ScanSession(self._scanner, name)
        self._strings: list[str] = []
        self.name = name

    def feed(self, data: bytes | bytearray | memoryview) -> dict[str, np.ndarray]:
        self.session.feed(data)
        return self.take_events()

    def close(self) -> dict[str, np.ndarray]:
        """Ends the stream; raises TraceTruncatedError if the document is incomplete."""
        self.session.finish()
        return self.take_events()

    def take_events(self) -> dict[str, np.ndarray]:
        """The events completed since the last call, as columns."""
        return self._scanner.take_events()

    @property
    def strings(self) -> list[str]:
        if len(self._strings) < self._scanner.string_count:
            self._strings.extend(self._scanner.strings(len(self._strings)))
        return self._strings

    @property
    def bytes_fed(self) -> int:
        return self._scanner.bytes_fed

    @property
    def saw_trace_events(self) -> bool:
        return self._scanner.saw_trace_events

    @property
    def events(self) -> int:
        return self._scanner.events

    def metadata(self) -> list[tuple[str, str]]:
        return self._scanner.metadata()


def _format_error(error: Exception, path: str | None) -> TraceFormatError:
    message, offset, excerpt, truncated = error.args
    kind = TraceTruncatedError if truncated else TraceFormatError
    return kind(message, offset=offset, path=path, excerpt=excerpt.decode("utf-8", "replace"))


def iter_chunks(source: Source, chunk_size: int = CHUNK_SIZE) -> Iterator[memoryview | bytes]:
    """Uncompressed bytes of a trace in chunks; gzip is recognised by its magic bytes."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = memoryview(source)
        if data[:2].tobytes() == GZIP_MAGIC:
            yield from _inflate(iter([data.tobytes()]), "<bytes>")
            return
        for start in range(0, len(data), chunk_size):
            yield data[start:start + chunk_size]
        return
    path = os.fspath(source)
    with open(path, "rb") as handle:
        head = handle.read(2)
        handle.seek(0)
        raw_chunks = iter(lambda: handle.read(chunk_size), b"")
        if head == GZIP_MAGIC:
            yield from _inflate(raw_chunks, path, chunk_size)
        else:
            yield from raw_chunks


class Inflater:
    """Gzip decoding across calls (concatenated members too), with bounded output per step.

    ``feed`` takes compressed bytes as they arrive and yields what they inflate to;
    ``close`` raises :class:`TraceTruncatedError` if the last member is unfinished.
    """

    def __init__(self, name: str | None = None, max_out: int = CHUNK_SIZE):
        self.name, self.max_out = name, max_out
        self._inflater = zlib.decompressobj(wbits=31)
        self.compressed_offset = 0

    @property
    def ended(self) -> bool:
        """Whether the data so far ends exactly at the end of a gzip member."""
        return self._inflater.eof

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        data, produced_full = chunk, False
        while data or produced_full:
            try:
                out = self._inflater.decompress(data, self.max_out)
            except zlib.error as error:
                raise TraceFormatError(f"corrupt gzip data ({error}) in the chunk at compressed byte "
                                       f"{self.compressed_offset}", path=self.name) from None
            if out:
                yield out
            produced_full = len(out) == self.max_out and not self._inflater.eof
            data = self._inflater.unconsumed_tail
            if self._inflater.eof and self._inflater.unused_data:
                data = self._inflater.unused_data  # another gzip member follows
                self._inflater = zlib.decompressobj(wbits=31)
        self.compressed_offset += len(chunk)

    def close(self) -> None:
        if not self.ended:
            raise TraceTruncatedError("gzip stream is truncated", offset=self.compressed_offset, path=self.name)


def _inflate(chunks: Iterator[bytes], name: str, max_out: int = CHUNK_SIZE) -> Iterator[bytes]:
    """Streams gzip data (concatenated members too) with bounded output per step."""
    inflater = Inflater(name, max_out)
    for chunk in chunks:
        yield from inflater.feed(chunk)
    inflater.close()


def read_trace(source: Source, chunk_size: int = CHUNK_SIZE) -> Trace:
    """Scans a whole trace (path, ``.json``/``.json.gz``/``.tmp``, or bytes) into a :class:`Trace`."""
    scanner = _native.Scanner(uncompressed_size_hint(source))
    name = scan_source(scanner, source, chunk_size)
    return Trace(scanner.take_events(), scanner.strings(), scanner.metadata(), scanner.bytes_fed, name)


def scan_source(native, source: Source, chunk_size: int = CHUNK_SIZE) -> str | None:
    """Feeds a whole source to a native session and finishes it (:meth:`ScanSession.scan`); returns the
    source's name."""
    name = source_name(source)
    ScanSession(native, name).scan(source, chunk_size)
    return name


def source_name(source: Source) -> str | None:
    """The path of a source read from a file; None for bytes."""
    return None if isinstance(source, (bytes, bytearray, memoryview)) else os.fspath(source)


def uncompressed_size_hint(source: Source) -> int:
    """Expected uncompressed size: gzip's ISIZE trailer (the size mod 2**32) or the file size."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = memoryview(source)
        if data[:2].tobytes() == GZIP_MAGIC:
            return int.from_bytes(data[-4:].tobytes(), "little") if len(data) >= 4 else 0
        return len(data)
    path = os.fspath(source)
    try:
        with open(path, "rb") as handle:
            if handle.read(2) != GZIP_MAGIC:
                return os.fstat(handle.fileno()).st_size
            handle.seek(-4, os.SEEK_END)
            return int.from_bytes(handle.read(4), "little")
    except OSError:
        return 0


def line_at(source: Source, offset: int) -> int | None:
    """1-based line number of an uncompressed byte offset (error path only)."""
    line, seen = 1, 0
    try:
        for chunk in iter_chunks(source):
            chunk = bytes(chunk)
            if seen + len(chunk) > offset:
                return line + chunk.count(b"\n", 0, offset - seen)
            line += chunk.count(b"\n")
            seen += len(chunk)
    except TraceFormatError:
        return None
    return line


def trace_path(path: str | os.PathLike) -> Path:
    """The file to read for ``path``: the path itself, or Kineto's ``.tmp`` while it is written."""
    candidate = Path(path)
    if not candidate.exists() and Path(f"{candidate}.tmp").exists():
        return Path(f"{candidate}.tmp")
    return candidate
