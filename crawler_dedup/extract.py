"""Step 1: HTML -> main text, with trafilatura (no Scrapy here)."""

from __future__ import annotations

import html as htmllib
import re
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

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


_HEAD_END = re.compile(rb"</head\s*>|<body[\s>]", re.I)
_TAG = re.compile(rb"<(link|meta)\b([^>]*)>", re.I)
_ATTR = re.compile(rb"""([^\s=/>]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""")


def canonical_link(html: bytes | str, url: str, limit: int = 131072) -> str | None:
    """The page's rel=canonical URL (else its og:url), absolute, from the head; None if none.
    A regex over the head, not a parse: it runs on every page in the crawler's thread."""
    if not html:
        return None
    head = html[:limit].encode("utf-8", "replace") if isinstance(html, str) else bytes(html[:limit])
    end = _HEAD_END.search(head)
    if end:
        head = head[:end.start()]
    canonical = og = None
    for tag in _TAG.finditer(head):
        attrs = {m.group(1).lower(): m.group(2) if m.group(2) is not None else
                 m.group(3) if m.group(3) is not None else m.group(4) for m in _ATTR.finditer(tag.group(2))}
        if tag.group(1).lower() == b"link":
            if canonical is None and b"canonical" in attrs.get(b"rel", b"").lower().split() and attrs.get(b"href"):
                canonical = attrs[b"href"]
        elif og is None and (attrs.get(b"property") or attrs.get(b"name") or b"").lower() == b"og:url":
            og = attrs.get(b"content") or None
    value = canonical or og
    if not value:
        return None
    try:
        found = urljoin(url or "", htmllib.unescape(value.decode("utf-8", "replace")).strip())
    except ValueError:
        return None
    return found if urlsplit(found).scheme in ("http", "https") else None


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
