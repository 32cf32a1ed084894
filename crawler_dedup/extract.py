"""Step 1: HTML -> main text, with trafilatura (no Scrapy here)."""

from __future__ import annotations

import html as htmllib
import re
from dataclasses import dataclass

import trafilatura

_TITLE = re.compile(rb"<title[^>]*>(.*?)</title\s*>", re.I | re.S)


@dataclass(frozen=True)
class Extracted:
    text: str
    title: str | None


def page_title(html: bytes | str, limit: int = 65536) -> str | None:
    """The <title> text, found cheaply (no second parse of the page)."""
    head = html[:limit].encode("utf-8", "replace") if isinstance(html, str) else html[:limit]
    match = _TITLE.search(head)
    if not match:
        return None
    title = " ".join(htmllib.unescape(match.group(1).decode("utf-8", "replace")).split())
    return title[:300] or None


MODES = ("thorough", "fast")


def extract(html: bytes | str, url: str | None = None, mode: str = "thorough") -> Extracted | None:
    """Main text of a page, or None when there is none.

    deduplicate=False: trafilatura's own LRU dedup would silently blank repeated
    paragraphs across pages and so hide exactly the duplicates we report. mode "fast" skips
    trafilatura's fallback extractors (readability, jusText).
    """
    if not html:
        return None
    doc = trafilatura.bare_extraction(
        html, url=url, deduplicate=False, include_comments=False, include_tables=True, fast=(mode == "fast")
    )
    text = getattr(doc, "text", None) if doc is not None else None
    if not text or not text.strip():
        return None
    return Extracted(text=text, title=page_title(html))
