"""Boilerplate learned per site (core/decide/sitelines.py): a copy whose extraction carries its sites'
leftovers is measured on what is left, and how much of a page's text is its site's boilerplate is
measured too; the score weighs both. Real article text (the bundled demo pages), real index stores."""

import pytest

from crawler_dedup import Deduplicator
from crawler_dedup.core.decide.sitelines import SitePage
from crawler_dedup.core.page.site import holder_of, lines_of
from crawler_dedup.core.verdict import Action
from crawler_dedup.droplog import read_droplog
from crawler_dedup.stores import MemoryStore

from .conftest import dedup_stats, scrapy_crawl, write_urls


def _words(text: str, n: int, skip: int = 0) -> str:
    """Whole paragraphs of `text` from the `skip`-th word until about n words (lines kept)."""
    out, count, seen = [], 0, 0
    for para in (p for p in text.split("\n") if len(p.split()) >= 5):
        seen += len(para.split())
        if seen <= skip:
            continue
        out.append(para)
        count += len(para.split())
        if count >= n:
            break
    return "\n".join(out)


@pytest.fixture(scope="module")
def texts(articles):
    bodies = [body for _, body in articles]
    return {
        "story": _words(bodies[2], 180),  # the article that is copied
        "other": _words(bodies[5], 250),  # another article of site A
        "third": _words(bodies[9], 250),  # another article of site B
        "promo": _words(bodies[6], 150),  # site A's standing block, extracted with its articles
        "bio": _words(bodies[0], 150),  # site B's
    }


def _dedup(**settings):
    return Deduplicator(store=MemoryStore(), **settings).open()


def test_lines_are_keyed_by_site_and_short_lines_are_not_filed():
    text = "A line with more than five words in it\nShare\nA line with more than five words in it"
    a = lines_of(text, "https://news.example.co.uk/a")
    b = lines_of(text, "https://www.example.co.uk/b")  # the same registered domain
    c = lines_of(text, "https://other.example/c")
    assert a is not None and b is not None and c is not None
    assert a.keys[0] == a.keys[2] == b.keys[0] and a.keys[0] != c.keys[0]
    assert a.keys[1] is None and len(a.filed) == 1  # "Share" is too short; one key for the repeated line
    assert lines_of(text, None) is None and lines_of(text, "not a url") is None
    assert holder_of("https://e.example/a?b=1&a=2#x") == holder_of("https://e.example/a?a=2&b=1")


def test_a_copy_carrying_both_sites_leftovers_is_found_on_what_is_left(texts):
    story, promo, bio = texts["story"], texts["promo"], texts["bio"]
    for learn in (True, False):
        d = _dedup(site_boilerplate=learn)
        # each site shows its block with another article first: that is how the block becomes known
        assert d.check("https://b.example/3", text=f"{texts['third']}\n{bio}", title="Third").action == Action.KEEP
        assert d.check("https://a.example/2", text=f"{texts['other']}\n{promo}", title="Other").action == Action.KEEP
        src = d.check("https://b.example/story", text=f"{story}\n{bio}", title="Storm closes schools")
        copy = d.check("https://a.example/syndicated/story", text=f"{promo}\n{story}", title="Portal A")
        assert src.action == Action.KEEP
        if learn:
            assert (copy.action, copy.measure, copy.duplicate_of) == (Action.DROP, "content", "https://b.example/story")
            assert copy.similarity >= 0.8
        else:  # the texts alone: half of each is the other site's block, so no copy (the test can fail)
            assert copy.action == Action.KEEP
        d.close()


def test_without_the_sites_other_pages_the_leftovers_are_text_and_the_copy_is_kept(texts):
    d = _dedup()
    d.check("https://b.example/story", text=f"{texts['story']}\n{texts['bio']}", title="Storm closes schools")
    copy = d.check("https://a.example/syndicated/story", text=f"{texts['promo']}\n{texts['story']}", title="Portal A")
    assert copy.action == Action.KEEP  # nothing known of either site: the blocks count as text
    d.close()


