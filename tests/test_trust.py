"""Is a main text the page's content? One parse a page feeds its view (core/page/extract.py,
visible.py), and the rules judge a main text before a match on it drops a page
(decide/matching.py untrusted, about_their_titles; rules.trusted_text)."""

from __future__ import annotations

import pickle

import numpy as np

from crawler_dedup import Deduplicator
from crawler_dedup.core.page.extract import Extracted, extract
from crawler_dedup.core.page.visible import page_view

from tests.test_visible import OTHER, html, paragraphs, prose


def test_the_view_read_from_extractions_parse_is_the_view_read_from_the_markup():
    article, menu = prose(1, 300), "Home News Sport Weather Contact the newsroom today"
    page = html("Storm", article, nav=menu, footer=prose(2, 60))
    # minified markup: a block's end is a word boundary even without white space
    page = page.replace("</p>\n", "</p>").replace("<noscript>", "") + "<noscript>never shown words</noscript>"
    got = extract(page, "https://example.org/storm")
    assert got is not None and got.tree is not None
    from_markup = page_view(page, got.text)
    from_tree = page_view(None, got.text, tree=got.tree)
    assert from_markup is not None and from_tree is not None
    assert np.array_equal(from_markup.visible, from_tree.visible)
    assert from_markup.chrome == from_tree.chrome


def test_an_extraction_crosses_a_process_without_its_parse():
    got = extract(html("Storm", prose(3, 200)), "https://example.org/storm")
    assert got is not None and got.tree is not None
    back = pickle.loads(pickle.dumps(got))
    assert back == got and back.tree is None and isinstance(back, Extracted)


ENGINE = prose(60, 400, OTHER)  # the rest of a template's chrome: its menus, footer, side boxes, as large as a post


def _page(title: str, article: str, block: str, engine: str = "") -> str:
    """A page of one shop's or forum engine's template: its article, a sign-up box whose markup
    names nothing chrome-like (the extraction is told to take the box, as it did on the test
    split), and the template's other chrome (`engine`)."""
    return (f"<html><head><title>{title}</title></head><body><div class='offer-strip'>{paragraphs(block)}</div>"
            f"<div class='content'><h1>{title}</h1>{paragraphs(article)}</div>"
            f"<div class='engine-links'>{paragraphs(engine)}</div></body></html>")


def test_two_sites_on_one_forum_engine_whose_main_text_is_its_chrome_are_two_pages(tmp_path):
    chrome = prose(40, 200, OTHER)  # the engine's thread chrome: names neither headline
    one = _page("Harbour bridge reopens after the storm | Daily Forum", prose(41, 400), chrome, ENGINE)
    two = _page("Council votes on the school budget | Town Forum", prose(42, 400), chrome, ENGINE)
    with Deduplicator(dir=str(tmp_path / "idx")) as dedup:
        first = dedup.check("https://forum.daily.example/t/1", html=one, text=chrome,
                            title="Harbour bridge reopens after the storm | Daily Forum")
        second = dedup.check("https://town.example/t/9", html=two, text=chrome,
                             title="Council votes on the school budget | Town Forum")
        # the first thread under a tracking URL shows the same page: a copy
        third = dedup.check("https://forum.daily.example/t/1?utm_source=x", html=one, text=chrome,
                            title="Harbour bridge reopens after the storm | Daily Forum")
    assert first.action == "keep"
    assert (second.action, second.guard, second.rule) == ("keep", "untrusted", "keep")
    assert (third.action, third.duplicate_of) == ("drop", "https://forum.daily.example/t/1")


def test_a_trusted_main_text_on_two_unlike_pages_still_matches(tmp_path):
    # a main text about its headline is the content: another template around it is a syndicated copy
    article = "Harbour bridge reopens after the storm. " + prose(43, 400)
    title = "Harbour bridge reopens after the storm"
    one = _page(title + " | Daily", article, prose(44, 100, OTHER))
    two = _page(title + " | Wire", article, prose(45, 300))
    with Deduplicator(dir=str(tmp_path / "idx")) as dedup:
        first = dedup.check("https://daily.example/a", html=one, text=article, title=title + " | Daily")
        second = dedup.check("https://wire.example/a", html=two, text=article, title=title + " | Wire")
    assert first.action == "keep" and (second.action, second.duplicate_of) == ("drop", "https://daily.example/a")


