"""itercast: predict deep-learning training iteration times from Kineto traces."""

from itercast.errors import ItercastError, TraceFormatError, TraceTruncatedError
from itercast.features import Windows, WindowStream, windows
from itercast.timeline import FEATURE_COLUMNS, Hardware, Timeline, op_table, read_timeline
from itercast.trace import MISSING, Trace, TraceStream, read_trace

__version__ = "0.1.0"

__all__ = [
    "FEATURE_COLUMNS", "Hardware", "ItercastError", "MISSING", "Timeline", "Trace", "TraceFormatError",
    "TraceStream", "TraceTruncatedError", "WindowStream", "Windows", "op_table", "read_timeline",
    "read_trace", "windows", "__version__",
]
