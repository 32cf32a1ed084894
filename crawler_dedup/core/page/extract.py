"""Step 1: HTML -> main text, with trafilatura (no Scrapy here); and `without`, the elements cut out
of markup in one pass, before extraction or a scan of the page's lines (boilerplate.py, visible.py)."""

from __future__ import annotations

import functools
import html as htmllib
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

import trafilatura

_TITLE = re.compile(rb"<title[^>]*>(.*?)</title\s*>", re.I | re.S)


# -- markup cut in one pass -------------------------------------------------------------------

SCRIPTS = re.compile(r"<(script|style)\b|<!--")  # on lowercased markup: what extraction drops anyway


def without(markup: str, skipped: re.Pattern = SCRIPTS, sep: str = "", hide_unclosed: bool = True) -> str:
    """`markup` without the elements (and comments) whose openings `skipped` finds, in one pass:
    a closing tag is searched for once per name and position, so a page of 8,000 self-closed or
    unclosed tags costs what a plain page does (a regex with a backreference rescanned the rest of
    the page at each). What is left is joined with `sep`. A comment never closed hides the rest, as
    in a browser; so does a script never closed, as lxml reads it (`hide_unclosed`; else it is cut
    to its opening tag)."""
    low = markup.lower()
    out: list[str] = []
    closer: dict[str, int] = {}  # a tag name -> where its next closing tag is (-1: none left)
    pos = 0
    while True:
        m = skipped.search(low, pos)
        if m is None:
            out.append(markup[pos:])
            return sep.join(out)
        out.append(markup[pos:m.start()])
        name = m.group(1)
        if name is None:  # a comment: to its end
            end = low.find("-->", m.end())
            pos = len(low) if end < 0 else end + 3
            continue
        tag_end = low.find(">", m.end())
        if tag_end < 0:
            return sep.join(out)
        if low[tag_end - 1] == "/":  # self-closed
            pos = tag_end + 1
            continue
        close = closer.get(name)
        if close is None or (0 <= close < tag_end):
            close = closer[name] = low.find("</" + name, tag_end)
        if close < 0:  # never closed
            if hide_unclosed:
                return sep.join(out)
            pos = tag_end + 1
            continue
        end = low.find(">", close)
        pos = len(low) if end < 0 else end + 1


# -- extraction ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Extracted:
    text: str
    title: str | None
    tree: Any = field(default=None, compare=False, repr=False)  # the page's one parse, for its view

    def __reduce__(self):  # sent from a worker without its parse (an lxml tree cannot be pickled)
        return (Extracted, (self.text, self.title))


def page_title(html: bytes | str, limit: int = 524288) -> str | None:
    """The <title> text, else the og:title or twitter:title of the head, found cheaply (no
    second parse of the page): the title measurements need one on both pages to tell two pages apart.
    News pages put 100 KB of inline scripts and styles before their title: the first `limit`
    bytes are searched, by substring (a regex over them would cost more than the rest)."""
    head = html[:limit].encode("utf-8", "replace") if isinstance(html, str) else bytes(html[:limit])
    starts = [pos for pos in (head.find(b"<title"), head.find(b"<TITLE"), head.find(b"<Title")) if pos >= 0]
    match = _TITLE.match(head, min(starts)) if starts else None
    raw = match.group(1).decode("utf-8", "replace") if match else None
    if raw is None or not raw.strip():
        end = head.find(b"<body")
        text = head[:end if end >= 0 else len(head)].decode("latin-1")
        for _, attrs in _tags_around(text, ("og:title", "OG:TITLE", "twitter:title")):
            if (attrs.get("property") or attrs.get("name") or "").lower() in ("og:title", "twitter:title"):
                raw = attrs.get("content", "").encode("latin-1").decode("utf-8", "replace")
                break
    if raw is None:
        return None
    title = " ".join(htmllib.unescape(raw).split())
    return title[:300] or None


_TAG = re.compile(r"<(link|meta)\b([^>]*)>", re.I)
_ATTR = re.compile(r"""([^\s=/>]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""")


def _tags_around(head: str, needles: tuple[str, ...]):
    """The <link>/<meta> tags of `head` that hold one of `needles` (found by plain substring
    search, which is far faster than a case-insensitive regex over a head full of scripts)."""
    for needle in needles:
        pos = head.find(needle)
        while pos >= 0:
            start, end = head.rfind("<", 0, pos), head.find(">", pos)
            if start >= 0 and end >= 0:
                tag = _TAG.match(head, start, end + 1)
                if tag:
                    yield tag.group(1).lower(), {m.group(1).lower(): next(g for g in m.group(2, 3, 4) if g is not None)
                                                 for m in _ATTR.finditer(tag.group(2))}
            pos = head.find(needle, pos + 1)


