"""Progress of a step that takes more than a couple of seconds (rendering a video, say).

On a terminal: a rich progress bar. Elsewhere (a log file, a coding agent reading the output):
a plain line every few seconds, so the output stays short and readable as text.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, what: str, total: int, unit: str, every_s: float = 2.0, stream: TextIO | None = None) -> None:
        self.what, self.total, self.unit, self.every_s = what, total, unit, every_s
        self.stream = stream or sys.stderr
        self.done = 0
        self.started = self.last = time.monotonic()
        self.bar = None
        if self.stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TimeRemainingColumn
            from rich.progress import Progress as Bar

            self.bar = Bar("{task.description}", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                           console=Console(file=self.stream), transient=True)  # fmt: skip
            self.bar.start()
            self.task = self.bar.add_task(what, total=total)

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done)
        elif time.monotonic() - self.last >= self.every_s:
            self.last = time.monotonic()
            self.stream.write(f"{self.what}: {self.done}/{self.total} {self.unit}\n")
            self.stream.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
