"""Deduplicator.check on real pages (the bundled demo articles), steps 1-8 without Scrapy."""

import random

import pytest

from crawler_dedup import DedupConfig, Deduplicator
from crawler_dedup.exceptions import ConfigError
from crawler_dedup.stores import MemoryStore


@pytest.fixture
def dedup(tmp_path):
    with Deduplicator(dir=str(tmp_path / "idx"), lmdb_sync=False) as d:
        yield d


def test_distinct_real_pages_are_kept_and_copies_dropped(dedup, articles):
    for i, (html, _) in enumerate(articles):
        v = dedup.check(f"https://site/{i}", html)
        assert v.action == "keep" and v.skipped is None and v.fingerprint is not None, v
    v = dedup.check("https://mirror/3", articles[3][0])
    assert (v.action, v.reason, v.duplicate_of, v.distance, v.similarity) == ("drop", "exact", "https://site/3", 0, 1.0)
    assert v.duplicate_of_fingerprint == v.fingerprint


def test_small_edit_is_a_near_duplicate(dedup, articles):
    html, gold = articles[5]
    dedup.check("https://site/a", text=gold)
    words = gold.split(" ")
    for pos in random.Random(1).sample(range(len(words)), 2):
        words[pos] = "changed"
    v = dedup.check("https://site/b", text=" ".join(words))
    assert (v.action, v.reason, v.duplicate_of) == ("drop", "near", "https://site/a")
    assert 0 < v.distance <= 3 and 0.5 <= v.similarity < 1.0


def test_hard_negatives_same_site_other_article_are_kept(dedup, same_site_pairs):
    for i, (one, two) in enumerate(same_site_pairs):
        assert dedup.check(f"https://s{i}/1", one).action == "keep"
        assert dedup.check(f"https://s{i}/2", two).action == "keep"


def test_too_short_empty_and_textless_pages_are_skipped_not_indexed(dedup):
    assert dedup.check("https://a", text="only a few words here").skipped == "too_short"
    assert dedup.check("https://b", html=b"").skipped == "empty"
    assert dedup.check("https://c", html=b"<html><head><script>var x = 1;</script></head><body><img src=a.png></body></html>").skipped == "no_text"
    assert dedup.index.read(lambda t: t.doc_count()) == 0


def test_oversized_body_is_skipped(tmp_path):
    with Deduplicator(dir=str(tmp_path), max_bytes=1000) as d:
        assert d.check("https://big", html=b"<p>" + b"x " * 2000 + b"</p>").skipped == "too_large"


def test_allow_list_is_never_checked(tmp_path, articles):
    with Deduplicator(dir=str(tmp_path), allow=[r"^https://keep\.me/"]) as d:
        d.check("https://site/1", articles[0][0])
        v = d.check("https://keep.me/copy", articles[0][0])
        assert (v.action, v.skipped) == ("keep", "allowed")


def test_dry_run_flags_and_does_not_index_the_copy(tmp_path, articles):
    with Deduplicator(dir=str(tmp_path), dry_run=True) as d:
        d.check("https://site/1", articles[0][0])
        v = d.check("https://site/2", articles[0][0])
        assert (v.action, v.reason, v.is_duplicate) == ("flag", "exact", True)
        assert d.index.read(lambda t: t.doc_count()) == 1


def test_item_of_a_page_kept_as_response_in_this_run_is_not_its_own_duplicate(dedup, articles):
    html = articles[1][0]
    assert dedup.check("https://site/p", html, stage="response").action == "keep"
    v = dedup.check("https://site/p", html, stage="item")
    assert (v.action, v.skipped) == ("keep", "checked_as_response")
    # another URL with the same page is still a duplicate at the item stage
    assert dedup.check("https://site/q", html, stage="item").action == "drop"


def test_a_new_run_drops_what_an_earlier_run_kept(tmp_path, articles):
    path = str(tmp_path / "idx")
    with Deduplicator(dir=path) as d:
        assert d.check("https://site/p", articles[2][0]).action == "keep"
    with Deduplicator(dir=path) as d:
        v = d.check("https://site/p", articles[2][0], stage="item")
        assert (v.action, v.duplicate_of) == ("drop", "https://site/p")


