"""`inspect`'s terminal output: the summary of a drop log as text, with control characters from
crawled titles and URLs made harmless."""

from __future__ import annotations

import re
from typing import Any

from .inspect import SIM_BINS, Filters, Summary, brief

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


def _clip(text, width: int) -> str:
    text = " ".join(str(text if text is not None else "").split())
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _clip_url(url, width: int) -> str:
    """A long URL keeps its end (the path tells pages apart), not its scheme and host."""
    text = " ".join(str(url if url is not None else "").split())
    return text if len(text) <= width else "…" + text[len(text) - width + 1:]


def _bar(count: int, most: int, width: int = 40) -> str:
    if not count:
        return ""
    return "#" * max(1, round(width * count / most)) if most else ""


def histogram_lines(labels: list[str], counts: list[int], width: int = 40) -> list[str]:
    most = max(counts, default=0)
    w = max((len(label) for label in labels), default=0)
    n = max((len(str(c)) for c in counts), default=1)
    return [f"  {label:>{w}} {c:>{n}} {_bar(c, most, width)}" for label, c in zip(labels, counts)]


def format_summary(s: Summary, path: str, filters: Filters, width: int = 100) -> str:
    out = []
    head = f"{path}: {s.total} drop-log lines"
    if filters.active:
        head += f", {s.matched} matching ({filters.describe()})"
    if s.malformed.count:
        head += f"; {s.malformed}"
    out.append(head)
    for number, why in s.malformed.examples:
        out.append(f"  line {number}: {why}")
    if s.first:
        out.append(f"from {s.first} to {s.last}")
    if not s.matched:
        out.append("no drops match" if filters.active or s.total else "no drops")
        return terminal_safe("\n".join(out))
    for title, counter in (("reason", s.by_reason), ("action", s.by_action), ("stage", s.by_stage),
                           ("measure", s.by_measure)):
        if counter:
            out.append(f"by {title}: " + ", ".join(f"{k} {v}" for k, v in counter.most_common()))
    approx = " (approximate: many distinct values)" if s.domains.approximate else ""
    out.append(f"\ndrops by domain{approx}:")
    out += [f"  {n:>7}  {d or '(none)'}" for d, n in s.domains.top(s.top_n)]
    approx = " (approximate: many distinct values)" if s.kept.approximate else ""
    out.append(f"\nkept pages with the most duplicates{approx}:")
    for row in s.top_kept():
        title = f"  {_clip(row['title'], 40)}" if row["title"] else ""
        out.append(f"  {row['duplicates']:>7}  {_clip_url(row['url'], width - 52):<{width - 52}}{title}")
    out.append("\nsimilarity:")
    first = next((i for i, c in enumerate(s.sim_bins) if c), 0)
    labels = [f"{i / SIM_BINS:.2f}-{(i + 1) / SIM_BINS:.2f}" for i in range(first, SIM_BINS)]
    out += histogram_lines(labels, s.sim_bins[first:])
    out.append("\ndistance (bits):")
    used = [d for d, c in enumerate(s.dist_bins) if c]
    if used:
        top = max(used)
        if top <= 16:
            out += histogram_lines([str(d) for d in range(top + 1)], s.dist_bins[: top + 1])
        else:  # wide range: 4-bit bins
            edges = range(0, top + 1, 4)
            out += histogram_lines([f"{e}-{e + 3}" for e in edges], [sum(s.dist_bins[e:e + 4]) for e in edges])
    else:
        out.append("  (no distances)")
    if s.drops:
        out.append(f"\nlatest {len(s.drops)} of {s.matched} matching drops:")
        url_w = max(20, (width - 40) // 2)
        out.append(f"  {'time':<19} {'reason':<10} {'sim':>5} {'dist':>4}  {'url':<{url_w}}  duplicate of")
        for d in map(brief, s.drops):
            sim = d.get("similarity")
            sim = f"{sim:.2f}" if isinstance(sim, (int, float)) else "-"
            out.append(f"  {str(d.get('time', ''))[:19]:<19} {_clip(d.get('reason'), 10):<10} {sim:>5} "
                       f"{_clip(d.get('distance', '-'), 4):>4}  {_clip_url(d['url'], url_w):<{url_w}}  "
                       f"{_clip_url(d.get('duplicate_of'), url_w)}")
    return terminal_safe("\n".join(out))
