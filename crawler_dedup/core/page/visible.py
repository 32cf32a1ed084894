"""The page as a reader sees it, beside its extracted main text: every word it shows, and how much
of the main text is the site's chrome.

Extraction sometimes takes the wrong block of a page: a related-articles list, a comment thread,
the template around an article put in another site's page. Two copies of one article then share
little main text although one page shows the other's article whole. A page's view keeps the
word 5-shingles of all its visible text (rules.contained compares one page's main text with the
other's visible text), and the share of its main text that sits in its chrome: navigation,
header and footer, sidebars, consent and newsletter dialogs (a main text that is chrome is no
evidence: decide.py, rules.contained). It reads the parse extraction made (extract.parse), about
2 ms a page in the extraction workers; given markup alone, it parses it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np

from .features import shingles
from .extract import without
from .tokens import tokenize

W = 5  # words a shingle: exact containment of 5-word shingles is what the benchmark's reference measures
SAMPLE = 4  # a kept page files the visible shingles whose hash is 0 mod SAMPLE (a sample keeps containment)
MAX_SAMPLE = 2048  # at most this many (the smallest): a huge page's sample is a bottom-k of it
# without the kept texts (DEDUP_STORE_TEXT=False, as a Redis index is run for its memory) a kept
# page files a thinner view instead: a sample of its visible text and one of its main text
THIN_VISIBLE = 32  # the visible shingles whose hash is 0 mod this, as their high 16 bits
THIN_MAIN = 32  # the main text's shingles whose hash is 0 mod this, as their high 24 bits (compared with a
# page's whole visible text: 24 bits keep chance matches under 0.02% of a long page's shingles)
MAX_THIN = 128  # values of each at most (the smallest: a huge page's sample is a bottom-k of it)
MAX_CHARS = 2_000_000  # markup read (a huge page: its first part)
WEAK_SHARE = 0.6  # a weak chrome element holding this share of the page's words is a wrapper, not chrome

_UNSHOWN = ("script", "style", "noscript", "template", "svg", "select", "head")  # elements a reader never sees
_UNSHOWN_TAGS = frozenset(_UNSHOWN)
_HIDDEN = re.compile(r"<(" + "|".join(_UNSHOWN) + r")\b|<!--")  # on lowercased markup
# a block element's boundary is a word boundary even in minified markup ("end</p><p>Next")
_BLOCKS = ("p", "div", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "br", "tr", "td", "th", "table", "section",
           "article", "aside", "header", "footer", "nav", "blockquote", "pre", "dd", "dt", "figure", "figcaption", "main",
           "hr", "form", "label", "button")
_BLOCK = re.compile(r"<(?=/?(?:" + "|".join(_BLOCKS) + r")\b)", re.I)  # (on markup, when no parse is given)
_NAME = re.compile(r"[^a-z0-9]+")
# Chrome, told by markup alone. Strong: a consent or cookie dialog, any size (it can be most of a
# thin page's words). Weak: navigation, header and footer, sidebars, sign-up boxes, unless the
# element holds most of the page (a layout wrapper named "has-sidebar" holds the article too).
_STRONG_NAMES = frozenset("cookie cookies consent gdpr ccpa onetrust didomi usercentrics cookiebot truste".split())
_STRONG_ROLES = frozenset(("dialog", "alertdialog"))
_WEAK_TAGS = frozenset(("nav", "header", "footer", "aside"))
_WEAK_ROLES = frozenset("navigation banner contentinfo complementary menu menubar search".split())
_WEAK_NAMES = frozenset("nav navbar navigation menu menubar submenu megamenu footer sidebar breadcrumb breadcrumbs "
                        "newsletter subscribe signup modal popup promo".split())
_WRAPPERS = frozenset("wrap wrapper layout container content contents main body page site inner outer row col column "
                      "grid section has with is article post entry story text richtext segment enabled fixed open "
                      "active".split())
_NEVER = frozenset(("html", "body", "main", "article"))
_ANY_NAME = re.compile("|".join(sorted(_STRONG_NAMES | _WEAK_NAMES)), re.I)  # a quick no for most elements


@dataclass
class PageView:
    """A page's visible text (5-shingle hashes, sorted, distinct) and its main text's chrome share."""

    visible: np.ndarray
    chrome: float  # share of the main text's 5-shingles that are in the page's chrome

    def sample(self) -> np.ndarray:
        return sample(self.visible)


def main_shingles(text: str | list[str]) -> np.ndarray:
    """The distinct 5-shingle hashes of a text or its tokens (a main text, compared with visible texts)."""
    tokens = tokenize(text or "") if isinstance(text, str) else text
    return np.unique(shingles(tokens, W)) if len(tokens) >= W else np.empty(0, np.uint64)


def sample(values: np.ndarray) -> np.ndarray:
    """The hashes that are 0 mod SAMPLE, as big-endian uint32 (their high bits), at most MAX_SAMPLE."""
    picked = values[values % np.uint64(SAMPLE) == 0]
    high = np.unique((picked >> np.uint64(32)).astype(np.uint32))
    return high[:MAX_SAMPLE]


def sampled_containment(main: np.ndarray, visible_sample: np.ndarray, at_least: int = 8) -> float | None:
    """How much of a main text (its 5-shingles) a page's visible sample holds, estimated on the
    main text's own sample; None when that sample is too small to tell."""
    mine = sample(main)
    if visible_sample.size >= MAX_SAMPLE:  # a capped sample: only hashes under its cut are comparable
        mine = mine[mine <= visible_sample[-1]]
    if mine.size < at_least:
        return None
    return float(np.isin(mine, visible_sample, assume_unique=True).mean())


