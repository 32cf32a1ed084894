"""What a page shows beside its main text (core/page/visible.py), and the two uses of it: a copy found
inside the other page's visible text under the same headline, and a main text that is the page's
chrome kept apart from another title's."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler_dedup import Deduplicator
from crawler_dedup.core.page.visible import (
    MAX_SAMPLE,
    containment,
    main_shingles,
    page_view,
    sample,
    sampled_containment,
)

WORDS = ("harbour council budget river bridge market station museum library garden tower square street mayor "
         "vote plan summer winter festival concert school teacher doctor nurse train ferry storm flood").split()


OTHER = ("recipe oven butter flour sugar garlic onion pepper salad soup noodle rice bread cheese apple lemon "
         "honey ginger basil thyme").split()


def prose(seed: int, n: int, words: list[str] = WORDS) -> str:
    rnd = random.Random(seed)
    sentences = []
    while sum(len(s.split()) for s in sentences) < n:
        sentences.append(" ".join(rnd.choice(words) for _ in range(12)).capitalize() + ".")
    return " ".join(sentences)


def paragraphs(text: str) -> str:
    words = text.split()
    return "".join(f"<p>{' '.join(words[i:i + 40])}</p>\n" for i in range(0, len(words), 40))


def html(title: str, main: str, *, nav: str = "", footer: str = "", consent: str = "", aside: str = "",
         wrapper: str = "content") -> str:
    return (f"<!DOCTYPE html><html><head><title>{title}</title><script>var x = 'no words here';</script></head><body>"
            + (f"<div id='onetrust-consent-sdk'>{paragraphs(consent)}</div>" if consent else "")
            + (f"<nav class='main-nav'><ul><li>{nav}</li></ul></nav>" if nav else "")
            + f"<div class='{wrapper}'><article><h1>{title}</h1>{paragraphs(main)}</article>"
            + (f"<aside class='related'>{paragraphs(aside)}</aside>" if aside else "") + "</div>"
            + (f"<footer>{paragraphs(footer)}</footer>" if footer else "") + "</body></html>")


def test_the_view_holds_every_visible_word_and_no_script():
    article, menu = prose(1, 200), "Home News Sport Weather Contact the newsroom today"
    view = page_view(html("Storm", article, nav=menu), article)
    assert view is not None and view.chrome == 0.0
    assert containment(main_shingles(article), view.visible) == 1.0
    assert containment(main_shingles(menu + " " + article[:60]), view.visible) > 0
    assert containment(main_shingles("var x no words here at all"), view.visible) == 0.0


def test_a_main_text_that_is_a_consent_dialog_or_the_footer_is_chrome():
    consent, article = prose(2, 400), prose(3, 120)
    page = html("Recipes", article, consent=consent)
    assert page_view(page, consent).chrome > 0.9  # extraction took the dialog: any size
    assert page_view(page, article).chrome == 0.0
    footer = prose(4, 150)
    page = html("Recipes", article, footer=footer)
    assert page_view(page, footer).chrome > 0.9


def test_a_wrapper_named_like_chrome_that_holds_the_page_is_not_chrome():
    article = prose(5, 300)
    view = page_view(html("Storm", article, wrapper="content has-sidebar"), article)
    assert view.chrome == 0.0
    # a weak element holding most of the page's words is a layout wrapper, whatever its name
    view = page_view(html("Storm", article, wrapper="sidebar-layout-grid"), article)
    assert view.chrome == 0.0


def test_markup_that_cannot_be_read_gives_no_view():
    assert page_view("", "text") is None
    assert page_view(b"\x00\x01\x02", "text") is None or page_view(b"\x00\x01\x02", "text").visible.size == 0


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(60, 600), st.floats(0.0, 1.0))
def test_the_sampled_containment_estimates_the_exact_one(seed, size, share):
    """Against the exact share: the kept page keeps a quarter of its visible shingles (by hash),
    the page's main text is sampled the same way, so the estimate is unbiased and close."""
    rnd = np.random.default_rng(seed)
    main = np.unique(rnd.integers(0, 2**63, size, dtype=np.uint64))
    inside = main[: int(share * main.size)]
    visible = np.unique(np.concatenate([inside, rnd.integers(0, 2**63, 3 * size, dtype=np.uint64)]))
    exact = containment(main, visible)
    estimate = sampled_containment(main, sample(visible), at_least=8)
    if estimate is None:
        assert sample(main).size < 8
    else:
        assert abs(estimate - exact) <= 0.35 + 2.0 / np.sqrt(sample(main).size)
    if exact in (0.0, 1.0) and estimate is not None:
        assert estimate == exact  # no shingle in, or all in: the sample says so exactly


