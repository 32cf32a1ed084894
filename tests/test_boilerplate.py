"""Boilerplate learned from kept pages (core/page/boilerplate.py): the share of each text in lines
its site's kept pages show outside their own is measured (DEDUP_BOILERPLATE), and pages whose
extraction collapsed onto a site's block are scored apart by what else tells them apart."""

import json
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


def shell(title):  # a thread loaded by script: extraction returns the sign-up block under the thread's title
    return page(title, "<div id='app'></div>")


THREADS = [("t/1", shell("How do I fix my bike chain? - Valley Forum")),
           ("t/2", shell("Best trails near the river - Valley Forum")),
           ("t/3", shell("Selling a used canoe - Valley Forum"))]


def test_template_lines_are_measured_on_both_sides_of_a_pair(tmp_path):
    pages = [("a1", article(1, 1)), ("app/1", SHELL), ("app/2", SHELL.replace(b"<main>", b"<main><!-- 2 -->"))]
    with Deduplicator(dir=str(tmp_path / "off")) as d:  # the default: the site's template is not learned
        off = _decide(d, pages)["app/2"]
    with Deduplicator(dir=str(tmp_path / "on"), boilerplate=True) as d:
        on = _decide(d, pages)["app/2"]
    assert off.weighing.measures["sitelines_page"] in (None, 0.0)
    # a1 showed the sign-up block outside its text: both shells' texts are all template
    assert on.weighing.measures["sitelines_page"] == on.weighing.measures["sitelines_kept"] == 1.0
    # the same words under no title at all stay a copy: nothing but the text tells the pages apart
    assert on.would_drop and on.duplicate_of.endswith("app/1")


def test_collapsed_threads_are_scored_apart_and_a_copy_is_still_dropped(tmp_path):
    pages = [("a1", article(1, 1)), *THREADS, ("a1?utm_source=feed", article(1, 1)), ("a2", article(2, 2))]
    for boilerplate in (False, True):
        with Deduplicator(dir=str(tmp_path / str(boilerplate)), boilerplate=boilerplate) as d:
            got = _decide(d, pages)
        for name, _ in THREADS[1:]:  # over the lookup thresholds (the same words), under the score
            assert not got[name].would_drop and got[name].scored_apart
            assert got[name].weighing.score < got[name].weighing.threshold
            assert dict(got[name].weighing.contributions)["title"] < 0  # the titles told them apart
        assert got["a1?utm_source=feed"].would_drop and got["a1?utm_source=feed"].duplicate_of.endswith("/a1")
        assert not got["a2"].would_drop and not got["a2"].scored_apart


def test_a_crawl_logs_the_pages_scored_apart_and_passes_them_on(tmp_path, serve):
    root = tmp_path / "site"
    (root / "t").mkdir(parents=True)
    (root / "a1.html").write_bytes(article(1, 1))
    (root / "a2.html").write_bytes(article(2, 2))
    for name, html in THREADS:
        (root / f"{name}.html").write_bytes(html)
    base = serve(str(root)).base_url
    paths = ["a1.html", *(f"{name}.html" for name, _ in THREADS), "a2.html"]
    urls = write_urls(tmp_path / "urls.txt", [f"{base}/{p}" for p in paths])
    out, log = tmp_path / "out.jsonl", tmp_path / "drops.jsonl"
    proc = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}", "-s", "ROBOTSTXT_OBEY=0",
                        "-s", "CONCURRENT_REQUESTS=1", "-s", "DEDUP_BOILERPLATE=True", "-s", f"DEDUP_DROPLOG={log}",
                        "-o", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = dedup_stats(proc.stderr)
    assert stats.get("dedup/scored_apart") == 2 and not stats.get("dedup/dropped")
    assert len(out.read_text().splitlines()) == 5
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(r["url"].rsplit("/", 1)[1] for r in lines if r["action"] == "kept") == ["2.html", "3.html"]
    assert all(r["score"] < r["score_threshold"] and "contributions" in r for r in lines)


def test_pathological_markup_is_read_in_one_pass_and_lines_after_it_are_found():
    # 8,000 self-closed and unclosed <svg> icons: a closing tag is looked for once, not at each
    for icons in ("<svg class='i'/>" * 8000, "<svg class='i'>" * 8000, "<script>x" * 3000):
        html = f"<html><body><p>one two three four five six</p>{icons}<div>seven eight nine ten eleven</div></body></html>"
        keys = set(template_keys(html, "").tolist())
        assert {k for k, _ in text_lines("one two three four five six")} <= keys
        assert {k for k, _ in text_lines("seven eight nine ten eleven")} <= keys  # (an unclosed tag: the tag alone)
