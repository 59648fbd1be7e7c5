"""itercast: predict deep-learning training iteration times from Kineto traces."""

from itercast.errors import ItercastError, TraceFormatError, TraceTruncatedError

__version__ = "0.1.0"

__all__ = ["ItercastError", "TraceFormatError", "TraceTruncatedError", "__version__"]
