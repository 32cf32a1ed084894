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
account javascript browser enable enabled disable disabled blocker adblock unsupported
newsletter premium trial
""".split())

_SEPARATORS = re.compile(r"\s+[|\-–—:·•»]\s+")
_WORD = re.compile(r"\w+")


def notice_share(tokens: list[str]) -> float:
    """Share of tokens that are consent/paywall/login vocabulary."""
    return sum(t in NOTICE_WORDS for t in tokens) / len(tokens) if tokens else 0.0


def looks_like_notice(tokens: list[str], max_tokens: int = 400, share: float = 0.06) -> bool:
    """A short text dense in consent/paywall/login words: a notice, not the page's content."""
    return len(tokens) <= max_tokens and notice_share(tokens) >= share


def _words(text: str) -> frozenset[str]:
    return frozenset(w.casefold() for w in _WORD.findall(text))


def _jaccard(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def titles_disagree(a: str | None, b: str | None, at_most: float = 0.2) -> bool:
    """Both titles known and naming different stories.

    Titles are split at " | ", " - ", ... into parts. The same first part, longest in both, is
    the same headline ("Storm | Daily" vs "Storm - Other Paper"). Otherwise parts both share are
    taken for site names and the longest remaining parts are compared ("Storm | Daily" vs
    "Vote | Daily"). When unsure this says "disagree": a missed copy costs less than a lost page.
    """
    if not a or not b:
        return False
    parts_a = [w for w in map(_words, _SEPARATORS.split(a)) if w]
    parts_b = [w for w in map(_words, _SEPARATORS.split(b)) if w]
    if not parts_a or not parts_b:
        return False
    if parts_a[0] == parts_b[0] and len(parts_a[0]) >= max(map(len, parts_a)) and len(parts_b[0]) >= max(
            map(len, parts_b)):
        return False
    shared = set(parts_a) & set(parts_b)
    rest_a = [p for p in parts_a if p not in shared]
    rest_b = [p for p in parts_b if p not in shared]
    if not rest_a or not rest_b:
        return False  # one title is the other plus or minus a site name
    return _jaccard(max(rest_a, key=len), max(rest_b, key=len)) <= at_most
