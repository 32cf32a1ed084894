"""A progress bar for long commands (rich): pages, pages/s and an ETA on a terminal's stderr;
nothing when stderr is piped or in a test."""

from __future__ import annotations

import sys
import time


class PagesProgress:
    """Called as progress(phase, done, total, pages): one bar a phase, `done`/`total` in the
    phase's unit (bytes read, pages decided), the ETA from them and pages/s from `pages`."""

    LABELS = {"read": "reading and extracting", "decide": "deciding", "write": "writing", "add": "adding"}

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        try:
            self.on = self.stream.isatty()
        except (AttributeError, ValueError):
            self.on = False
        self._bar = None
        self._tasks: dict[str, tuple] = {}

    def __call__(self, phase: str, done: int, total: int, pages: int) -> None:
        if not self.on:
            return
        if self._bar is None:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

            self._bar = Progress(TextColumn("{task.description:<22}"), BarColumn(), TaskProgressColumn(),
                                 TextColumn("{task.fields[pages]:>8} pages  {task.fields[rate]:>7} pages/s  ETA"),
                                 TimeRemainingColumn(), console=Console(file=self.stream), transient=False)
            self._bar.start()
        if phase not in self._tasks:
            task = self._bar.add_task(self.LABELS.get(phase, phase), total=max(total, 1), pages=0, rate="")
            self._tasks[phase] = (task, time.monotonic(), pages)
        task, started, first = self._tasks[phase]
        elapsed = time.monotonic() - started
        rate = f"{(pages - first) / elapsed:.1f}" if elapsed > 0.5 else ""
        self._bar.update(task, completed=min(done, total), total=max(total, 1), pages=pages, rate=rate)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
