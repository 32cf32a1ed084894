"""Boilerplate learned from kept pages (core/page/boilerplate.py): a page whose extraction collapsed
onto a site's block is not dropped as a copy of another page that collapsed onto it."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from crawler_dedup import Deduplicator
from crawler_dedup.core.page.boilerplate import _tokens, template_keys, text_lines
from crawler_dedup.core.page.extract import extract
from crawler_dedup.core.page.tokens import tokenize

from .conftest import dedup_stats, scrapy_crawl, write_urls

SIGNUP = ("<div class='box'><h3>Get the Morning Briefing</h3><p>Sign up for our free morning briefing and get the "
          "day's most important stories from the valley delivered to your inbox before breakfast.</p>"
          "<p>We will never share your address with anyone else, and every message has a link to leave the list.</p></div>")
FOOTER = "<footer><p>Copyright 2026 The Valley Courier, all rights reserved by the publisher.</p></footer>"
WORDS = "river council school budget road bridge mayor vote park library water storm museum farm market".split()


def page(title, body):
    head = f"<title>{title}</title>" if title else ""
    return (f"<html><head>{head}<script>var tracker = 'one two three four five six';</script></head><body>"
            f"<main>{body}</main>{SIGNUP}{FOOTER}</body></html>").encode()


def article(n, seed):
    rnd = random.Random(seed)
    paras = "".join("<p>" + " ".join(rnd.choice(WORDS) for _ in range(40)).capitalize() + ".</p>" for _ in range(6))
    return page(f"Story {n}", f"<article><h1>Story {n}</h1>{paras}</article>")


SHELL = page(None, "<div id='app'></div>")  # an article loaded by script: extraction returns the sign-up block


def test_template_keys_are_the_lines_outside_the_text_and_not_scripts():
    html = article(1, 1)
    text = extract(html, "https://valley.example/a1").text
    keys = set(template_keys(html, text).tolist())
    signup = text_lines("Sign up for our free morning briefing and get the day's most important stories from "
                        "the valley delivered to your inbox before breakfast.")[0][0]
    footer = text_lines("Copyright 2026 The Valley Courier, all rights reserved by the publisher.")[0][0]
    assert {signup, footer} <= keys
    assert not keys & {key for key, _ in text_lines(text)}  # the page's own lines are not its template
    assert not keys & {key for key, _ in text_lines("var tracker = 'one two three four five six';")}
    assert len(keys) == 3  # two sign-up lines and the footer; the heading is too short


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127)))
def test_the_quick_ascii_tokens_are_the_tokenizers(text):
    assert _tokens(text) == tokenize(text)


def _decide(d, pages):
    return {name: d.check(f"https://valley.example/{name}", html=html) for name, html in pages}


def test_a_collapsed_page_is_kept_on_a_match_of_boilerplate_and_a_copy_is_still_dropped(tmp_path):
    pages = [("a1", article(1, 1)), ("app/1", SHELL), ("app/2", SHELL), ("a1?utm_source=feed", article(1, 1)),
             ("a2", article(2, 2))]
    with Deduplicator(dir=str(tmp_path / "off")) as d:  # the default
        off = _decide(d, pages)
    assert off["app/2"].would_drop and off["app/2"].duplicate_of.endswith("app/1")  # what the guard is for
    with Deduplicator(dir=str(tmp_path / "on"), boilerplate=True) as d:
        on = _decide(d, pages)
    assert not on["app/2"].would_drop and on["app/2"].guard == "boilerplate"
    assert on["a1?utm_source=feed"].would_drop and on["a1?utm_source=feed"].duplicate_of.endswith("/a1")
    assert not on["a2"].would_drop and not on["app/1"].would_drop
    with Deduplicator(dir=str(tmp_path / "on"), boilerplate=True) as d:  # learned in the index: a new process knows it
        again = d.check("https://valley.example/app/3", html=SHELL)
    assert not again.would_drop and again.guard == "boilerplate"


def test_without_a_kept_page_showing_the_block_the_match_stands(tmp_path):
    # nothing learned yet: the second collapsed page is dropped, as before (the guard needs evidence)
    with Deduplicator(dir=str(tmp_path / "idx"), boilerplate=True) as d:
        got = _decide(d, [("app/1", SHELL), ("app/2", SHELL)])
    assert got["app/2"].would_drop


def test_a_crawl_counts_the_guard_and_passes_the_page_on(tmp_path, serve):
    root = tmp_path / "site"
    (root / "app").mkdir(parents=True)
    (root / "a1.html").write_bytes(article(1, 1))
    (root / "a2.html").write_bytes(article(2, 2))
    (root / "app" / "1.html").write_bytes(SHELL)
    (root / "app" / "2.html").write_bytes(SHELL.replace(b"<main>", b"<main><!-- 2 -->"))
    base = serve(str(root)).base_url
    urls = write_urls(tmp_path / "urls.txt", [f"{base}/{p}" for p in ("a1.html", "app/1.html", "app/2.html", "a2.html")])
    out = tmp_path / "out.jsonl"
    proc = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}", "-s", "ROBOTSTXT_OBEY=0",
                        "-s", "CONCURRENT_REQUESTS=1", "-s", "DEDUP_BOILERPLATE=True", "-o", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = dedup_stats(proc.stderr)
    assert stats.get("dedup/guarded/boilerplate") == 1 and not stats.get("dedup/dropped")
    assert len(out.read_text().splitlines()) == 4


def test_pathological_markup_is_read_in_one_pass_and_lines_after_it_are_found():
    # 8,000 self-closed and unclosed <svg> icons: a closing tag is looked for once, not at each
    for icons in ("<svg class='i'/>" * 8000, "<svg class='i'>" * 8000, "<script>x" * 3000):
        html = f"<html><body><p>one two three four five six</p>{icons}<div>seven eight nine ten eleven</div></body></html>"
        keys = set(template_keys(html, "").tolist())
        assert {k for k, _ in text_lines("one two three four five six")} <= keys
        assert {k for k, _ in text_lines("seven eight nine ten eleven")} <= keys  # (an unclosed tag: the tag alone)
