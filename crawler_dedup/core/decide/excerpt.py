"""Whether one main text quotes the opening of another: a teaser, a promo banner carrying
another page's first ~100 words, an "install the app" banner quoting a thread.

Such a quote is the other text's first words, cut inside a line at a word count, and nothing of
that text after the cut. A copy carries whole lines: a syndicated or print copy's extraction
stops at the end of a block, where the source's related links or comments begin; an edited
copy keeps words after any cut. `quotes_opening` tells the two by where the shared words end.
"""

from __future__ import annotations

from ..page.tokens import tokenize

GRAM = 3  # a word of the longer text is shared when a 3-word run holding it is in the shorter
RUN = 5  # a shared run this long is the quote's; shorter ones are common phrases
MIN_QUOTED = 30  # fewer shared words: too few to tell a quote from a shared sentence
MAX_QUOTED = 300  # a teaser or banner quotes a paragraph or two; a longer opening is a copy cut short
HELD_BEFORE = 0.7  # share of the words up to the cut that the quote holds (extraction differs a little)
MIN_LEFT = 8  # words of the quoted text after the cut: less is a copy missing its last words
EDGE = 2  # words of the cut line on each side of the cut: a cut at a line's end is a block's end
LEAD = 15  # the quote may begin this many words in (a headline line before the text)
OPENS = 15  # words of the quoting line before the quote (a headline, "Read more:"); a quote is a block of its own


def quotes_opening(short: str, long: str) -> bool:
    """`short` holds `long`'s opening (MIN_QUOTED to MAX_QUOTED words from its start) in a block
    of its own (beginning within OPENS words of one of its lines), up to a cut inside a line of
    `long`, and no run of RUN words of `long` after the cut (MIN_LEFT+ words)."""
    lines = _lines(long)
    words = [w for line in lines for w in line]
    if len(words) < MIN_QUOTED + MIN_LEFT:
        return False
    mine_lines = _lines(short)
    mine = [w for line in mine_lines for w in line]
    first: dict[tuple[str, ...], int] = {}
    for i in range(len(mine) - GRAM + 1):
        first.setdefault(tuple(mine[i:i + GRAM]), i)
    shared = [False] * len(words)
    for i in range(len(words) - GRAM + 1):
        if tuple(words[i:i + GRAM]) in first:
            shared[i:i + GRAM] = [True] * GRAM
    start = next((i for i, s in enumerate(shared) if s), None)
    if start is None or start > max(LEAD, len(words) // 10):
        return False
    cut, run = start, 0
    for i in range(start, len(words)):  # the end of the last run of RUN+ shared words
        run = run + 1 if shared[i] else 0
        if run >= RUN:
            cut = i + 1
    left = len(words) - cut
    if not MIN_QUOTED <= cut - start <= MAX_QUOTED or left < MIN_LEFT or sum(shared[start:cut]) < HELD_BEFORE * (cut - start):
        return False
    before, after = _place(lines, cut)
    if before < EDGE or after < EDGE:
        return False
    quoted = {tuple(words[i:i + GRAM]) for i in range(start, cut - GRAM + 1)}
    opens = min(i for g, i in first.items() if g in quoted)  # where the quote begins in `short`
    return _place(mine_lines, opens)[0] <= OPENS


def _lines(text: str) -> list[list[str]]:
    return [t for t in (tokenize(line) for line in text.splitlines()) if t]


def _place(lines: list[list[str]], at: int) -> tuple[int, int]:
    """(words of its line before position `at` of the lines' words, words from it to the line's end)."""
    for line in lines:
        if at < len(line):
            return at, len(line) - at
        at -= len(line)
    return at, 0


def one_quotes_other(a: str | None, b: str | None) -> bool:
    """Either text quotes the other's opening (whichever page came first)."""
    if not a or not b:
        return False
    return quotes_opening(a, b) or quotes_opening(b, a)
