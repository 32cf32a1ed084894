"""Where the words two texts share sit (page/features.placement): a quote of another text's
opening (a teaser, a promo banner) shares that text's first words up to a cut inside a line and
none after it; a copy shares whole lines to the end. Measured as numbers the score weighs, never
as a shape with its own word counts; and a thin page quoting an article, end to end."""

from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

from crawler_dedup import Deduplicator
from crawler_dedup.core.page.features import EDGE, Text, placement

from tests.test_visible import html, prose

BRIDGE = "Harbour bridge reopens after the storm"
MUG = "Blue ceramic mug with handle | Mug Shop"


def _lines(seed: int, n_lines: int, words: int = 40) -> list[str]:
    """An article's lines (paragraphs) of words that occur once each, so that any shared 3-word
    run is a quoted one."""
    rnd = random.Random(seed)
    return [" ".join(f"w{rnd.randrange(10**9)}" for _ in range(words)) for _ in range(n_lines)]


def _placed(quote: str, article: str) -> dict:
    lead_q, tail_q, lead_a, tail_a, cut = placement(Text.of(quote, 3), Text.of(article, 3))
    return {"lead_quote": lead_q, "tail_quote": tail_q, "lead_article": lead_a, "tail_article": tail_a, "cut": cut}


def test_a_quote_of_an_openings_first_words_and_a_copy_measure_apart():
    lines = _lines(1, 6)
    article = "\n".join(lines)
    quote = _placed(" ".join(article.split()[:130]), article)  # three lines whole, cut 10 words into the fourth
    assert quote["lead_article"] == 0.0 and abs(quote["tail_article"] - 110 / 240) < 0.02
    assert quote["cut"] == 1.0  # 10 words inside the line: a quote's cut
    at_end = _placed(" ".join(article.split()[:120]), article)  # cut at a line's end: where a copy's extraction stops
    assert at_end["cut"] == 0.0 and at_end["tail_article"] > 0.4
    copy = _placed("\n".join(lines), article + "\n" + "\n".join(_lines(3, 1)))  # whole, its comments missing
    assert copy["tail_quote"] == 0.0 and copy["cut"] == 0.0
    edited = article.split()
    edited[100] = "changed"
    assert _placed(" ".join(edited), article)["tail_article"] < 0.02  # an edit does not stop the span


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), n_lines=st.integers(3, 12), per_line=st.integers(15, 60), data=st.data())
def test_a_cut_inside_a_line_measures_as_far_in_as_it_is_and_whole_lines_as_none(seed, n_lines, per_line, data):
    lines = _lines(seed, n_lines, per_line)
    article = "\n".join(lines)
    total = n_lines * per_line
    cut = data.draw(st.integers(20, total - 10))
    inside = min(min(cut % per_line, per_line - cut % per_line), EDGE) / EDGE
    got = _placed(" ".join(article.split()[:cut]), article)
    assert abs(got["cut"] - inside) < 1e-9
    assert abs(got["tail_article"] - (total - cut) / total) < 1e-9
    whole = data.draw(st.integers(1, n_lines))
    assert _placed("\n".join(lines[:whole]), article)["cut"] == 0.0  # whole lines: a copy's shape


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
    # the quote passes the lookup thresholds (a plain near-duplicate check drops it): the score keeps it apart
    with Deduplicator(dir=str(tmp_path / "score")) as dedup:
        dedup.check(*pages["article"][:2], text=article, title=pages["article"][3])
        got = dedup.check(pages["thin"][0], html=pages["thin"][1], text=thin, title=MUG)
    assert got.scored_apart and got.weighing.url == pages["article"][0]
    assert got.weighing.score < got.weighing.threshold


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=40), st.lists(st.integers(0, 2**64 - 1), max_size=40),
       st.lists(st.integers(0, 30), max_size=40))
def test_members_answers_as_numpy_isin(values, others, shared):
    """The binary search that says which shingles of one text the other has answers as
    np.isin (the brute force) does, shared values, 0 and 2^64-1 included."""
    import numpy as np

    from crawler_dedup.core.page.features import members

    have = np.array([*values, *shared], dtype=np.uint64)
    distinct = np.unique(np.array([*others, *shared[::2]], dtype=np.uint64))
    assert members(have, distinct).tolist() == np.isin(have, distinct).tolist()
