"""Text that is not the page's content: boilerplate learned from the pages kept (against
extraction collapse), and notices (consent, paywall, login) taken for the content.

When trafilatura returns a sign-up block, a consent notice, a comment form or a "trending now"
list instead of a page's content, two different pages get the same text. Such a block is on the
site's other pages too, outside their main text: each kept page files the lines it shows outside
its extracted text (its template), and a line a kept page shows so says nothing about a page
(Montanari & Puglisi, seed 004: boilerplate around the content makes false positives). A page
whose extracted text is mostly such lines, with little of its own, is not dropped on a match of
that text: how much of it is such lines is one of the measurements the score weighs
(decide/measures.py). Learned from the crawl, not from a list of phrases; filed in the index
(table `tpl`), so every process sharing it knows.
"""

from __future__ import annotations

import html as htmllib
import re

import numpy as np
import xxhash

from .extract import without

from .tokens import tokenize

MIN_WORDS = 5  # shorter lines (a menu entry, "Share") are left out on both sides
MAX_LINES = 64  # template lines a kept page files: its smallest hashes, so pages of one template
# file the same lines (a bottom-k sample)
PAGES = 1  # a line a kept page showed outside its text is boilerplate (2 missed the collapse of
# sites with few pages on the benchmark, at no gain in recall)
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


def template_share(lines: list[tuple[int, int]], counts: list[int], total_words: int) -> float | None:
    """The share of a text's words in lines `PAGES` kept pages showed outside their text (the
    site's template taken for the content); None for no words."""
    known = sum(words for (_, words), n in zip(lines, counts) if n >= PAGES)
    return min(1.0, known / total_words) if total_words > 0 else None


# -- notices: a consent, paywall, login or "enable JavaScript" text taken for the content -------
# trafilatura sometimes returns such a notice instead of the article (loaded by script, or
# hidden). It is the same on every page of a site, so without this every page would be a
# duplicate of the first one: such a text is not checked (Skip.NOTICE).

# words that dominate consent, paywall, login and "enable JavaScript" notices
NOTICE_WORDS = frozenset("""
cookie cookies consent consenting consents privacy partners personalised personalized preferences
advertising ads ad tracking identifiers geolocation device processing gdpr accept reject
subscribe subscription subscriber subscribers paywall login log sign signed register registration
limit unlimited
account javascript browser enable enabled disable disabled blocker adblock unsupported
newsletter premium trial
""".split())


def notice_share(tokens: list[str]) -> float:
    """Share of tokens that are consent/paywall/login vocabulary."""
    return sum(t in NOTICE_WORDS for t in tokens) / len(tokens) if tokens else 0.0


# phrases that only notices use; checked on the normalized words joined by single spaces
NOTICE_PHRASE_PATTERNS = (
    r"(?:we|this (?:site|website)) uses? cookies", r"accept (?:all )?cookies", r"cookie (?:policy|settings|preferences)",
    r"(?:store|access) (?:and access )?information on (?:a|your) device", r"personali[sz]ed (?:ads|advertising|content)",
    r"(?:your|manage) (?:privacy )?(?:choices|preferences|settings)", r"(?:refuse|withdraw) (?:your )?consent",
    r"(?:reached|hit|used) (?:your|the) (?:limit|maximum|monthly limit)", r"free articles?",
    r"(?:already|become) a subscriber", r"subscribe (?:now |today )?to (?:continue|read|keep reading)",
    r"unlimited (?:digital )?access", r"(?:sign|log) in to (?:continue|read|keep reading)",
    r"(?:enable|turn on) javascript", r"javascript is (?:disabled|required|not enabled)",
    r"(?:disable|turn off|pause) (?:your )?ad ?blocker", r"browser is (?:not supported|out of date)",
)
NOTICE_PHRASES = re.compile(r"\b(?:" + "|".join(NOTICE_PHRASE_PATTERNS) + r")\b")
# Every match of a phrase above holds one of these strings (pattern by pattern: cookie, cookie,
# cookie, information on, personali, choices/preferences/settings, consent, limit/maximum, free
# article, subscribe(r), subscribe, unlimited, sign/log in to, javascript, javascript, blocker,
# browser is). A text with none of them has no phrase: the phrase scan (tens of µs on a short
# text, the regex tried at every word) is skipped, with the same answer.
_PHRASE_HINTS = ("cookie", "information on", "personali", "choices", "preferences", "settings", "consent", "limit",
                 "maximum", "free article", "subscribe", "unlimited", "sign in to", "log in to", "javascript",
                 "blocker", "browser is")


def looks_like_notice(tokens: list[str], max_tokens: int = 400, share: float = 0.06) -> bool:
    """A short text that is a consent, paywall, login or "enable JavaScript" notice, not content:
    two notice phrases, or one in a text dense in notice words. (Density alone would skip a real
    article about cookie consent.)"""
    if len(tokens) > max_tokens:
        return False
    text = " ".join(tokens)
    for hint in _PHRASE_HINTS:
        if hint in text:
            break
    else:  # no phrase can match
        return False
    phrases = len(set(m.group(0) for m in NOTICE_PHRASES.finditer(text)))
    return phrases >= 2 or (phrases >= 1 and notice_share(tokens) >= share)