def test_an_untrusted_text_moved_to_another_sites_template_is_a_syndicated_copy(tmp_path):
    # a text naming none of either title (a foreign-language article under the template's title)
    # on two pages of two templates: the text moved between them, it is not the template's
    article = prose(61, 500, OTHER)
    one = _page("Harbour bridge reopens after the storm", article, "", prose(62, 150))
    two = _page("Council votes on the school budget | Wire", article, "", prose(63, 150))
    with Deduplicator(dir=str(tmp_path / "idx")) as dedup:
        first = dedup.check("https://daily.example/a", html=one, text=article,
                            title="Harbour bridge reopens after the storm")
        second = dedup.check("https://wire.example/b", html=two, text=article,
                             title="Council votes on the school budget | Wire")
    assert first.action == "keep" and (second.action, second.duplicate_of) == ("drop", "https://daily.example/a")


def test_one_article_under_two_titles_of_its_site_is_a_copy_but_a_shared_block_is_not(tmp_path):
    article = ("The harbour bridge reopened on Monday after the storm closed it for a week. "
               + prose(46, 400))
    related = prose(47, 300, OTHER)  # "related stories": names neither headline
    with Deduplicator(dir=str(tmp_path / "idx")) as dedup:
        first = dedup.check("https://daily.example/news/bridge", html=_page("Harbour bridge reopens", article, ""),
                            text=article, title="Harbour bridge reopens")
        # the site's print edition of it, under a title of its own
        second = dedup.check("https://daily.example/print/77", html=_page("Storm closed harbour bridge for a week",
                                                                        article, ""),
                             text=article, title="Storm closed harbour bridge for a week")
        third = dedup.check("https://daily.example/news/budget", html=_page("Council votes on budget", prose(48, 300),
                                                                          related),
                            text=related, title="Council votes on budget")
        fourth = dedup.check("https://daily.example/news/ferry", html=_page("Ferry timetable changes", prose(49, 300),
                                                                          related),
                             text=related, title="Ferry timetable changes")
    assert first.action == "keep"
    assert (second.action, second.duplicate_of) == ("drop", "https://daily.example/news/bridge")
    assert third.action == "keep" and (fourth.action, fourth.guard) == ("keep", "title")


def test_a_hard_negative_twin_is_another_article_in_the_pages_own_template():
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))
    from hard_negatives import twin

    gold, donor = prose(50, 200), prose(51, 220, OTHER)
    chrome = "Sign up for our newsletter and get free shipping on every order today"
    page = html("Harbour bridge reopens", gold, nav=chrome)
    got = twin(page.encode(), gold, donor, "Oven butter recipes")
    assert got is not None
    markup, replaced = got
    assert replaced >= 0.8
    text = markup.decode()
    assert chrome in text and "<title>Oven butter recipes</title>" in text
    assert gold.split(".")[0] not in text and donor.split()[0] in text


BRIDGE = "Harbour bridge reopens after the storm"


def _banner_pages() -> tuple[str, str, str]:
    """An article, a thin product page of another site whose promo banner quotes the article's
    first 120 words (its extraction takes the banner), and the article's text."""
    article = f"{BRIDGE}. " + " ".join(f"{w}{i}" for i, w in enumerate(prose(70, 300).split()))  # (words its own)
    quoted = " ".join(article.split()[:120])
    story = _page(BRIDGE + " | Daily", article, "")
    product = _page("Blue ceramic mug 350 ml | Mug Shop", "Out of stock. Ask us when it is back.", quoted,
                    prose(71, 150, OTHER))
    return story, product, article


