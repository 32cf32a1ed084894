"""Terminal output through rich: tables, colours and progress bars on a terminal, plain text when
the output is piped or NO_COLOR / TERM=dumb is set (no box characters, no escape codes, lines as
wide as their content, so `| grep` and `| cut` work)."""

from __future__ import annotations

import io
import os
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any

from .common import term


def plural(n: int, word: str, many: str | None = None) -> str:
    """A count and its noun: '1 page', '0 pages', '2 pages'; `many` where the plural is not word + s
    (plural(n, "copy", "copies"))."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def is_terminal(file=None) -> bool:
    file = file or sys.stdout
    try:
        return bool(file.isatty())
    except (AttributeError, ValueError):  # a closed or fake stream
        return False


def fancy(file=None) -> bool:
    """Colours and boxes: a terminal, and the user did not ask for plain output."""
    return is_terminal(file) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def console(file=None):
    from rich.console import Console

    file = file or sys.stdout
    if fancy(file):
        return Console(file=file, highlight=False, markup=False, emoji=False)
    return Console(file=file, highlight=False, markup=False, emoji=False, no_color=True, color_system=None,
                   force_terminal=False, width=100_000, soft_wrap=True)


def table(columns: Sequence[str | tuple[str, str]], rows: Iterable[Sequence[Any]], title: str | None = None,
          file=None, styles: Sequence[str | None] | None = None) -> None:
    """Print a table. columns: names, or (name, "right") for numbers. Cells are crawled values
    made terminal-safe here (a URL holding ESC cannot act on the terminal)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    file = file or sys.stdout
    rich_out = fancy(file)
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD if rich_out else None,
              show_edge=False, pad_edge=False, header_style="bold" if rich_out else "", title_style="bold" if rich_out else "",
              padding=(0, 1) if rich_out else (0, 2, 0, 0), collapse_padding=True)
    for i, col in enumerate(columns):
        name, justify = (col, "left") if isinstance(col, str) else col
        style = styles[i] if styles and i < len(styles) else None
        t.add_column(name, justify=justify, style=style if rich_out else None,  # type: ignore[arg-type]
                     overflow="fold" if rich_out else "crop", no_wrap=not rich_out)
    for row in rows:
        t.add_row(*(Text(term("" if cell is None else cell)) for cell in row))
    _print(t, file)


def lines(text: str, file=None, style: str | None = None) -> None:
    """A block of the tool's own text (crawled values in it already made safe by the caller)."""
    from rich.text import Text

    file = file or sys.stdout
    _print(Text(text, style=style or "") if fancy(file) else Text(text), file)


def _print(renderable, file) -> None:
    if fancy(file):
        console(file).print(renderable)
        return
    buf = io.StringIO()
    console(buf).print(renderable)
    file.write("".join(line.rstrip() + "\n" for line in buf.getvalue().splitlines()))


class Progress:
    """A progress bar on stderr, drawn by rich only when stderr is a terminal (silent when piped or
    in a test). Called as progress(done, total); unit="MiB" counts bytes."""

    def __init__(self, label: str, unit: str = "", stream=None):
        self.label, self.unit, self.stream = label, unit, stream or sys.stderr
        self.on = is_terminal(self.stream)
        self._bar: Any = None
        self._task: Any = None

    def __call__(self, done: int, total: int, final: bool | None = None) -> None:
        if not self.on:
            return
        if self._bar is None:
            from rich.console import Console
            from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress as Bar,
                                       TextColumn, TimeRemainingColumn)

            count = DownloadColumn(binary_units=True) if self.unit == "MiB" else MofNCompleteColumn()
            self._bar = Bar(TextColumn("{task.description}"), BarColumn(), count,
                            TextColumn(self.unit if self.unit not in ("", "MiB") else ""), TimeRemainingColumn(),
                            console=Console(file=self.stream), transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=max(total, 1))
        self._bar.update(self._task, completed=min(done, total), total=max(total, 1))
        final = done >= total if final is None else final
        if final:
            self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __del__(self):  # a command that stopped early leaves no half-drawn bar behind
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit
            pass


class PagesProgress:
    """Called as progress(phase, done, total, pages): one bar a phase, `done`/`total` in the
    phase's unit (bytes read, pages decided), the ETA from them and pages/s from `pages`."""

    LABELS = {"read": "reading and extracting", "decide": "deciding", "write": "writing", "add": "adding"}

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.on = is_terminal(self.stream)
        self._bar: Any = None
        self._tasks: dict[str, tuple] = {}

    def __call__(self, phase: str, done: int, total: int, pages: int) -> None:
        if not self.on:
            return
        if self._bar is None:
            from rich.console import Console
            from rich.progress import BarColumn, TaskProgressColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as Bar

            self._bar = Bar(TextColumn("{task.description:<22}"), BarColumn(), TaskProgressColumn(),
                                 TextColumn("{task.fields[pages]:>14}  {task.fields[rate]:>7} pages/s  ETA"),
                                 TimeRemainingColumn(), console=Console(file=self.stream), transient=False)
            self._bar.start()
        if phase not in self._tasks:
            task = self._bar.add_task(self.LABELS.get(phase, phase), total=max(total, 1), pages=plural(0, "page"),
                                      rate="")
            self._tasks[phase] = (task, time.monotonic(), pages)
        task, started, first = self._tasks[phase]
        elapsed = time.monotonic() - started
        rate = f"{(pages - first) / elapsed:.1f}" if elapsed > 0.5 else ""
        self._bar.update(task, completed=min(done, total), total=max(total, 1), pages=plural(pages, "page"), rate=rate)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
