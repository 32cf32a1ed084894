"""What a page's title says: its parts (split at " | ", " - ", ...) without the marks of a print,
mobile or AMP version, the keys a kept page is filed under by them (the index's `heads` table),
how much of its headline a text names, and how alike two titles are (a measurement of the pair
that decide/measures.py weighs).
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


def titles(a: str | None, b: str | None, site_a: frozenset = frozenset(), site_b: frozenset = frozenset(),
           same_site: bool = False) -> tuple[float | None, float | None, float | None]:
    """(headline match, word overlap, numbers differ) of two titles, each without the parts its
    site's other pages carry (`site_a`, `site_b`: word sets, learned from the index) and without
    the marks of a print or mobile version. A title that is parts of the other is that page ("Chess
    Sets (print)", "Chess Sets - The Regency Chess Co"). On one site, a part both titles carry
    beside parts of their own is the site's too ("Running Shoes | REI Co-op", "Hiking Boots | REI
    Co-op", before the index has seen the shop's other pages), and each title's headline is its
    longest part left (in letters); on two sites, the best match of any two parts of two words or
    more (a story under two sites' names). Nones when a title is missing or all its site's."""
    if not a or not b:
        return None, None, None
    pa = [p for p in title_words(a) if frozenset(p) not in site_a]
    pb = [p for p in title_words(b) if frozenset(p) not in site_b]
    if not pa or not pb:  # a title that is all its site's name tells nothing
        return None, None, _numbers(a, b)
    sa, sb = {frozenset(p) for p in pa}, {frozenset(p) for p in pb}
    wa, wb = frozenset(w for p in pa for w in p), frozenset(w for p in pb for w in p)
    words = len(wa & wb) / len(wa | wb)
    if sa <= sb or sb <= sa:
        return 1.0, words, _numbers(a, b)
    if not same_site:  # (a one-word part matches only as a whole title: "Daily" is many sites' name)
        pairs = [_part_match(p, q) for p in sa for q in sb
                 if (len(p) >= 2 or len(sa) == 1) and (len(q) >= 2 or len(sb) == 1)]
        if pairs:
            return max(pairs), words, _numbers(a, b)
    shared = sa & sb if same_site else set()
    own_a, own_b = [p for p in pa if frozenset(p) not in shared], [p for p in pb if frozenset(p) not in shared]
    if shared and own_a and own_b:
        pa, pb = own_a, own_b
        wa, wb = frozenset(w for p in pa for w in p), frozenset(w for p in pb for w in p)
        words = len(wa & wb) / len(wa | wb)
    ha = frozenset(max(pa, key=lambda p: sum(map(len, p))))
    hb = frozenset(max(pb, key=lambda p: sum(map(len, p))))
    return _part_match(ha, hb), words, _numbers(a, b)


def _part_match(p: frozenset, q: frozenset) -> float:
    """1 for the same part or one cut short of the other (4+ words, 80% of the shorter in the
    longer); else their words' Jaccard."""
    if p == q:
        return 1.0
    shorter = min(len(p), len(q))
    if shorter >= 4 and len(p & q) >= 0.8 * shorter:
        return 1.0
    return len(p & q) / len(p | q)


def _numbers(a: str, b: str) -> float:
    found_a, found_b = set(re.findall(r"\d+(?:[.,]\d+)*", a)), set(re.findall(r"\d+(?:[.,]\d+)*", b))
    return 1.0 if found_a - found_b and found_b - found_a else 0.0