def test_a_page_whose_banner_quotes_another_pages_text_is_not_its_copy_in_either_order(tmp_path):
    # only one side's main text is untrusted (the banner names none of the mug's headline): the
    # match is the article's content in the product page's chrome, whichever was kept first
    story, product, article = _banner_pages()
    quoted = " ".join(article.split()[:120])
    mug = "Blue ceramic mug 350 ml | Mug Shop"
    with Deduplicator(dir=str(tmp_path / "one"), strict_text=True) as dedup:
        first = dedup.check("https://daily.example/bridge", html=story, text=article, title=BRIDGE + " | Daily")
        second = dedup.check("https://mugs.example/p/1", html=product, text=quoted, title=mug)
        # a bare copy of the article under its own title is still its copy
        bare = dedup.check("https://daily.example/print/bridge", html=html(BRIDGE, article), text=article,
                           title=BRIDGE)
    assert first.action == "keep"
    assert (second.action, second.guard) == ("keep", "untrusted")
    assert (bare.action, bare.duplicate_of) == ("drop", "https://daily.example/bridge")
    with Deduplicator(dir=str(tmp_path / "two"), strict_text=True) as dedup:
        first = dedup.check("https://mugs.example/p/1", html=product, text=quoted, title=mug)
        second = dedup.check("https://daily.example/bridge", html=story, text=article, title=BRIDGE + " | Daily")
    assert first.action == "keep" and second.action == "keep", second


def test_one_templates_shell_under_titles_that_differ_in_their_subject_is_two_pages(tmp_path):
    # a ranking site whose pages are one script shell: both extractions are the shell's text,
    # the titles share "Rankings for ... 2025" and the site's name
    shell = "Loading the table. Enable JavaScript to see this page. " + prose(72, 300, OTHER)
    titles = ["Rankings for Computer Science and Information Systems 2025 | Ranks",
              "Rankings for Engineering and Technology 2025 | Ranks"]
    with Deduplicator(dir=str(tmp_path / "idx")) as dedup:
        got = [dedup.check(f"https://ranks.example/{i}", html=_page(t, "", shell, ENGINE), text=shell, title=t)
               for i, t in enumerate(titles)]
        again = dedup.check("https://ranks.example/0?utm_source=x", html=_page(titles[0], "", shell, ENGINE),
                            text=shell, title=titles[0])
    assert got[0].action == "keep" and (got[1].action, got[1].guard) == ("keep", "untrusted")
    assert (again.action, again.duplicate_of) == ("drop", "https://ranks.example/0")


def test_a_teaser_of_another_article_beside_a_pages_own_headline_is_not_its_copy(tmp_path):
    # the extraction of a small page: a promo with another article's first 120 words, then the
    # page's own headline and line. Its headline is named, but only outside what it shares with
    # the article, and it holds under HELD of the article's words: a quote, not a copy
    article = f"{BRIDGE}. " + " ".join(f"{w}{i}" for i, w in enumerate(prose(73, 160).split()))
    teaser = " ".join(article.split()[:120])  # (each word its own: the teaser holds 120 of the 166)
    mine = f"{teaser} Blue ceramic mug with handle. Out of stock, ask us when the mug is back."
    mug = "Blue ceramic mug with handle | Mug Shop"
    with Deduplicator(dir=str(tmp_path / "idx"), strict_text=True) as dedup:
        first = dedup.check("https://daily.example/bridge", html=html(BRIDGE, article), text=article, title=BRIDGE)
        second = dedup.check("https://mugs.example/p/2", html=html(mug, mine), text=mine, title=mug)
        # the whole article under another site's title is still a syndicated copy
        whole = f"{article} Blue ceramic mug with handle."
        third = dedup.check("https://mugs.example/p/3", html=html(mug, whole), text=whole, title=mug)
    assert first.action == "keep"
    assert (second.action, second.guard) == ("keep", "untrusted"), second
    assert (third.action, third.duplicate_of) == ("drop", "https://daily.example/bridge"), third
    with Deduplicator(dir=str(tmp_path / "default")) as dedup:  # off, the teaser cut inside a line is kept too (excerpt.py)
        dedup.check("https://daily.example/bridge", html=html(BRIDGE, article), text=article, title=BRIDGE)
        got = dedup.check("https://mugs.example/p/2", html=html(mug, mine), text=mine, title=mug)
        assert (got.action, got.guard) == ("keep", "untrusted")