def test_store_failure_fails_open(tmp_path, articles, caplog):
    d = Deduplicator(dir=str(tmp_path)).open()
    d.index.store.env.close()  # the environment goes away under us
    d.index.store.env = None
    v = d.check("https://site/x", articles[0][0])
    assert (v.action, v.error) == ("keep", "store")
    v = d.check("https://site/y", articles[1][0])
    assert v.error == "store"
    assert sum("dedup store failed" in r.message for r in caplog.records) == 1  # logged once


def test_extraction_failure_fails_open(dedup, monkeypatch):
    import crawler_dedup.core.page.fingerprint as mod

    def boom(*a, **k):
        raise ValueError("parser exploded")

    monkeypatch.setattr(mod, "extract", boom)
    v = dedup.check("https://x", html="<html><p>text</p></html>")
    assert (v.action, v.error) == ("keep", "extract")


def test_decisions_are_deterministic_across_instances(articles):
    def run():
        d = Deduplicator(DedupConfig(), store=MemoryStore()).open()
        order = [a[1] for a in articles[:6]] + [articles[2][1], articles[4][1].replace(" the ", " a ", 2)]
        return [(v.action, v.duplicate_of, v.fingerprint) for v in
                (d.check(f"u{i}", text=t) for i, t in enumerate(order))]

    assert run() == run()


@pytest.mark.parametrize("name,value,allowed", [
    ("DEDUP_BACKEND", "nosuch", "lmdb, memory"),
    ("DEDUP_K", -1, "integer from 0 to 8"),
    ("DEDUP_K", "three", "integer from 0 to 8"),
    ("DEDUP_THRESHOLD", 1.5, "number from 0.0 to 1.0"),
    ("DEDUP_DRY_RUN", "maybe", "boolean"),
    ("DEDUP_ALLOW", "([", "regular expressions"),
    ("DEDUP_MIN_TOKENS", 0, ">= 1"),
])
def test_bad_settings_name_the_setting_value_and_what_is_allowed(name, value, allowed):
    with pytest.raises(ConfigError) as err:
        DedupConfig.from_settings({name: value})
    message = str(err.value)
    assert name in message and repr(value) in message and allowed in message


def test_settings_parse_strings_from_the_command_line():
    cfg = DedupConfig.from_settings({"DEDUP_K": "4", "DEDUP_DRY_RUN": "1", "DEDUP_ALLOW": "^a,^b", "DEDUP_THRESHOLD": "0.7"})
    assert (cfg.k, cfg.dry_run, [p.pattern for p in cfg.allow], cfg.threshold) == (4, True, ["^a", "^b"], 0.7)
    assert DedupConfig.from_settings({"DEDUP_ALLOW": '["^x", "y$"]'}).allow[1].pattern == "y$"


def test_items_without_url_are_still_compared(dedup, articles):
    assert dedup.check("", text=articles[0][1], stage="item").action == "keep"
    v = dedup.check("", text=articles[0][1], stage="item")
    assert (v.action, v.reason) == ("drop", "exact")


def test_two_items_with_one_url_in_one_run_are_duplicates(dedup, articles):
    # only a page kept by the middleware (stage response) is exempt for its own item
    assert dedup.check("https://x/a", text=articles[0][1], stage="item").action == "keep"
    assert dedup.check("https://x/a", text=articles[0][1], stage="item").action == "drop"


def test_bad_input_types_are_skipped_not_raised(dedup):
    assert dedup.check("https://x", html=12345).skipped == "bad_input"
    assert dedup.check("https://x", text=["not", "text"]).skipped == "bad_input"
    assert dedup.check(None, html=b"<p>x</p>").action == "keep"


def test_surrogate_urls_and_huge_titles_round_trip(dedup, articles):
    url = "https://x/\udcff-page"
    title = "é" * 70000
    assert dedup.check(url, text=articles[0][1], title=title).action == "keep"
    v = dedup.check("https://y/", text=articles[0][1])
    assert v.duplicate_of == url and v.duplicate_of_title.startswith("éé")


def test_an_index_remembers_the_shingle_size(tmp_path):
    from crawler_dedup.exceptions import StoreFormat

    with Deduplicator(dir=str(tmp_path / "idx")):
        pass
    with pytest.raises(StoreFormat, match="DEDUP_SHINGLE=3"):
        Deduplicator(dir=str(tmp_path / "idx"), shingle=5).open()


