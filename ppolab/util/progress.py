"""Progress of a step that takes more than a couple of seconds (rendering a video, say).

On a terminal: a rich progress bar, gone when the step ends. Elsewhere (a log file, a coding agent reading
the output): one plain line when the step is done, with what it did and how long it took, so that piped
output stays one line per rendered episode.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, what: str, total: int, unit: str, stream: TextIO | None = None) -> None:
        self.what, self.total, self.unit = what, total, unit
        self.stream = stream or sys.stderr
        self.done = 0
        self.started = time.monotonic()
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

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
        elif self.done:
            self.stream.write(f"{self.what}: {self.done} {self.unit} in {time.monotonic() - self.started:.1f} s\n")
            self.stream.flush()
