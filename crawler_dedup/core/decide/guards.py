"""Extraction guards: text that is not the page's own content must not make pages duplicates.

trafilatura sometimes returns a consent banner, a paywall or "enable JavaScript" notice, or a
promo block instead of the article (the article is loaded by script, or hidden). Such text is
the same on every page of a site, so without a guard every page would be a duplicate of the
first one.
"""

from __future__ import annotations

import re

import xxhash

# words that dominate consent, paywall, login and "enable JavaScript" notices
NOTICE_WORDS = frozenset("""
cookie cookies consent consenting consents privacy partners personalised personalized preferences
advertising ads ad tracking identifiers geolocation device processing gdpr accept reject
subscribe subscription subscriber subscribers paywall login log sign signed register registration
limit unlimited
account javascript browser enable enabled disable disabled blocker adblock unsupported
newsletter premium trial
""".split())

_SEPARATORS = re.compile(r"\s+[|\-–—:·•»]\s+")
_WORD = re.compile(r"\w+")
# what marks a print, mobile or AMP version in its title: "(print)", "[Printer-friendly version]"
_VERSION_WORDS = frozenset("print printer friendly printable version view edition mobile amp".split())
_BRACKETED = re.compile(r"[(\[]([^()\[\]]*)[)\]]")
HEADLINE_WORDS = 3  # a part of a title this long, shared by two titles, is their headline
PREFIX_WORDS = 4  # a headline cut short ("Storm hits the coast of…") is found by its first words
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


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


def _words(text: str) -> frozenset[str]:
    return frozenset(w.casefold() for w in _WORD.findall(text))


def _version_mark(words: frozenset[str]) -> bool:
    return bool(words) and words <= _VERSION_WORDS and bool(words & {"print", "printer", "printable", "mobile", "amp"})


def _ordered_parts(title: str) -> list[list[str]]:
    title = _BRACKETED.sub(lambda m: " " if _version_mark(_words(m.group(1))) else m.group(0), title)
    parts = ([w.casefold() for w in _WORD.findall(part)] for part in _SEPARATORS.split(title))
    return [p for p in parts if p and not _version_mark(frozenset(p))]


def title_parts(title: str) -> list[frozenset[str]]:
    """A title's parts (split at " | ", " - ", ...) as word sets, without the marks of a print,
    mobile or AMP version ("Storm hits coast (print)" is the title of "Storm hits coast")."""
    return [frozenset(p) for p in _ordered_parts(title)]


def headline_keys(title: str | None) -> list[bytes]:
    """The keys a kept page is filed under by its title (the index's `heads` table): each part's
    words, and the first PREFIX_WORDS words of a longer part (a copy's title cut short)."""
    if not title:
        return []
    keys = []
    for words in _ordered_parts(title):
        keys.append(xxhash.xxh64_digest(("h " + " ".join(words)).encode("utf-8", "surrogatepass")))
        if len(words) > PREFIX_WORDS:
            keys.append(xxhash.xxh64_digest(("p " + " ".join(words[:PREFIX_WORDS])).encode("utf-8", "surrogatepass")))
    return list(dict.fromkeys(keys))


def headline_coverage(title: str | None, words: frozenset[str] | set[str]) -> float | None:
    """How many of the title's headline words (its longest part's, 4+ letters) a text's words
    hold; None for a headline of fewer than two such words (too little to tell)."""
    parts = _ordered_parts(title or "")
    if not parts:
        return None
    wanted = {w for w in max(parts, key=len) if len(w) >= 4}
    return len(wanted & words) / len(wanted) if len(wanted) >= 2 else None


def same_headline(a: str | None, b: str | None) -> bool:
    """Both titles known, not disagreeing, and sharing a part: the same words, or (a title cut
    short, a character garbled) 4+ words of which 80% are the other's."""
    if not a or not b or titles_disagree(a, b):
        return False
    for p in title_parts(a):
        for q in title_parts(b):
            if p == q or (min(len(p), len(q)) >= PREFIX_WORDS and len(p & q) >= 0.8 * min(len(p), len(q))):
                return True
    return False


def _jaccard(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def titles_disagree(a: str | None, b: str | None, at_most: float = 0.2) -> bool:
    """Both titles known and naming different stories.

    Titles that each carry a number the other lacks name different things (a product in two
    sizes, part 1 and part 2; "Top 10 tips - 2024" is still "Top 10 tips"). Titles are split at " | ", " - ", ... into parts, without the
    marks of a print or mobile version. A shared part of 3+ words is the same headline under other site names or section
    prefixes, unless both titles have headlines of their own beside it (then it is the site's
    name); a title that is one part of the other is that page; the same first part, longest in
    both, is the same headline ("Storm | Daily" vs "Storm - Other Paper"). Otherwise parts both
    share are taken for site names and the longest remaining parts are compared ("Storm | Daily"
    vs "Vote | Daily"). When unsure this says "disagree": a missed copy costs less than a lost page.
    """
    if not a or not b:
        return False
    numbers_a, numbers_b = set(_NUMBER.findall(a)), set(_NUMBER.findall(b))
    if numbers_a - numbers_b and numbers_b - numbers_a:
        return True  # one product in two sizes, part 1 and part 2, two years' editions
    parts_a, parts_b = title_parts(a), title_parts(b)
    if not parts_a or not parts_b:
        return False
    shared = set(parts_a) & set(parts_b)
    rest_a = [p for p in parts_a if p not in shared]
    rest_b = [p for p in parts_b if p not in shared]
    if any(len(p) >= HEADLINE_WORDS for p in shared):
        # a headline shared under two site names ("Storm hits coast | Daily", "News - Storm hits coast -
        # Wire"), unless it is the site's name over two headlines of their own
        own_a = [p for p in rest_a if len(p) >= HEADLINE_WORDS]
        own_b = [p for p in rest_b if len(p) >= HEADLINE_WORDS]
        if not (own_a and own_b and _jaccard(max(own_a, key=len), max(own_b, key=len)) <= at_most):
            return False
    if (len(parts_a) == 1 and parts_a[0] in shared) or (len(parts_b) == 1 and parts_b[0] in shared):
        return False  # one title is a part of the other ("Chess Sets (print)", "Chess Sets - Regency Chess Co")
    if parts_a[0] == parts_b[0] and len(parts_a[0]) >= max(map(len, parts_a)) and len(parts_b[0]) >= max(
            map(len, parts_b)):
        return False
    if not rest_a or not rest_b:
        return False  # one title is the other plus or minus a site name
    return _jaccard(max(rest_a, key=len), max(rest_b, key=len)) <= at_most
