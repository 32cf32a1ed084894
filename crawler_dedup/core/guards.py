"""Extraction guards: text that is not the page's own content must not make pages duplicates.

trafilatura sometimes returns a consent banner, a paywall or "enable JavaScript" notice, or a
promo block instead of the article (the article is loaded by script, or hidden). Such text is
the same on every page of a site, so without a guard every page would be a duplicate of the
first one.
"""

from __future__ import annotations

import re

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


def title_parts(title: str) -> list[frozenset[str]]:
    """A title's parts (split at " | ", " - ", ...) as word sets, without the marks of a print,
    mobile or AMP version ("Storm hits coast (print)" is the title of "Storm hits coast")."""
    title = _BRACKETED.sub(lambda m: " " if _version_mark(_words(m.group(1))) else m.group(0), title)
    return [w for w in map(_words, _SEPARATORS.split(title)) if w and not _version_mark(w)]


def _jaccard(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def titles_disagree(a: str | None, b: str | None, at_most: float = 0.2) -> bool:
    """Both titles known and naming different stories.

    Titles are split at " | ", " - ", ... into parts, without the marks of a print or mobile
    version. A shared part of 3+ words is the same headline under other site names or section
    prefixes, unless both titles have headlines of their own beside it (then it is the site's
    name); a title that is one part of the other is that page; the same first part, longest in
    both, is the same headline ("Storm | Daily" vs "Storm - Other Paper"). Otherwise parts both
    share are taken for site names and the longest remaining parts are compared ("Storm | Daily"
    vs "Vote | Daily"). When unsure this says "disagree": a missed copy costs less than a lost page.
    """
    if not a or not b:
        return False
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