def test_a_teaser_kept_first_does_not_take_the_article_it_quotes(tmp_path):
    # the other order: the small page with the teaser was kept first; the article is no copy of it
    article = f"{BRIDGE}. " + " ".join(f"{w}{i}" for i, w in enumerate(prose(74, 160).split()))
    mine = " ".join(article.split()[:120]) + " Blue ceramic mug with handle. Out of stock, ask us when the mug is back."
    mug = "Blue ceramic mug with handle | Mug Shop"
    with Deduplicator(dir=str(tmp_path / "idx"), strict_text=True) as dedup:
        first = dedup.check("https://mugs.example/p/2", html=html(mug, mine), text=mine, title=mug)
        second = dedup.check("https://daily.example/bridge", html=html(BRIDGE, article), text=article, title=BRIDGE)
    assert first.action == "keep" and (second.action, second.guard) == ("keep", "untrusted"), second


def test_a_syndicated_copy_under_its_host_pages_title_carries_the_whole_text_and_is_a_copy(tmp_path):
    # one side untrusted (the copy's text names none of its host page's title) but the text is the
    # kept article whole: a syndicated copy (benchmarks/realcopies.py's kind), not a banner's quote
    article = f"{BRIDGE}. " + " ".join(f"{w}{i}" for i, w in enumerate(prose(75, 300).split()))
    host = "Council votes on the school budget | Wire"
    with Deduplicator(dir=str(tmp_path / "idx")) as dedup:
        first = dedup.check("https://daily.example/bridge", html=_page(BRIDGE, article, ""), text=article, title=BRIDGE)
        second = dedup.check("https://wire.example/b", html=_page(host, article, "", prose(76, 150)), text=article,
                             title=host)
    assert first.action == "keep" and (second.action, second.duplicate_of) == ("drop", "https://daily.example/bridge")


def test_one_host_serving_two_sites_templates_does_not_keep_a_syndicated_copy_apart(tmp_path, monkeypatch):
    # a host that serves other sites' pages (a mirror, an archive crawled as one site): a copy in
    # another template under a rewritten headline is a copy; in the site's own template (its menus
    # and footer around both) the title guard keeps the two apart, as a block taken for two pages'
    # content would be
    from crawler_dedup.core.decide import matching

    article = "The harbour bridge reopened on Monday after the storm closed it for a week. " + prose(90, 400)
    first = ("https://mirror.example/daily/bridge", "Harbour bridge reopens | Daily")
    second = ("https://mirror.example/wire/77", "Storm closed crossing for seven days | Wire")

    def crawl(name: str, own_template: bool) -> tuple:
        chrome = (prose(91, 80, OTHER), prose(92, 120, OTHER))
        other = chrome if own_template else (prose(93, 80), prose(94, 120))
        with Deduplicator(dir=str(tmp_path / name)) as dedup:
            kept = dedup.check(first[0], html=html(first[1], article, nav=chrome[0], footer=chrome[1]), title=first[1])
            copy = dedup.check(second[0], html=html(second[1], article, nav=other[0], footer=other[1]),
                               title=second[1])
        return kept, copy

    kept, copy = crawl("two", own_template=False)
    assert kept.action == "keep" and (copy.action, copy.duplicate_of) == ("drop", first[0]), copy
    kept, copy = crawl("one", own_template=True)
    assert (copy.action, copy.guard) == ("keep", "title"), copy
    monkeypatch.setattr(matching, "TWO_TEMPLATES", 0.0)  # the rule is what finds the copy
    kept, copy = crawl("off", own_template=False)
    assert (copy.action, copy.guard) == ("keep", "title"), copy


