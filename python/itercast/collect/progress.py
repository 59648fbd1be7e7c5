"""A one-line progress bar with an ETA, written to stderr."""

from __future__ import annotations

import sys
import time


def format_duration(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}"


class Progress:
    def __init__(self, total: int, stream=None, width: int = 24):
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.width = width
        self.started = time.monotonic()
        # On a terminal the bar redraws in place; in a log, one line per configuration.
        self.redraw = getattr(self.stream, "isatty", lambda: False)()

    def eta_seconds(self) -> float | None:
        if self.done == 0:
            return None
        elapsed = time.monotonic() - self.started
        return elapsed / self.done * (self.total - self.done)

    def advance(self, label: str):
        self.done += 1
        filled = self.width * self.done // max(self.total, 1)
        eta = self.eta_seconds()
        line = (f"[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} "
                f"elapsed {format_duration(time.monotonic() - self.started)} "
                f"ETA {format_duration(eta) if eta is not None else '?'}  {label}")
        if self.redraw:
            self.stream.write("\r\033[K" + line + ("\n" if self.done == self.total else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
