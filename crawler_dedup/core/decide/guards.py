"""Title guards: whether two pages' titles name one story (`titles_disagree`, `same_headline`).

A block taken for two pages' content (a sign-up box, "related stories") makes different pages
share a text; their titles tell them apart. What a title's parts and headline words are is
page/title.py's; whether they agree is decided here.
"""

from __future__ import annotations

import re

from ..page.title import HEADLINE_WORDS, PREFIX_WORDS, title_parts, title_words

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def same_headline(a: str | None, b: str | None) -> bool:
    """Both titles known, not disagreeing, not two subjects in one frame (`subjects_differ`), and
    sharing a part: the same words, or (a title cut short, a character garbled) 4+ words of which
    80% are the other's."""
    if not a or not b or titles_disagree(a, b) or subjects_differ(a, b):
        return False
    for p in title_parts(a):
        for q in title_parts(b):
            if p == q or (min(len(p), len(q)) >= PREFIX_WORDS and len(p & q) >= 0.8 * min(len(p), len(q))):
                return True
    return False


FRAME_WORDS = 2  # a shared beginning and end this long is a frame ("Rankings for ... 2025", "Reviews of ... | Shop")
SUBJECT_LETTERS = 4  # a subject word this long names something ("the" and "a" name nothing)


def subjects_differ(a: str, b: str) -> bool:
    """Two titles that share a frame (FRAME_WORDS+ words at their beginning and end together:
    "Rankings for ... 2025", "Reviews of ... | Shop") and differ inside it in words that name
    something, none of one subject's words the other's or a form of it ("Rankings for Computer
    Science 2025" and "Rankings for Engineering and Technology 2025"). Weighed this way, a long
    shared frame does not make one headline of two subjects; a word changed in place
    ("hit"/"hits"), a word added ("Storm hits coast again") or a site's name that is a part of
    its own ("... | Online" beside "..., Says Minister") is no other subject."""
    return _subject(title_words(a), title_words(b))


def _subject(pa: list[list[str]], pb: list[list[str]]) -> bool:
    wa, wb = [w for p in pa for w in p], [w for p in pb for w in p]
    start = 0
    while start < min(len(wa), len(wb)) and wa[start] == wb[start]:
        start += 1
    end = 0
    while end < min(len(wa), len(wb)) - start and wa[-1 - end] == wb[-1 - end]:
        end += 1
    if start + end < FRAME_WORDS:
        return False
    sa, sb = _inside(pa, start, len(wa) - end), _inside(pb, start, len(wb) - end)
    return bool(sa and sb) and not any(
        x.startswith(y[:SUBJECT_LETTERS]) or y.startswith(x[:SUBJECT_LETTERS]) for x in sa for y in sb)


def _inside(parts: list[list[str]], start: int, stop: int) -> list[str]:
    """The words naming something between start and stop, but those of a part wholly inside
    (a site's name or a section, not the headline's subject)."""
    words, at = [], 0
    for part in parts:
        whole = start <= at and at + len(part) <= stop and len(parts) > 1
        words += [w for i, w in enumerate(part, at) if start <= i < stop and not whole
                  and len(w) >= SUBJECT_LETTERS and not w.isdigit()]
        at += len(part)
    return words


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