def test_a_bare_copy_kept_first_takes_the_full_page_whose_extraction_took_another_block(tmp_path, monkeypatch):
    # a print version (its title, an h1, the article: nothing else shown) is kept first; the full
    # page shows the article whole, but its extraction took its "related" block (naming the
    # headline, so not a misread text): it carries the kept page's whole text, a copy. A full page
    # beside its app shell (the shell shows only its sign-up block) is not
    from crawler_dedup.core.decide import matching

    article = f"{BRIDGE} on Monday after a week. " + prose(95, 300)
    related = f"More on the {BRIDGE.lower()}: " + prose(96, 120, OTHER)
    full = html(BRIDGE + " | Daily", article, aside=related, nav=prose(97, 40, OTHER), footer=prose(98, 60, OTHER))

    def crawl(name: str) -> tuple:
        with Deduplicator(dir=str(tmp_path / name)) as dedup:
            kept = dedup.check("https://daily.example/print/bridge", html=html(BRIDGE, article), title=BRIDGE)
            page = dedup.check("https://daily.example/bridge", html=full, text=related, title=BRIDGE + " | Daily")
        return kept, page

    kept, page = crawl("bare")
    assert kept.action == "keep" and (page.action, page.duplicate_of) == ("drop", "https://daily.example/print/bridge")
    monkeypatch.setattr(matching, "BARE", 1.01)  # the rule is what finds it
    assert crawl("off")[1].action == "keep"
    monkeypatch.undo()
    signup = "Sign up to the Daily for the harbour news. " + prose(99, 80, OTHER)
    with Deduplicator(dir=str(tmp_path / "shell")) as dedup:
        shell = dedup.check("https://daily.example/app", html=html("Daily", signup), title="Daily")
        page = dedup.check("https://daily.example/bridge", html=html(BRIDGE + " | Daily", article, footer=signup),
                           title=BRIDGE + " | Daily")
    assert shell.action == "keep" and page.action == "keep", page


def test_a_block_taken_for_two_articles_of_one_site_stays_apart_whatever_else_they_show(tmp_path):
    # each page's article is outside its main text (extraction took a "more stories" block naming
    # one word of each headline): what the pages show besides their main texts is mostly their
    # own articles, so they look like two templates, but neither text is about its headline
    block = "More stories: the harbour, the council and the week. " + prose(101, 150, OTHER)
    nav, footer = prose(102, 40, OTHER), prose(103, 60, OTHER)
    titles = ("Harbour bridge reopens after the storm", "Council approves the new budget")

    def page(i: int, t: str) -> str:  # the block in the content, in no element named as chrome
        return (f"<html><head><title>{t}</title></head><body><nav class='main-nav'>{paragraphs(nav)}</nav>"
                f"<div class='content'><article><h1>{t}</h1>{paragraphs(prose(104 + i, 1500))}</article>"
                f"<div class='more'>{paragraphs(block)}</div></div><footer>{paragraphs(footer)}</footer></body></html>")

    with Deduplicator(dir=str(tmp_path / "idx")) as dedup:
        got = [dedup.check(f"https://daily.example/{i}", title=t, text=block, html=page(i, t)) for i, t in enumerate(titles)]
    assert got[0].action == "keep" and (got[1].action, got[1].guard) == ("keep", "title"), got[1]


def test_a_full_article_after_its_paywall_shell_is_not_its_copy(tmp_path):
    # the shell shows only its subscription block, which names the headline; the article comes
    # next under the same title with that block in its footer: a page, not a copy of the shell
    title = BRIDGE + " | Daily"
    wall = f"Subscribe to read {BRIDGE}. " + prose(105, 100, OTHER)
    with Deduplicator(dir=str(tmp_path / "idx")) as dedup:
        shell = dedup.check("https://daily.example/app/bridge", html=html(title, wall), title=title)
        page = dedup.check("https://daily.example/bridge", html=html(title, _article(106), footer=wall), title=title)
    assert shell.action == "keep" and page.action == "keep", page


def _article(seed: int) -> str:
    return f"{BRIDGE} on Monday. " + prose(seed, 900)