def thin_visible(visible: np.ndarray) -> bytes:
    """A kept page's thin visible sample (the record's `vt`): high 16 bits of the hashes 0 mod THIN_VISIBLE."""
    return thin_values(visible).astype(">u2").tobytes()


def thin_values(values: np.ndarray) -> np.ndarray:
    """The thin sample of 5-shingle hashes as thin_visible files it, unpacked (uint16, sorted)."""
    picked = values[values % np.uint64(THIN_VISIBLE) == 0]
    return np.unique((picked >> np.uint64(48)).astype(np.uint16))[:MAX_THIN]


def thin_contained(main: np.ndarray, kept: bytes, at_least: int = 6) -> float | None:
    """How much of a main text a kept page's thin visible sample holds (sampled_containment's
    thin kind); None when the main text's own thin sample is too small to tell."""
    theirs = np.frombuffer(kept, dtype=">u2").astype(np.uint16)
    picked = main[main % np.uint64(THIN_VISIBLE) == 0]
    mine = np.unique((picked >> np.uint64(48)).astype(np.uint16))
    if theirs.size >= MAX_THIN:
        mine = mine[mine <= theirs[-1]]
    if mine.size < at_least:
        return None
    return float(np.isin(mine, theirs, assume_unique=True).mean())


def thin_main(main: np.ndarray) -> bytes:
    """A kept page's thin main-text sample (the record's `mt`): high 24 bits of the hashes 0 mod
    THIN_MAIN, 3 bytes each, the smallest MAX_THIN."""
    picked = main[main % np.uint64(THIN_MAIN) == 0]
    high = np.unique(picked >> np.uint64(40))[:MAX_THIN]
    return high.astype(">u4").view(np.uint8).reshape(-1, 4)[:, 1:].tobytes()


def main_in(kept: bytes, values: np.ndarray) -> float | None:
    """How much of a kept page's main text (its thin sample) `values` holds (a page's visible or
    main shingles); None for an empty sample."""
    three = np.frombuffer(kept, dtype=np.uint8).reshape(-1, 3).astype(np.uint32)
    theirs = (three[:, 0] << 16) | (three[:, 1] << 8) | three[:, 2]
    if not theirs.size:
        return None
    cut = theirs.max()
    mine = np.unique((values >> np.uint64(40)).astype(np.uint32))
    return float(np.isin(theirs, mine[mine <= cut], assume_unique=True).mean())


def containment(main: np.ndarray, visible: np.ndarray) -> float:
    """Exact share of `main`'s shingles in `visible` (both sorted and distinct)."""
    if not main.size:
        return 0.0
    return float(np.isin(main, visible, assume_unique=True).mean())


_KINDS: dict[tuple, str | None] = {}  # what each tag, class, id and role says (pages repeat them)


def _chrome_texts(root, shown, words: int) -> list[str]:
    """The text of each outermost element whose markup calls it chrome: strong always, weak while
    it holds under WEAK_SHARE of the page's `words`. One walk in document order that skips what a
    chosen element holds (no ancestor lookups); most elements are answered by two attribute reads."""
    from lxml import etree

    kinds, weak, unshown = _KINDS, _WEAK_TAGS, _UNSHOWN_TAGS
    texts: list[str] = []
    walker = etree.iterwalk(root, events=("start",), tag=etree.Element)
    for _, el in walker:
        get, tag = el.get, el.tag
        kind: str | None
        if tag in unshown:  # (left in the tree: cutting it out costs more than passing it by)
            walker.skip_subtree()
            continue
        cls, id_, role = get("class"), get("id"), get("role")
        if cls is None and id_ is None and role is None:  # most elements: the tag alone says
            if tag in weak:
                kind = "weak"
            elif tag == "dialog":
                kind = "strong"
            else:
                continue
        else:
            key = (tag, cls, id_, role, get("aria-modal"))
            kind = kinds.get(key, "?")
            if kind == "?":
                if len(kinds) > 100_000:
                    kinds.clear()
                kind = kinds[key] = _read_kind(*key)
            if kind is None:
                continue
        its = shown(el)
        if kind == "strong" or len(its.split()) < WEAK_SHARE * words:
            texts.append(its)
            walker.skip_subtree()
    return texts


