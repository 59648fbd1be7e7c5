"""itercast: predict deep-learning training iteration times from Kineto traces."""

from itercast._version import __version__
from itercast.errors import ItercastError, TraceFormatError, TraceTruncatedError
from itercast.features import WindowCollector, Windows, windows
from itercast.timeline import FEATURE_COLUMNS, Hardware, Timeline, op_table, read_timeline
from itercast.trace import MISSING, Trace, TraceStream, read_trace

__all__ = [
    "FEATURE_COLUMNS", "Hardware", "ItercastError", "MISSING", "Timeline", "Trace", "TraceFormatError",
    "TraceStream", "TraceTruncatedError", "WindowCollector", "Windows", "op_table", "read_timeline",
    "read_trace", "windows", "__version__",
]
