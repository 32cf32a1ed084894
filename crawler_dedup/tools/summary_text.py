"""`inspect`'s terminal output: the summary of a drop log as text, with control characters from
crawled titles and URLs made harmless."""

from __future__ import annotations

import re
from typing import Any


# C0 but tab and newline, DEL, C1; line and paragraph separators; the bidi overrides and isolates,
# which reorder what a terminal shows (a URL that reads as another)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_ALL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _shown(m) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 256 else f"\\u{c:04x}"


def terminal_safe(text: Any) -> str:
    """`text` with control characters shown as \\xNN: a crawled title or URL holding ESC, CR or BEL
    must not recolour, rewrite or clear the terminal it is printed on (newlines and tabs stay:
    this is for whole blocks of output)."""
    return _CONTROL.sub(_shown, str(text))


def field_safe(text: Any) -> str:
    """One crawled value (a URL, a title) on a terminal: newlines and tabs shown too, so a value
    cannot start a line of its own that reads like the tool's."""
    return _CONTROL_ALL.sub(_shown, str(text))
