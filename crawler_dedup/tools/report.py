"""`crawler-dedup report`: one self-contained HTML file about a drop log.

Plots are inline SVG drawn here from every matching line (one streaming pass); the table holds
the latest `max_rows` drops, embedded as JSON in a `<script type="application/json">` block and
built in the browser with textContent only, so crawled content never becomes markup. A
Content-Security-Policy allows only the page's own script and styles: no network at all.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
from collections import Counter, deque
from datetime import datetime, timedelta

from .inspect import SIM_BINS, Filters, Progress, Summary, stream
from .report_assets import SCRIPT, STYLE

TEXT_ROWS = 2000  # the latest rows that carry full texts for the diff view
TEXT_CHARS = 20_000  # per text
COLUMNS = ["time", "url", "duplicate_of", "reason", "action", "similarity", "distance", "measure", "stage",
           "title", "duplicate_of_title", "excerpt", "kept_at"]


def _esc(text) -> str:
    return html.escape(str(text), quote=True)


def script_json(data) -> str:
    """JSON safe inside a <script> element: no `</script>`, no `<!--`, no line separators."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    for char, code in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                       ("\u2029", "\\u2029")):
        text = text.replace(char, code)
    return text


# -- SVG plots -------------------------------------------------------------------------------

def bar_chart(plot_id: str, title: str, labels: list[str], counts: list[int], xlabel: str,
              width: int = 560, height: int = 220) -> str:
    """Vertical bars with a count axis; every label escaped."""
    left, bottom, top = 44, 40, 26
    inner_w, inner_h = width - left - 10, height - bottom - top
    most = max(counts, default=0) or 1
    n = max(len(counts), 1)
    bw = inner_w / n
    parts = [f'<svg class="plot" id="{plot_id}" role="img" aria-label="{_esc(title)}" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
             f'<text x="{left}" y="16" class="ptitle">{_esc(title)}</text>',
             f'<line x1="{left}" y1="{top + inner_h}" x2="{left + inner_w}" y2="{top + inner_h}" class="axis"/>']
    for frac in (0.0, 0.5, 1.0):
        y = top + inner_h * (1 - frac)
        parts.append(f'<text x="{left - 4}" y="{y + 4:.1f}" class="tick" text-anchor="end">{round(most * frac)}</text>')
    step = max(1, n // 8)
    for i, (label, c) in enumerate(zip(labels, counts)):
        h = inner_h * c / most
        x = left + i * bw
        parts.append(f'<rect class="bar" x="{x + 0.5:.1f}" y="{top + inner_h - h:.1f}" width="{max(bw - 1, 0.5):.1f}" '
                     f'height="{h:.1f}"><title>{_esc(label)}: {c}</title></rect>')
        if i % step == 0:
            parts.append(f'<text x="{x + bw / 2:.1f}" y="{top + inner_h + 14}" class="tick" '
                         f'text-anchor="middle">{_esc(label)}</text>')
    parts.append(f'<text x="{left + inner_w / 2:.1f}" y="{height - 6}" class="tick" text-anchor="middle">{_esc(xlabel)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def hbar_chart(plot_id: str, title: str, labels: list[str], counts: list[int], width: int = 560) -> str:
    row, left, top = 18, 200, 26
    height = top + row * max(len(counts), 1) + 10
    most = max(counts, default=0) or 1
    parts = [f'<svg class="plot" id="{plot_id}" role="img" aria-label="{_esc(title)}" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
             f'<text x="4" y="16" class="ptitle">{_esc(title)}</text>']
    for i, (label, c) in enumerate(zip(labels, counts)):
        y = top + i * row
        w = (width - left - 60) * c / most
        short = label if len(label) <= 30 else label[:29] + "…"
        parts.append(f'<text x="{left - 6}" y="{y + 13}" class="tick" text-anchor="end">{_esc(short)}</text>')
        parts.append(f'<rect class="bar" x="{left}" y="{y + 2}" width="{max(w, 0.5):.1f}" height="{row - 4}">'
                     f'<title>{_esc(label)}: {c}</title></rect>')
        parts.append(f'<text x="{left + w + 4:.1f}" y="{y + 13}" class="tick">{c}</text>')
    parts.append("</svg>")
    return "".join(parts)


_STEPS = [(timedelta(seconds=x), f"{x} s") for x in (0.1, 0.5, 1, 5, 15, 30)] + \
         [(timedelta(minutes=m), f"{m} min") for m in (1, 5, 15, 30)] + \
         [(timedelta(hours=h), f"{h} h") for h in (1, 3, 6, 12)] + [(timedelta(days=d), f"{d} d") for d in (1, 7, 30)]


def time_series(summary: Summary, max_bars: int = 120) -> tuple[list[str], list[int], str]:
    """Drops per time bucket, the bucket chosen so that the plot has at most `max_bars` bars."""
    if summary.tenths is not None and summary.tenths:
        source, fmt, base = summary.tenths, "%Y-%m-%dT%H:%M:%S.%f", timedelta(seconds=0.1)
    elif summary.seconds is not None:
        source, fmt, base = summary.seconds, "%Y-%m-%dT%H:%M:%S", timedelta(seconds=1)
    elif summary.minutes is not None:
        source, fmt, base = summary.minutes, "%Y-%m-%dT%H:%M", timedelta(minutes=1)
    else:
        source, fmt, base = summary.hours, "%Y-%m-%dT%H", timedelta(hours=1)
    points = []
    for key, count in source.items():
        try:
            points.append((datetime.strptime(key, fmt), count))
        except ValueError:
            continue
    if not points:
        return [], [], ""
    start, end = min(p[0] for p in points), max(p[0] for p in points)
    span = end - start
    step, name = next(((s, n) for s, n in _STEPS if s >= base and span / s < max_bars), _STEPS[-1])
    buckets: Counter[int] = Counter()
    for moment, count in points:
        buckets[int((moment - start) / step)] += count
    n = max(buckets) + 1
    if step < timedelta(seconds=1):
        labels = [(start + i * step).strftime("%H:%M:%S.%f")[:10] for i in range(n)]
    else:
        shape = "%H:%M:%S" if step < timedelta(minutes=1) else "%m-%d %H:%M"
        labels = [(start + i * step).strftime(shape) for i in range(n)]
    return labels, [buckets.get(i, 0) for i in range(n)], name


# -- the page ----------------------------------------------------------------------------------

def write_report(log: str, output: str, filters: Filters | None = None, dir_: str | None = None,
                 max_rows: int = 20_000, progress: Progress | None = None, settings: dict | None = None) -> dict:
    """`settings`: DEDUP_BACKEND (and its settings) when the index is not LMDB."""
    filters = filters or Filters()
    summary = Summary(limit=0, top=15)
    rows: deque = deque(maxlen=max_rows)
    texts: deque = deque(maxlen=min(TEXT_ROWS, max_rows))
    same: deque = deque(maxlen=min(TEXT_ROWS, max_rows))
    for rec in stream(log, summary.malformed, progress):
        summary.total += 1
        if not filters.match(rec):
            continue
        summary.add(rec)
        seq = summary.matched
        if max_rows:
            rows.append([seq] + [_cell(rec.get(c)) for c in COLUMNS] + [rec.get("duplicate_of_fingerprint")])
            if isinstance(rec.get("text"), str):
                texts.append((seq, rec["text"][:TEXT_CHARS]))
            elif rec.get("reason") == "unchanged" and rec.get("measure") == "exact":
                same.append(seq)  # the same words as the kept page: its text serves for both sides
    unread: list[str] = []  # why the index gave no kept texts, when it could not be read
    kept_texts = _kept_texts(dir_, rows, {seq for seq, _ in texts} | set(same), settings, unread) if dir_ else {}
    data = {
        "columns": ["n"] + COLUMNS,
        "rows": [row[:-1] for row in rows],
        "texts": {str(seq): text for seq, text in texts},
        "kept": kept_texts,
        "matched": summary.matched,
        "truncated": len(rows) < summary.matched,
    }
    page = render(log, summary, filters, data, dir_)
    tmp = output + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(page)
    os.replace(tmp, output)
    return {"rows": len(rows), "matched": summary.matched, "texts": len(texts), "malformed": summary.malformed.count,
            "torn": summary.malformed.torn, "bytes": len(page.encode("utf-8")), "index_unread": unread[0] if unread else None}


def _cell(value):
    if value is None or isinstance(value, (int, float, str, bool)):
        return value
    return str(value)


def _kept_texts(dir_: str, rows, with_text: set, settings: dict | None = None, unread: list | None = None) -> dict:
    """The kept pages' stored texts for the rows that carry a dropped text, by kept URL; why the
    index could not be read goes into `unread`."""
    from .indexes import is_lmdb
    from .show import ReadOnlyIndex, ShowError

    out: dict[str, str] = {}
    try:
        index = ReadOnlyIndex(dir_, settings)
    except ShowError as exc:
        if not is_lmdb(settings):
            raise  # an index named with --redis / DEDUP_BACKEND that cannot be read: say so
        if unread is not None and os.path.exists(os.path.join(dir_, "data.mdb")):
            unread.append(str(exc))  # there, but unreadable: the report says so
        return out  # (an LMDB directory without an index: the dropped texts only)
    with index:
        idx_url, idx_fp = 1 + COLUMNS.index("duplicate_of"), -1
        for row in rows:
            url = row[idx_url]
            if row[0] not in with_text or not isinstance(url, str) or url in out:
                continue
            doc = index.kept(row[idx_fp], url)
            if doc is not None and doc.text is not None:
                out[url] = doc.text[:TEXT_CHARS]
    return out


def render(log: str, s: Summary, filters: Filters, data: dict, dir_: str | None) -> str:
    sim_labels = [f"{i / SIM_BINS:.2f}" for i in range(SIM_BINS)]
    top_dist = max([d for d, c in enumerate(s.dist_bins) if c] or [8])
    top_dist = max(top_dist, 8)
    t_labels, t_counts, t_step = time_series(s)
    domains = s.domains.top(15)
    plots = [
        bar_chart("plot-similarity", "similarity (verifier score)", sim_labels, s.sim_bins, "similarity, 0.05 bins"),
        bar_chart("plot-distance", "simhash distance", [str(d) for d in range(top_dist + 1)],
                  s.dist_bins[: top_dist + 1], "bits"),
        bar_chart("plot-time", "drops over time", t_labels, t_counts, f"time (UTC), {t_step} bins" if t_step else "no times"),
        hbar_chart("plot-domains", f"drops per domain (top {len(domains)})", [d or "(none)" for d, _ in domains],
                   [n for _, n in domains]),
    ]
    counts = "; ".join(", ".join(f"{k} {v}" for k, v in c.most_common()) for c in (s.by_reason, s.by_action) if c)
    notes = []
    if data["truncated"]:
        notes.append(f"The table holds the latest {len(data['rows'])} of {s.matched} matching drops; the plots use all of them.")
    if s.malformed.count:
        notes.append(f"{s.malformed.count} malformed line{' was' if s.malformed.count == 1 else 's were'} skipped.")
    if filters.active:
        notes.append(f"Filters: {filters.describe()}.")
    if not dir_:
        notes.append("No index given (--dir): the diff view shows the dropped text only where the kept text is known.")
    js_hash = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode()
    csp = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{js_hash}'; img-src data:"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>crawler-dedup report: {_esc(os.path.basename(log))}</title>
<style>{STYLE}</style></head>
<body>
<h1>What was dropped: {_esc(log)}</h1>
<p class="meta" id="summary">{s.matched} drop{'' if s.matched == 1 else 's'}{f' of {s.total} line' + ('' if s.total == 1 else 's') if s.matched != s.total else ''}, from {_esc(s.first or '-')} to {_esc(s.last or '-')}. {_esc(counts)}</p>
{''.join(f'<p class="note">{_esc(n)}</p>' for n in notes)}
<div class="plots">{''.join(plots)}</div>
<div class="controls"><input id="filter" type="search" placeholder="filter by URL or title" aria-label="filter">
<select id="reason" aria-label="reason"><option value="">all reasons</option></select> <span id="count"></span></div>
<table id="drops"><thead><tr id="head"></tr></thead><tbody id="rows"></tbody></table>
<p class="meta">Click a column header to sort, a row (or Enter on it) to open its diff under it; click again or Escape to close. Made by crawler-dedup report.</p>
<script type="application/json" id="data">{script_json(data)}</script>
<script>{SCRIPT}</script>
</body></html>
"""