def test_a_page_whose_text_is_all_its_sites_boilerplate_is_not_a_copy(texts):
    promo = texts["promo"]
    for learn in (True, False):
        d = _dedup(site_boilerplate=learn)
        d.check("https://a.example/1", text=f"{texts['story']}\n{promo}", title="Storm closes schools | A")
        d.check("https://a.example/2", text=f"{_words(texts['other'], 90)}\n{promo}", title="Budget vote delayed | A")
        d.check("https://a.example/4", text=f"{texts['third']}\n{promo}", title="Harbour reopens | A")
        # a page of the site whose extraction returned the block only, under a title of its own (an
        # article loaded by script): its text is all lines the site's other pages show
        seen = []
        d.observe = lambda page, weighed: seen.extend(w.measures for w in weighed)
        shell = d.check("https://a.example/5", text=promo, title="Ferry timetable changes | A")
        assert shell.action == Action.KEEP
        assert seen and all(m["sitelines_page"] == (1.0 if learn else None) for m in seen)
        d.close()


def test_an_updated_page_does_not_make_its_own_lines_boilerplate(texts):
    d = _dedup()
    story, promo = texts["story"], texts["promo"]
    d.check("https://a.example/2", text=f"{texts['other']}\n{promo}", title="Other")
    d.check("https://a.example/story", text=f"{story}\n{promo}", title="Storm")
    updated = d.check("https://a.example/story", text=f"{story}\nA correction was added to this story today.\n{promo}",
                      title="Storm")
    assert updated.revisit == "updated"
    # the story's lines are filed under the URL once, however often it was checked
    page = SitePage.of("https://a.example/story", story)
    holders = d.index.read(lambda txn: txn.site_holders(page.keys))
    assert holders and all(ids == [holder_of("https://a.example/story")] for ids in holders)
    # so a print version of it on the site is still its copy
    printed = d.check("https://a.example/story/print", text=story, title="Storm")
    assert printed.action == Action.DROP and printed.duplicate_of == "https://a.example/story"
    d.close()


def test_site_lines_persist_in_an_lmdb_index(texts, tmp_path):
    promo, bio = texts["promo"], texts["bio"]
    with Deduplicator(dir=str(tmp_path / "idx")) as d:
        d.check("https://b.example/3", text=f"{texts['third']}\n{bio}", title="Third")
        d.check("https://a.example/2", text=f"{texts['other']}\n{promo}", title="Other")
        d.check("https://b.example/story", text=f"{texts['story']}\n{bio}", title="Storm closes schools")
    with Deduplicator(dir=str(tmp_path / "idx")) as d:  # a second crawl: what the first learned is there
        copy = d.check("https://a.example/syndicated/story", text=f"{promo}\n{texts['story']}", title="Portal A")
    assert copy.action == Action.DROP and copy.measure == "content"


def test_what_is_left_and_the_sites_share_are_measured_once_the_site_is_known(texts):
    """With the site's block known (two of its other pages show it), the pair is measured again
    without it: a copy carrying another site's leftovers resembles its source on what is left."""
    seen = []
    d = _dedup()
    d.observe = lambda page, weighed: seen.extend(w.measures for w in weighed)
    promo, bio = texts["promo"], texts["bio"]
    d.check("https://b.example/3", text=f"{texts['third']}\n{bio}", title="Third")
    d.check("https://a.example/1", text=f"{texts['other']}\n{promo}", title="Other")
    d.check("https://a.example/2", text=f"{_words(texts['other'], 90, skip=100)}\n{promo}", title="More")
    d.check("https://b.example/story", text=f"{texts['story']}\n{bio}", title="Storm closes schools")
    seen.clear()
    d.check("https://a.example/syndicated/story", text=f"{promo}\n{texts['story']}", title="Portal A")
    m = next(m for m in seen if m["sitelines_page"] is not None and m["sitelines_page"] > 0)
    assert m["own_resemblance"] > m["resemblance"] + 0.2 and m["own_contained"] > 0.9
    assert 0.3 < m["sitelines_page"] < 0.7  # the promo's share of the page's words
    d.close()