def test_a_huge_visible_text_keeps_a_bounded_comparable_sample():
    rnd = np.random.default_rng(1)
    visible = np.unique(rnd.integers(0, 2**63, 40 * MAX_SAMPLE, dtype=np.uint64))
    kept = sample(visible)
    assert kept.size == MAX_SAMPLE
    main = visible[rnd.choice(visible.size, 4000, replace=False)]
    assert sampled_containment(np.sort(main), kept) == 1.0  # only hashes under the cut are compared


def _crawl(dedup, pages):
    return [dedup.check(url, html=body) for url, body in pages]


def test_a_syndicated_copy_read_as_its_templates_related_list_is_found_inside_the_source(tmp_path):
    article, related, other = prose(10, 400), prose(11, 300, OTHER), prose(12, 400)
    source = html("Harbour bridge reopens after storm | Daily Planet", article)
    # another site's page around the article; its extraction takes the related list
    copy = ("<html><head><title>Harbour bridge reopens after storm | Wire</title></head><body>"
            f"<div class='story-body'>{paragraphs(article)}</div>"
            f"<section class='more-stories'><h2>More stories</h2>{paragraphs(related)}{paragraphs(related)}</section>"
            "</body></html>")
    unrelated = html("Council votes on the budget | Wire", other)
    for setting, expected in ((0.8, "drop"), (0, "keep")):
        with Deduplicator(dir=str(tmp_path / f"idx-{setting}"), visible_containment=setting) as dedup:
            got = _crawl(dedup, [("https://daily.example/bridge", source), ("https://wire.example/other", unrelated)])
            # the copy's extraction took the wrong block: its main text is the related list
            got.append(dedup.check("https://wire.example/bridge", html=copy, text=related + " " + related,
                                   title="Harbour bridge reopens after storm | Wire"))
        assert [v.action for v in got] == ["keep", "keep", expected]
    assert got[2].action == "keep"
    with Deduplicator(dir=str(tmp_path / "idx-0.8")) as dedup:  # what the first index decided, on a revisit
        again = dedup.check("https://wire.example/bridge2", html=copy, text=related + " " + related,
                            title="Harbour bridge reopens after storm | Wire")
    assert (again.action, again.duplicate_of, again.measure, again.rule) == (
        "drop", "https://daily.example/bridge", "visible", "duplicate")


def test_a_kept_page_is_filed_under_its_titles_parts_and_leaves_them_with_it(tmp_path):
    from crawler_dedup.core.index.integrity import verify

    article = prose(30, 300)
    with Deduplicator(dir=str(tmp_path / "idx")) as dedup:
        dedup.check("https://daily.example/bridge", html=html("Harbour bridge reopens after the storm | Daily", article))
        index = dedup.index
        filed = index.read(lambda txn: txn.raw.count("heads"))
        found = index.read(lambda txn: [d.url for d in index.headed(txn, "Harbour bridge reopens after the storm")])
        assert verify(index).ok
        doc = index.read(lambda txn: index.by_url(txn, "https://daily.example/bridge"))
        index.write(lambda txn: index.remove(txn, doc.doc_id))
        left = index.read(lambda txn: txn.raw.count("heads"))
    assert filed == 3 and found == ["https://daily.example/bridge"]  # two parts, and the headline's first words
    assert left == 0


def test_show_explains_a_drop_found_inside_the_other_page():
    from crawler_dedup.config import DedupConfig
    from crawler_dedup.tools.show import why

    line = why({"reason": "near", "measure": "visible", "similarity": 0.93, "score": 0.97, "score_threshold": 0.72,
                "contributions": {"shows_kept": 2.1, "title": 1.4, "template": -0.3}}, DedupConfig())
    assert "0.970" in line and "0.720" in line and "visible 0.93" in line and "shows_kept +2.10" in line
    older = why({"reason": "near", "measure": "visible", "similarity": 0.93}, DedupConfig())
    assert "before the score" in older and "0.93" in older
