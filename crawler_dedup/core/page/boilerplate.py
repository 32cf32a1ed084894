"""Boilerplate learned from the pages kept, against extraction collapse.

When trafilatura returns a sign-up block, a consent notice, a comment form or a "trending now"
list instead of a page's content, two different pages get the same text. Such a block is on the
site's other pages too, outside their main text: each kept page files the lines it shows outside
its extracted text (its template), and a line a kept page shows so says nothing about a page
(Montanari & Puglisi, seed 004: boilerplate around the content makes false positives). A page
whose extracted text is mostly such lines, with little of its own, is not dropped on a match of
that text: it is kept and counted in `dedup/guarded/boilerplate`. Learned from the crawl, not
from a list of phrases; filed in the index (table `tpl`), so every process sharing it knows.
"""

from __future__ import annotations

import html as htmllib
import re

import numpy as np
import xxhash

from .markup import without

from .tokens import tokenize

MIN_WORDS = 5  # shorter lines (a menu entry, "Share") are left out on both sides
MAX_LINES = 64  # template lines a kept page files: its smallest hashes, so pages of one template
# file the same lines (a bottom-k sample)
PAGES = 1  # a line a kept page showed outside its text is boilerplate (2 missed the collapse of
# sites with few pages on the benchmark, at no gain in recall)
SHARE = 0.5  # a page whose text is this much boilerplate, and whose other words are fewer than
REST = 100  # this, is not a copy on that text's evidence (a copy of an article in a site's leftovers is)
MAX_CHARS = 2_000_000  # markup read for template lines (a huge page: its head is enough)

_SKIPPED = re.compile(r"<(script|style|noscript|template|svg|head|select)\b|<!--")  # on lowercased markup
_BLOCK = re.compile(r"(?i)<\s*/?\s*(?:p|div|li|ul|ol|h[1-6]|br|tr|td|th|table|tbody|section|article|aside|header"
                    r"|footer|nav|form|blockquote|pre|dd|dt|dl|figure|figcaption|main|button|label|hr|body|html)\b[^>]*>")
_TAG = re.compile(r"<[^>]*>")
_ASCII_WORD = re.compile(r"[a-z0-9]+")


def _shown(markup: str) -> str:
    """The markup without scripts, styles, inline SVG, form options and comments (markup.without)."""
    return without(markup, _SKIPPED, sep=" ", hide_unclosed=False)


def _tokens(text: str) -> list[str]:
    """tokenize(text), with a quicker path for ASCII (its words: runs of letters and digits,
    lowercased, "_" a separator); a page has hundreds of short segments."""
    return _ASCII_WORD.findall(text.lower()) if text.isascii() else tokenize(text)


def _key(tokens: list[str]) -> int:
    return xxhash.xxh64_intdigest(" ".join(tokens).encode("utf-8", "surrogatepass"))


def text_lines(text: str) -> list[tuple[int, int]]:
    """(key, words) of each line of an extracted text that is long enough to tell anything."""
    out = []
    for line in text.splitlines():
        tokens = _tokens(line)
        if len(tokens) >= MIN_WORDS:
            out.append((_key(tokens), len(tokens)))
    return out


def template_keys(html: str | bytes, text: str) -> np.ndarray:
    """The keys of the lines the page shows outside its extracted text `text`, at most MAX_LINES
    (the smallest). Lines are cut at block tags; one inside the text (cut otherwise there) is not
    template."""
    markup = html.decode("utf-8", "replace") if isinstance(html, (bytes, bytearray)) else str(html)
    body = max(markup.find("<body", 0, MAX_CHARS), markup.find("<BODY", 0, MAX_CHARS))  # (a head shows nothing)
    markup = _shown(markup[max(body, 0):MAX_CHARS])
    own = f" {' '.join(tokenize(text))} "
    keys = set()
    for segment in _BLOCK.split(markup):
        if len(segment) < MIN_WORDS or segment.isspace():
            continue
        if "<" in segment or "&" in segment:
            segment = htmllib.unescape(_TAG.sub(" ", segment))
        tokens = _tokens(segment)
        if len(tokens) < MIN_WORDS:
            continue
        joined = " ".join(tokens)
        if f" {joined} " in own:
            continue
        keys.add(xxhash.xxh64_intdigest(joined.encode("utf-8", "surrogatepass")))
    return np.array(sorted(keys)[:MAX_LINES], dtype=np.uint64)


def collapsed(lines: list[tuple[int, int]], counts: list[int], total_words: int) -> bool:
    """Most of a text's words are in lines `PAGES` kept pages showed outside their text, and
    what is left is too short to be a page's content."""
    known = sum(words for (_, words), n in zip(lines, counts) if n >= PAGES)
    return total_words > 0 and known >= SHARE * total_words and total_words - known < REST