def test_a_short_print_version_under_the_same_headline_is_a_copy_unless_the_title_is_the_sites(texts):
    story = _words(texts["story"], 40, skip=40)  # under 100 words: the short-text rule wants resemblance 0.8
    long_page = f"{_words(texts['story'], 80)}\n{texts['other']}\n{texts['bio']}"  # the article and much else
    for learn in (True, False):
        d = _dedup(site_boilerplate=learn)
        d.check("https://a.example/story", text=long_page, title="Storm closes schools across the county")
        printed = d.check("https://a.example/story/print", text=story, title="Storm closes schools across the county")
        if learn:  # (without the site's lines, the long page's leftovers may keep it apart: no claim)
            assert printed.tokens < 100 and printed.action == Action.DROP, printed
        d.close()
    d = _dedup()
    # a title two other pages of the site carry too is the site's, not a headline
    d.check("https://a.example/x", text=texts["third"], title="The Daily Example Portal")
    d.check("https://a.example/y", text=texts["promo"], title="The Daily Example Portal")
    d.check("https://a.example/story", text=long_page, title="The Daily Example Portal")
    printed = d.check("https://a.example/story/print", text=story, title="The Daily Example Portal")
    assert printed.action == Action.KEEP
    d.close()
    d = _dedup()  # and another site's page under the same headline is no print version
    d.check("https://a.example/story", text=long_page, title="Storm closes schools across the county")
    other = d.check("https://b.example/story", text=story, title="Storm closes schools across the county")
    assert other.action == Action.KEEP
    d.close()


def _page(title: str, *parts: str) -> bytes:
    paragraphs = "".join(f"<p>{p}</p>\n" for part in parts for p in part.split("\n"))
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
            f"<nav><a href='/'>Home</a> <a href='/news'>News</a></nav><article><h1>{title}</h1>\n{paragraphs}"
            f"</article><footer>Daily Example, 1 Main Street</footer></body></html>").encode()


def test_a_real_crawl_drops_a_print_version_its_source_page_dwarfs(tmp_path, texts, serve):
    headline = "Storm closes schools across the county"
    story = _words(texts["story"], 90)
    site = tmp_path / "site"
    site.mkdir()
    pages = {  # the source carries the site's standing promo and text of its own (comments, a bio)
        "b.html": _page("Budget vote delayed again", texts["other"], texts["promo"]),
        "a.html": _page(headline, story, texts["promo"], texts["bio"], texts["third"]),
        "a-print.html": _page(headline, story),
    }
    for name, body in pages.items():
        (site / name).write_bytes(body)
    base = serve(str(site)).base_url
    urls = write_urls(tmp_path / "urls.txt", [f"{base}/{name}" for name in pages])
    # its text inside the source page's visible text under the same title, the source's extra text
    # its site's lines: dropped. Without the site's lines (a setting off) the source's own words
    # are not known as boilerplate, but the print page's text shown whole in the source's under its
    # title still tells it a copy (the score before 1fd448f kept the two apart); with no view of the
    # pages either, nothing is dropped
    for learn, visible, dropped in ((True, 0.8, True), (False, 0.8, True), (False, 0, False)):
        drops = tmp_path / f"drops-{learn}-{visible}.jsonl"
        proc = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={tmp_path / f'idx-{learn}-{visible}'}", "-s",
                            f"DEDUP_DROPLOG={drops}", "-s", f"DEDUP_SITE_BOILERPLATE={learn}", "-s", "ROBOTSTXT_OBEY=0",
                            "-s", f"DEDUP_VISIBLE_CONTAINMENT={visible}", "-s", "CONCURRENT_REQUESTS=1")
        assert proc.returncode == 0, proc.stderr[-3000:]
        records = [r for r in read_droplog(str(drops)) if r["action"] == "dropped"] if drops.exists() else []
        if dropped:
            assert [(r["url"], r["duplicate_of"]) for r in records] == [(f"{base}/a-print.html", f"{base}/a.html")]
            assert records[0]["score"] >= records[0]["score_threshold"]
            assert dedup_stats(proc.stderr)["dedup/dropped/near"] == 1
        else:
            assert records == [] and dedup_stats(proc.stderr)["dedup/kept"] == 3, (learn, visible)


