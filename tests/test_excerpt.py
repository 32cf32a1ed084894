"""A page quoting another's opening (a teaser, a promo banner with an article's first ~120 words)
is no copy of it, with the default settings (decide/excerpt.py, matching.near_match); a copy
carrying whole lines of its source is."""

from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

from crawler_dedup import Deduplicator
from crawler_dedup.core.decide.excerpt import EDGE, MAX_QUOTED, MIN_LEFT, MIN_QUOTED, quotes_opening, one_quotes_other

from tests.test_visible import html, prose

BRIDGE = "Harbour bridge reopens after the storm"
MUG = "Blue ceramic mug with handle | Mug Shop"


def _lines(seed: int, n_lines: int, words: int = 40) -> list[str]:
    """An article's lines (paragraphs) of words that occur once each, so that any shared 3-word
    run is a quoted one."""
    rnd = random.Random(seed)
    return [" ".join(f"w{rnd.randrange(10**9)}" for _ in range(words)) for _ in range(n_lines)]


def test_a_quote_of_an_articles_first_words_cut_inside_a_line_is_a_quote():
    lines = _lines(1, 6)
    article = "\n".join(lines)
    quote = " ".join(article.split()[:120])  # 120 words: three lines whole, cut 0 words into the fourth
    assert not quotes_opening(quote, article)  # a cut at a line's end is a block's end: a copy's shape
    quote = " ".join(article.split()[:130])
    assert quotes_opening(quote, article)
    assert quotes_opening(f"{MUG}\nOut of stock.\n{quote} ...", article)  # beside the page's own words
    assert quotes_opening(quote, f"{BRIDGE}\n{article}")  # after the article's headline line
    assert one_quotes_other(article, quote) and one_quotes_other(quote, article)  # either order
    # a text whose end is the other's beginning, inside one of its own lines, is an overlap, not a
    # quote: a banner or teaser is a block of its own
    assert not quotes_opening(" ".join(_lines(5, 1)) + " " + quote, article)


def test_copies_are_not_quotes():
    lines = _lines(2, 8)
    article = "\n".join(lines)
    # a syndicated copy: whole lines of the article, its comments (other lines) missing
    assert not quotes_opening("\n".join(lines[:5]), article + "\n" + "\n".join(_lines(3, 3)))
    # an opening longer than a teaser: a copy cut short (an older version, an extraction stopping early)
    long_article = "\n".join(_lines(4, 12))
    assert not quotes_opening(" ".join(long_article.split()[:MAX_QUOTED + 40]), long_article)
    # an edited copy: its words go on after any one changed word
    words = article.split()
    edited = " ".join(words[:100] + ["changed"] + words[101:])
    assert not quotes_opening(edited, article)
    # too few words to tell a quote from a shared sentence
    assert not quotes_opening(" ".join(words[:MIN_QUOTED - 5]), article)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), n_lines=st.integers(3, 12), per_line=st.integers(15, 60), data=st.data())
def test_the_opening_cut_anywhere_inside_a_line_is_a_quote_and_whole_lines_are_not(seed, n_lines, per_line, data):
    lines = _lines(seed, n_lines, per_line)
    article = "\n".join(lines)
    total = n_lines * per_line
    ends = {per_line * (i + 1) for i in range(n_lines)}
    cut = data.draw(st.integers(MIN_QUOTED, min(MAX_QUOTED, total - MIN_LEFT)))
    inside = min(abs(cut - e) for e in ends | {0}) >= EDGE
    assert quotes_opening(" ".join(article.split()[:cut]), article) == inside
    whole = data.draw(st.integers(1, n_lines))
    assert not quotes_opening("\n".join(lines[:whole]), article)  # whole lines: a copy's shape


def _article(seed: int) -> str:
    return f"{BRIDGE}. " + " ".join(f"{w}{i}" for i, w in enumerate(prose(seed, 180).split()))


def test_a_thin_page_quoting_an_article_is_kept_and_the_articles_copy_found_in_any_order(tmp_path):
    article = _article(80)
    teaser = " ".join(article.split()[:120])
    thin = f"{MUG}\nOut of stock, ask us when it is back.\n{teaser} ..."  # (the banner a block of its own)
    pages = {
        "article": ("https://daily.example/bridge", html(BRIDGE + " | Daily", article), article, BRIDGE + " | Daily"),
        "thin": ("https://mugs.example/p/2", html(MUG, thin), thin, MUG),
        "bare": ("https://daily.example/print/bridge", html(BRIDGE, article), article, BRIDGE),
    }
    for order in (("article", "thin", "bare"), ("thin", "bare", "article"), ("thin", "article", "bare")):
        with Deduplicator(dir=str(tmp_path / "-".join(order))) as dedup:  # the default settings
            got = {name: dedup.check(pages[name][0], html=pages[name][1], text=pages[name][2], title=pages[name][3])
                   for name in order}
        assert got["thin"].action == "keep", (order, got["thin"])
        dropped = [name for name in order if got[name].action == "drop"]
        assert dropped == [n for n in order if n != "thin"][1:], (order, got)  # the second of the two copies
        assert got[dropped[0]].duplicate_of != pages["thin"][0]
    # the quote was a match before: the thin page is kept because of the rule, not by chance
    with Deduplicator(dir=str(tmp_path / "guard")) as dedup:
        dedup.check(*pages["article"][:2], text=article, title=pages["article"][3])
        assert dedup.check(pages["thin"][0], html=pages["thin"][1], text=thin, title=MUG).guard == "untrusted"
