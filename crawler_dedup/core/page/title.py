"""What a page's title says: its parts (split at " | ", " - ", ...) without the marks of a print,
mobile or AMP version, the keys a kept page is filed under by them (the index's `heads` table),
and how much of its headline a text names. Whether two titles name one story is the guards'
(decide/guards.py).
"""

from __future__ import annotations

import re

import xxhash

_SEPARATORS = re.compile(r"\s+[|\-–—:·•»]\s+")
_WORD = re.compile(r"\w+")
# what marks a print, mobile or AMP version in its title: "(print)", "[Printer-friendly version]"
_VERSION_WORDS = frozenset("print printer friendly printable version view edition mobile amp".split())
_BRACKETED = re.compile(r"[(\[]([^()\[\]]*)[)\]]")
HEADLINE_WORDS = 3  # a part of a title this long, shared by two titles, is their headline
PREFIX_WORDS = 4  # a headline cut short ("Storm hits the coast of…") is found by its first words


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


def title_words(title: str) -> list[list[str]]:
    """A title's parts' words in order, without the marks of a print, mobile or AMP version."""
    return _ordered_parts(title)


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