def test_notice_text_is_not_checked(dedup):
    banner = ("We and our partners store and access information on your device, such as cookies, and "
              "process personal data for personalised ads and content. You may accept or reject consent, "
              "change your privacy preferences or refuse consenting at any time.")
    assert dedup.check("https://a/1", text=banner).skipped == "notice"
    assert dedup.check("https://b/2", text=banner).skipped == "notice"


def test_short_shared_text_under_unrelated_titles_is_kept(dedup):
    promo = " ".join(f"Related story number {i} about the city council and the new stadium plan." for i in range(6))
    assert dedup.check("https://a/1", text=promo, title="Storm hits coast | Daily").action == "keep"
    v = dedup.check("https://a/2", text=promo, title="Election results tonight | Daily")
    assert v.scored_apart  # a plain check would drop it: the score keeps it apart


@pytest.mark.parametrize("value", ['["^a"', 5, {"a": 1}])
def test_malformed_allow_lists_are_config_errors(value):
    with pytest.raises(ConfigError, match="DEDUP_ALLOW"):
        DedupConfig.from_settings({"DEDUP_ALLOW": value})


@pytest.mark.parametrize("a,b,same_site,one_headline", [
    ("Storm hits coast | Daily", "Election results tonight | Daily", True, False),  # only the site's name shared
    ("Storm hits coast | Daily", "Storm hits coast - Other Paper", False, True),
    ("Storm hits coast | Daily", "Election results tonight | Daily", False, False),  # "Daily": many sites' name
    ("New Zealand - Wikipedia - Wire Service", "New Zealand - Wikipedia", False, True),
    ("Storm hits the coast (print version)", "Storm hits the coast | Daily", True, True),
    ("Storm hits coast | The Daily Bugle New York Edition", "Vote counted tonight | The Daily Bugle New York Edition",
     True, False),
    # the headline shared under other site names and section prefixes (syndicated copies)
    ("How to book flights abroad? | Wire", "relocation - How to book flights abroad? - Expatriates Stack Exchange",
     False, True),
    ("Chess Sets (print)", "Chess Sets - The Regency Chess Co USA", True, True),  # a print version, its title whole
    ("Economy [Printer-friendly version]", "Economy | Al Jazeera", True, True),
    ("Chess Sets (print)", "Chess Clocks - The Regency Chess Co USA", True, False),
    ("Storm (mobile) | Daily", "Vote counted tonight | Daily", True, False),  # a version mark is no headline
    ("Rita batters Louisiana, Texas coasts - Sep 24, 2005", "Rita batters Louisiana, Texas coasts | News", False, True),
    ("Top 10 hiking boots - updated 2024", "Top 10 hiking boots | Outdoor", False, True),
    ("Trump Has \ufffdDuty\ufffd to Prepare for War With North Korea | Online",
     "Trump Has \u2018Duty\u2019 to Prepare for War With North Korea, Says Minister", False, True),  # garbled, cut short
    ("Running Shoes | REI Co-op", "Hiking Boots | REI Co-op", True, False),
])
def test_the_headline_match_of_two_titles(a, b, same_site, one_headline):
    from crawler_dedup.core.page.title import titles

    headline, _, _ = titles(a, b, same_site=same_site)
    assert (headline >= 0.8) is one_headline, headline


@pytest.mark.parametrize("a,b,differ", [
    ("Insulated Tumbler 20 oz | Shop", "Insulated Tumbler 30 oz | Shop", True),  # one product in two sizes
    ("Storm hits coast, part 2", "Storm hits coast, part 1", True),
    ("Top 10 hiking boots - updated 2024", "Top 10 hiking boots | Outdoor", False),  # a number on one side is no sign
    ("Storm hits coast", None, None),
])
def test_titles_that_each_carry_a_number_the_other_lacks(a, b, differ):
    from crawler_dedup.core.page.title import titles

    numbers = titles(a, b)[2]
    assert numbers == (None if differ is None else float(differ))


def test_real_pages_whose_article_is_script_loaded_are_not_duplicates_of_each_other(dedup, articles):
    """Real pages with their paragraphs gone (loaded by script) and a consent banner: extraction
    returns the banner for each, the same text on different pages. None may be dropped."""
    import os
    import re
    import sys

    from .conftest import ROOT

    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))  # the stream's templates are research code
    from stream import BANNER

    banner = re.search(r'<div id="consent">.*?</div>', BANNER, re.S).group(0).encode()
    verdicts = []
    for i, (html, _) in enumerate(articles[:4]):
        stripped = re.sub(rb"(?is)<p\b.*?</p>", b"", html)
        page = re.sub(rb"(?i)<body([^>]*)>", lambda m: b"<body" + m.group(1) + b">" + banner, stripped, count=1)
        verdicts.append(dedup.check(f"https://spa/{i}", page))
    assert all(v.action == "keep" for v in verdicts)
    assert sum(v.skipped == "notice" for v in verdicts) >= 2  # what the guard is for