def test_a_longer_page_that_quotes_a_kept_page_in_full_is_not_its_copy(texts):
    # the review's counterexample: a short kept article, then a long article of another site that
    # quotes it whole. Only the page's rest inside the kept page's counts, never the other way
    story, promo = texts["story"], texts["promo"]
    for known in (False, True):
        d = _dedup()
        if known:  # site A's promo is known boilerplate, so the rest is compared
            d.check("https://a.example/1", text=f"{texts['bio']}\n{promo}", title="One")
            d.check("https://a.example/2", text=f"{texts['third']}\n{promo}", title="Two")
        d.check("https://b.example/statement", text=story, title="Statement on the schools")
        text = f"{promo}\n{texts['other']}\n{story}" if known else f"{texts['other']}\n{story}"
        quoting = d.check("https://a.example/analysis", text=text, title="What the closures mean for parents")
        assert quoting.action == Action.KEEP, (known, quoting.measure, quoting.similarity)
        scores = d.index.read(lambda txn: SitePage.of("https://a.example/analysis", text).compare(
            txn, d.index.by_url(txn, "https://b.example/statement"), 3))
        assert scores.containment < 0.5 and scores.removed == known  # (the kept page is all inside it)
        d.close()


def test_a_kept_pages_lines_leave_the_index_with_it(texts):
    # an index under DEDUP_WINDOW stays flat: expired pages take their site lines and headline along
    d = _dedup(window=50)
    first = d.check("https://a.example/1", text=f"{texts['story']}\n{texts['promo']}", title="Storm closes schools",
                    now=1000)
    site = SitePage.of("https://a.example/1", f"{texts['story']}\n{texts['promo']}", "Storm closes schools")
    assert first.action == Action.KEEP and all(d.index.read(lambda txn: txn.site_holders(site.keys)))
    for i in range(6):  # later pages: each kept page takes a few expired ones out
        d.check(f"https://a.example/{i + 2}", text=_words(texts["other"], 60 + 20 * i, skip=10 * i), title=f"Page {i}",
                now=2000 + i)
    assert d.index.read(lambda txn: txn.doc_get(first.doc_id)) is None  # expired
    assert d.index.read(lambda txn: txn.site_holders(site.keys)) == [[] for _ in site.keys]
    assert d.index.read(lambda txn: txn.title_docs(site.title_key)) == []
    d.close()


def test_show_and_compare_explain_a_print_versions_drop(texts, serve, tmp_path):
    from crawler_dedup.config import DedupConfig
    from crawler_dedup.tools.show import why

    text = why({"reason": "near", "measure": "visible", "similarity": 0.97, "score": 0.93, "score_threshold": 0.72,
                "contributions": {"shows_kept": 1.9}}, DedupConfig())
    assert "0.930" in text and "0.720" in text and "visible 0.97" in text
    headline = "Storm closes schools across the county"
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.html").write_bytes(_page(headline, _words(texts["story"], 90), texts["promo"], texts["bio"],
                                        texts["third"]))
    (site / "a-print.html").write_bytes(_page(headline, _words(texts["story"], 90)))
    base = serve(str(site)).base_url
    from .conftest import cli

    proc = cli("compare", f"{base}/a.html", f"{base}/a-print.html")  # the pages' own URLs: one site
    assert proc.returncode == 0 and "B dropped: near duplicate of A, score" in proc.stdout, proc.stdout[-800:]
    assert "the score, each measurement's part in it" in proc.stdout and "own_contained" in proc.stdout