def _read_kind(tag: str, cls: str | None, id_: str | None, role: str | None, modal: str | None) -> str | None:
    if tag in _NEVER:
        return None
    role = role.lower() if role else ""
    if tag == "dialog" or role in _STRONG_ROLES or (modal or "").lower() == "true":
        return "strong"
    named = f"{cls or ''} {id_ or ''}"
    if not _ANY_NAME.search(named):
        return "weak" if tag in _WEAK_TAGS or role in _WEAK_ROLES else None
    names = [set(_NAME.split(n)) for n in named.lower().split() if n]
    if any(n & _STRONG_NAMES for n in names):
        return "strong"
    if tag in _WEAK_TAGS or role in _WEAK_ROLES or any(n & _WEAK_NAMES and not n & _WRAPPERS for n in names):
        return "weak"
    return None


def _text(el) -> str:
    from lxml import etree

    # the serializer's text method is in C: a third of what joining itertext() costs
    return etree.tostring(el, method="text", encoding="unicode", with_tail=False)


def _mark_blocks(root) -> None:
    for el in root.iter(_BLOCKS):  # a block's ends are word boundaries even in minified markup
        el.text = "\n" + el.text if el.text else "\n"
        el.tail = "\n" + el.tail if el.tail else "\n"


@functools.lru_cache(maxsize=1)
def _blocks_xslt():
    from lxml import etree

    return etree.XSLT(etree.XML(
        '<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">'
        '<xsl:output method="text" encoding="UTF-8"/>'
        # the element given, not the document's other top-level nodes (text after </html>)
        '<xsl:template match="/"><xsl:apply-templates select="*[1]"/></xsl:template>'
        f'<xsl:template match="{"|".join(_UNSHOWN)}"/>'  # what a reader never sees (its tail is shown)
        f'<xsl:template match="{"|".join(_BLOCKS)}"><xsl:text>&#10;</xsl:text><xsl:apply-templates/>'
        '<xsl:text>&#10;</xsl:text></xsl:template></xsl:stylesheet>'))


def _blocks_text(el) -> str:
    """An element's text with a line feed at each block's start and end (word boundaries even in
    minified markup: "end</p><p>Next"), as _mark_blocks then _text make it, but in one pass in C
    that leaves the tree alone (half what marking every block from Python costs)."""
    return str(_blocks_xslt()(el))


@functools.lru_cache(maxsize=1)
def _parser():
    from lxml import etree

    return etree.HTMLParser(remove_comments=True, remove_pis=True, no_network=True, recover=True)


def page_view(html: str | bytes | None, text: str, main: np.ndarray | None = None, tree=None) -> PageView | None:
    """The view of a page whose extracted main text is `text`; None when the markup cannot be read.
    `tree`: the page's parse already made (extract.parse), read instead of parsing `html` again
    (and left as it is, but on a page nested past XSLT's depth).
    `main`: main_shingles(text), if made already."""
    from lxml import etree

    shown = _text
    if tree is not None:
        root, shown = tree, _blocks_text  # (which leaves out what a reader never sees, as _chrome_texts does)
    else:
        markup = html.decode("utf-8", "replace") if isinstance(html, (bytes, bytearray)) else str(html or "")
        markup = _BLOCK.sub("\n<", without(markup[:MAX_CHARS], _HIDDEN, sep=" ", hide_unclosed=False))
        try:
            root = etree.fromstring(markup, _parser())
        except (etree.ParserError, ValueError):
            return None
    if root is None:
        return None
    try:
        all_text = shown(root)
    except etree.XSLTError:  # (a tree nested past XSLT's depth): its block ends marked by hand
        etree.strip_elements(root, *_UNSHOWN, with_tail=False)
        _mark_blocks(root)
        all_text, shown = _text(root), _text
    chrome_text = _chrome_texts(root, shown, len(all_text.split()) or 1)
    visible = main_shingles(all_text)
    main = main_shingles(text) if main is None else main
    share = 0.0
    if main.size and chrome_text:
        share = containment(main, main_shingles(" ".join(chrome_text)))
    return PageView(visible=visible, chrome=round(share, 3))
