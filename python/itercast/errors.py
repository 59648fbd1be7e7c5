"""Exceptions raised by itercast."""


class ItercastError(Exception):
    """Base class of every error itercast raises on purpose."""


class TraceFormatError(ItercastError, ValueError):
    """A trace is not valid Kineto/Chrome-trace JSON.

    ``offset`` is the byte offset in the (uncompressed) stream, ``line`` the
    1-based line when known, ``path`` the file when known.
    """

    def __init__(self, message: str, offset: int = -1, line: int | None = None,
                 path: str | None = None, excerpt: str = ""):
        self.message = message
        self.offset = offset
        self.line = line
        self.path = path
        self.excerpt = excerpt
        super().__init__(self._describe())

    def _describe(self) -> str:
        where = []
        if self.path:
            where.append(str(self.path))
        if self.offset >= 0:
            where.append(f"byte {self.offset}")
        if self.line is not None:
            where.append(f"line {self.line}")
        text = f"{', '.join(where)}: {self.message}" if where else self.message
        if self.excerpt:
            text += f" near {self.excerpt!r}"
        return text


class TraceTruncatedError(TraceFormatError):
    """The stream ended before the JSON document was complete."""


class TraceTooLargeError(ItercastError):
    """A trace is larger (uncompressed) than the reader was told to accept."""