@pytest.mark.parametrize("text,is_notice", [
    ("You've reached your limit of free articles this month. Subscribe now to continue reading and get "
     "unlimited digital access to our journalism. Already a subscriber? Log in to continue.", True),
    ("We use cookies to improve your experience. Accept all cookies or manage your preferences in the "
     "cookie settings below; you can withdraw your consent at any time on this page.", True),
    ("The city council voted on Tuesday to approve the new budget after a long debate about the cost "
     "of repairing the old bridge and the schools, which the mayor said could not wait another year.", False),
    ("Regulators fined the company after it placed tracking cookies on visitors' devices. The decision, "
     "under the data protection rules, says sites must ask before they track readers, and the firm "
     "said it would appeal against the fine in the coming weeks.", False),
])
def test_notice_detection(text, is_notice):
    from crawler_dedup.core.page.boilerplate import looks_like_notice
    from crawler_dedup.core.page.tokens import tokenize

    assert looks_like_notice(tokenize(text)) is is_notice


def test_quoting_an_earlier_page_and_adding_more_is_not_a_duplicate(dedup, articles):
    """Containment is of the new page in the kept one: a page that quotes a kept statement in
    full and adds its own reporting is new; the statement arriving after such a page is not."""
    statement, report = articles[4][1], articles[5][1]
    statement_words = " ".join(statement.split()[:120])
    said, reported = "Statement on the tournament draw", "Tournament draw: what the players said"
    assert dedup.check("https://agency/statement", text=statement_words, title=said).action == "keep"
    v = dedup.check("https://news/report", text=statement_words + "\n" + report, title=reported)
    assert v.action == "keep", v
    v = dedup.check("https://agency/statement-copy", text=statement_words, title=said)
    assert (v.action, v.duplicate_of) == ("drop", "https://agency/statement")


def test_two_releases_sharing_a_long_about_block_are_kept(dedup):
    about = ("About Northwind Components. Northwind Components designs and manufactures precision parts "
             "for industrial pumps, valves and compressors, serving customers in forty countries from "
             "plants in Ohio, Bavaria and Penang. Forward-looking statements: this release contains "
             "statements about future events that involve risks and uncertainties, including demand, "
             "supply chains, currency movements and regulation; actual results may differ materially, "
             "and the company undertakes no obligation to update them except as required by law. Investors "
             "should read the annual report, which describes these risks in more detail, together with the "
             "quarterly filings, the proxy statement and the sustainability report, all available on the "
             "investor relations website along with webcasts of earnings calls and presentations given at "
             "industry conferences during the year. Media contact: press office, Northwind Components.")
    q3 = ("Northwind Components today reported third quarter revenue of 212 million dollars, up nine percent "
          "from a year earlier, as orders for compressor parts recovered in Europe and Asia. Operating margin "
          "rose to fourteen percent and the company raised its outlook for the full year. ")
    cfo = ("Northwind Components today announced that Priya Natarajan will join the company as chief "
           "financial officer on the first of March, succeeding Tom Becker, who retires after eleven years. "
           "Natarajan was most recently treasurer of a large maker of industrial valves. ")
    assert dedup.check("https://nw/q3", text=q3 + about, title="Northwind Reports Third Quarter Results").action == "keep"
    v = dedup.check("https://nw/cfo", text=cfo + about, title="Northwind Appoints Priya Natarajan as CFO")
    assert v.action == "keep", v


def test_short_template_pages_with_other_names_are_kept(dedup):
    template = ("{name}, {age}, of {town}, passed away peacefully on {date} surrounded by family. A memorial "
                "service will be held at the community chapel. In lieu of flowers the family asks for "
                "donations to the local library, which {first} loved and visited every week for many years.")
    one = template.format(name="John A. Smith", first="John", age=84, town="Millbrook", date="March 3")
    two = template.format(name="John R. Miller", first="John", age=77, town="Eastfield", date="March 5")
    assert dedup.check("https://gazette/1", text=one, title="Obituary: John A. Smith | Gazette").action == "keep"
    assert dedup.check("https://gazette/2", text=two, title="Obituary: John R. Miller | Gazette").action == "keep"