def canonical_link(html: bytes | str, url: str, limit: int = 524288) -> str | None:
    """The page's rel=canonical URL (else its og:url), absolute, from the head; None if none.
    Substring search, not a parse: it runs on every page in the crawler's thread."""
    if not html:
        return None
    head = html[:limit]
    if not isinstance(head, str):
        head = bytes(head).decode("latin-1")  # bytes as code points 0-255: ASCII markup stays ASCII
    for closing in ("</head", "</HEAD", "<body", "<BODY"):
        end = head.find(closing)
        if end >= 0:
            head = head[:end]
            break
    value = None
    for kind, attrs in _tags_around(head, ("canonical", "CANONICAL", "Canonical")):
        if kind == "link" and "canonical" in attrs.get("rel", "").lower().split() and attrs.get("href"):
            value = attrs["href"]
            break
    if value is None:
        for kind, attrs in _tags_around(head, ("og:url", "OG:URL")):
            if kind == "meta" and (attrs.get("property") or attrs.get("name") or "").lower() == "og:url":
                value = attrs.get("content")
                break
    if not value:
        return None
    if not isinstance(html, str):
        value = value.encode("latin-1").decode("utf-8", "replace")
    try:
        found = urljoin(url or "", htmllib.unescape(value).strip())
    except ValueError:
        return None
    return found if urlsplit(found).scheme in ("http", "https") else None




MAX_MARKUP = 2_000_000  # characters of markup extracted from, scripts and styles cut: far beyond any article


def for_extraction(html: bytes | str) -> str:
    """The markup trafilatura gets: decoded as it decodes, without scripts, styles and comments
    (which it drops anyway: the same text on all 311 pages of the shared data, 5% faster, 3x on a
    page of 1.4 MB of scripts), and cut at MAX_MARKUP characters."""
    if not isinstance(html, str):
        from trafilatura.utils import decode_file

        html = decode_file(bytes(html))
    markup = without(html)
    return markup[:MAX_MARKUP]


@functools.lru_cache(maxsize=1)
def _parser():
    """trafilatura's HTML parser, but choosing each element's class in C: lxml.html's own lookup
    is a Python call for every element object made (1.5 ms a page in trafilatura and the view).
    Every element is an HtmlElement, as trafilatura expects; only lxml.html's form classes
    (FormElement, InputElement, ...), which neither reads, are gone."""
    from lxml import etree
    from lxml.html import HtmlComment, HtmlElement, HtmlEntity, HtmlProcessingInstruction, HTMLParser

    parser = HTMLParser(collect_ids=False, default_doctype=False, encoding="utf-8", remove_comments=True, remove_pis=True)
    parser.set_element_class_lookup(etree.ElementDefaultClassLookup(
        element=HtmlElement, comment=HtmlComment, pi=HtmlProcessingInstruction, entity=HtmlEntity))
    return parser


def parse(html: bytes | str):
    """The page's one parse: the lxml tree trafilatura.utils.load_html makes of for_extraction's
    markup, by its steps, with _parser (trafilatura copies a tree it is given, so the page's view
    can read the same parse afterwards); None when the markup cannot be read."""
    from lxml.html import fromstring
    from trafilatura.utils import is_dubious_html, repair_faulty_html

    markup = for_extraction(html) if html else ""
    if not markup:
        return None
    beginning = markup[:50].lower()
    markup = repair_faulty_html(markup, beginning)
    tree = None
    try:
        tree = fromstring(markup, parser=_parser())
    except Exception:  # ValueError: a str with an encoding declaration, which lxml takes as bytes only
        pass
    if tree is None or len(tree) < 1:
        try:
            tree = fromstring(markup.encode("utf8", "surrogatepass"), parser=_parser())
        except Exception:
            return None
    if tree is not None and is_dubious_html(beginning) and len(tree) < 2:
        return None
    return tree


def extract(html: bytes | str, url: str | None = None, mode: str = "thorough") -> Extracted | None:
    """Main text of a page, or None when there is none; with the parse it was read from.

    deduplicate=False: trafilatura's own LRU dedup would silently blank repeated
    paragraphs across pages and so hide exactly the duplicates we report. mode "fast" skips
    trafilatura's fallback extractors (readability, jusText).
    """
    tree = parse(html)
    if tree is None:
        return None
    doc = trafilatura.bare_extraction(
        tree, url=url, deduplicate=False, include_comments=False, include_tables=True, fast=(mode == "fast"),
    )
    text = getattr(doc, "text", None) if doc is not None else None
    if not text or not text.strip():
        return None
    return Extracted(text=text, title=page_title(html), tree=tree)
