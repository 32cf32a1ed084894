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


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def titles_disagree(a: str | None, b: str | None, at_most: float = 0.2) -> bool:
    """Both titles known, and no part of one shares more than `at_most` of its words with a part
    of the other ("Story - Site" against "Story | Other Site" agree through "Story")."""
    if not a or not b:
        return False
    parts_a = [a] + _SEPARATORS.split(a)
    parts_b = [b] + _SEPARATORS.split(b)
    words = lambda text: {w.casefold() for w in _WORD.findall(text)}  # noqa: E731
    return all(_jaccard(words(x), words(y)) <= at_most for x in parts_a for y in parts_b)