def test_window_pages_stop_matching_and_leave_the_index(tmp_path, articles):
    golds = [a[1] for a in articles]
    with Deduplicator(dir=str(tmp_path / "idx"), window=3600) as d:
        assert d.check("https://a/0", text=golds[0], now=1000).action == "keep"
        assert d.check("https://b/0", text=golds[0], now=1000 + 3599).action == "drop"  # inside the window
        v = d.check("https://c/0", text=golds[0], now=1000 + 3601)  # outside: a page again
        assert v.action == "keep"
        assert d.check("https://d/0", text=golds[0], now=1000 + 3602).duplicate_of == "https://c/0"
        assert d.index.read(lambda t: t.doc_count()) == 1  # a/0 went when c/0 came


def test_a_steady_stream_keeps_the_index_flat(tmp_path, articles):
    vocab = sorted({w for _, gold in articles for w in gold.split()})
    rnd = random.Random(3)
    counts = []
    with Deduplicator(dir=str(tmp_path / "idx"), window=100, lmdb_sync=False) as d:
        for i in range(600):  # a page a second, a 100-second window
            d.check(f"https://s/{i}", text=" ".join(rnd.choices(vocab, k=60)), now=10_000 + i)
            if i % 100 == 99:
                counts.append(d.index.read(lambda t: t.doc_count()))
    assert counts[0] == 100 and all(c <= 101 for c in counts), counts


def test_misspelled_settings_and_keywords_are_errors():
    with pytest.raises(ConfigError, match="DEDUP_TRESHOLD.*did you mean DEDUP_THRESHOLD"):
        DedupConfig.from_settings({"DEDUP_TRESHOLD": 0.9})
    with pytest.raises(ConfigError, match="treshold.*did you mean threshold"):
        Deduplicator(backend="memory", treshold=0.9)
    assert DedupConfig.from_settings({"DEDUP_THRESHOLD": 0.9, "OTHER_SETTING": 1}).threshold == 0.9


def test_worker_fingerprint_equals_the_in_process_one(articles):
    from crawler_dedup.core.dedup import extract_and_fingerprint

    html = articles[3][0]
    config = DedupConfig.from_settings({})
    kind, fp, title = extract_and_fingerprint(html, "https://a.example/x", config)
    assert kind == "fingerprint" and title
    with Deduplicator(config, store=MemoryStore()) as d:
        local = d.fingerprint(fp.text)
        assert (fp.fingerprint, fp.digest, fp.tokens, fp.sketch.tolist()) == (
            local.fingerprint, local.digest, local.tokens, local.sketch.tolist())
        first = d.check("https://a.example/x", fingerprinted=fp, title=title)
        again = d.check("https://b.example/y", html=html)
        assert first.action == "keep" and again.action == "drop" and again.reason == "exact"
        assert again.duplicate_of == "https://a.example/x"
        # a too-short text comes back as the reason, and is skipped, not dropped
        assert d.check("https://c.example/z", fingerprinted="too_short").skipped == "too_short"
    # TF-IDF weights live with the index: the worker hands back the text instead
    kind, value, _ = extract_and_fingerprint(html, "u", DedupConfig.from_settings({"DEDUP_WEIGHTING": "tfidf"}))
    assert kind == "text" and isinstance(value, str)
    assert extract_and_fingerprint(b"", "u", config) == ("skipped", "empty", None)


@pytest.mark.parametrize("before", [0, 100_000, 400_000])
def test_the_title_is_found_after_a_long_head(before):
    # news pages put 70-100 KB of inline scripts and styles before <title> (nypost, msn on the benchmark)
    from crawler_dedup.core.page.extract import page_title

    head = "<script>" + "x" * before + "</script>"
    html = f"<html><head>{head}<TITLE>Storm closes &amp; schools</TITLE></head><body><p>t</p></body></html>"
    assert page_title(html) == page_title(html.encode()) == "Storm closes & schools"
    og = f'<html><head>{head}<meta property="og:title" content="Vote counted"></head><body></body></html>'
    assert page_title(og.encode()) == "Vote counted"
