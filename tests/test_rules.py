"""Each rule of the decision chain (core/decide/rules.py) alone, with no store: a page's context and a
small table of kept pages stand in for the index (the rules' Lookups protocol)."""

from __future__ import annotations

import random

import pytest

from crawler_dedup.config import DedupConfig
from crawler_dedup.core.decide import rules
from crawler_dedup.core.decide.matching import Match
from crawler_dedup.core.page.fingerprint import Fingerprinted, fingerprint
from crawler_dedup.core.page.plugins import feature_plugin
from crawler_dedup.core.index.records import DocRecord, Extra
from crawler_dedup.core.verdict import Action, Guard, Reason, Revisit, Skip, Stage, Verdict
from crawler_dedup.core.decide.verify import make_verifier

WORDS = ("council budget parks roads schools river bridge harbour market station museum library "
         "garden tower square street mayor vote plan summer winter festival concert").split()
NOW = 1_700_000_000.0


def text(seed: int, n: int = 150) -> str:
    rnd = random.Random(seed)
    return " ".join(rnd.choice(WORDS) for _ in range(n))


def fp_of(body: str, config: DedupConfig | None = None) -> Fingerprinted:
    config = config or DedupConfig()
    got = fingerprint(body, config, feature_plugin(config), make_verifier(config.verifier))
    assert isinstance(got, Fingerprinted)
    return got


def kept(doc_id: int, body: str, url: str, *, title: str | None = None, run: int = 1, time: float = NOW - 100,
         stage: str = "response", extras: dict | None = None) -> DocRecord:
    fp = fp_of(body)
    doc = DocRecord(url=url, fingerprint=fp.fingerprint, sketch=fp.sketch, tokens=fp.tokens, time=time,
                    shingles=fp.shingles, run=run, title=title, doc_id=doc_id, stage=stage,
                    extras={Extra.DIGEST: fp.digest, **(extras or {})})
    doc.set_text(body)
    return doc


class Table:
    """The Lookups protocol over a list of kept pages: every kept page is a candidate."""

    site = None

    def __init__(self, docs=(), killed=(), collapsed=False):
        self.docs, self.killed, self.collapsed = list(docs), set(killed), collapsed

    def by_url(self, url):
        return next((d for d in reversed(self.docs) if d.url == url), None)

    def run_killed(self, run):
        return run in self.killed

    def exact(self, digest):
        return next((d for d in self.docs if d.extras.get(Extra.DIGEST) == digest), None)

    def candidates(self, fp):
        return list(self.docs)

    def template_collapsed(self, fp):
        return self.collapsed

    def headed(self, title):
        return list(self.docs)


def page(url: str, body: str, look: Table | None = None, *, stage: Stage = Stage.RESPONSE, run: int = 2,
         title: str | None = None, now: float = NOW, never_drop: bool = False, canonical: str | None = None,
         **settings) -> rules.Page:
    config = DedupConfig.from_settings({}, **settings)
    verifier = make_verifier(config.verifier)
    look = look or Table()
    judging = rules.Judging(config, run, lambda fp, doc: verifier.score(fp, doc, config), verifier.name)
    verdict = Verdict(url=url, title=title, never_drop=never_drop, canonical=canonical)
    return rules.Page(verdict, fp_of(body, config), stage, now, look, judging,
                      prior=look.by_url(url) if url else None)


def test_the_chain_is_listed_once_in_order_and_each_rule_says_what_it_decides():
    names = [name for name, _ in rules.describe()]
    assert names == ["item_of_kept_response", "out_of_window", "revisit", "find_match", "trusted_text", "contained",
                     "template_guard", "known_copy", "canonical", "clean_url", "never_drop", "revisit_copy", "item_of_matched_response",
                     "duplicate", "keep"]
    assert all(len(what) > 30 for _, what in rules.describe())


def test_decide_names_the_rule_that_decided():
    body = text(1)
    look = Table([kept(1, body, "https://a.example/1")])
    decision = rules.decide(page("https://b.example/copy", body, look))
    assert (decision.verdict.rule, decision.verdict.action, decision.file) == ("duplicate", Action.DROP, False)
    decision = rules.decide(page("https://b.example/new", text(2), look))
    assert (decision.verdict.rule, decision.verdict.action, decision.file) == ("keep", Action.KEEP, True)


def test_item_of_kept_response():
    body = text(1)
    look = Table([kept(7, body, "https://a.example/1", run=2, stage="response")])
    got = rules.item_of_kept_response(page("https://a.example/1", body, look, stage=Stage.ITEM, run=2))
    assert got is not None and (got.verdict.skipped, got.verdict.doc_id, got.file) == (Skip.CHECKED_AS_RESPONSE, 7, False)
    assert rules.item_of_kept_response(page("https://a.example/1", body, look, stage=Stage.ITEM, run=3)) is None
    assert rules.item_of_kept_response(page("https://a.example/1", body, look, stage=Stage.RESPONSE, run=2)) is None


def test_out_of_window_makes_the_urls_entry_stale():
    body = text(1)
    look = Table([kept(4, body, "https://a.example/1", time=NOW - 500)])
    p = page("https://a.example/1", body, look, window=100)
    assert rules.out_of_window(p) is None and (p.prior, p.stale) == (None, 4)
    p = page("https://a.example/1", body, look, window=1000)
    assert rules.out_of_window(p) is None and p.prior is not None and p.stale is None


def test_revisit_unchanged_updated_and_resent():
    body = text(1)
    look = Table([kept(3, body, "https://a.example/1", run=1)])
    same = rules.revisit(page("https://a.example/1", body, look))
    assert same is not None and same.verdict.revisit == Revisit.UNCHANGED
    assert (same.verdict.action, same.verdict.reason, same.resend) == (Action.DROP, Reason.UNCHANGED, None)
    kept_too = rules.revisit(page("https://a.example/1", body, look, unchanged="keep"))
    assert kept_too is not None and kept_too.verdict.action == Action.KEEP
    killed = rules.revisit(page("https://a.example/1", body, Table(look.docs, killed={1})))
    assert killed is not None and killed.verdict.resent and killed.resend is look.docs[0]
    changed = page("https://a.example/1", text(9), look)
    assert rules.revisit(changed) is None and (changed.revisit, changed.stale) == (True, 3)
    off = page("https://a.example/1", body, look, revisit="drop")
    assert rules.revisit(off) is None and not off.revisit


def test_find_match_exact_near_and_the_title_guard():
    body = text(1)
    look = Table([kept(1, body, "https://a.example/1", title="Council approves the budget")])
    p = page("https://b.example/copy", body, look, title="Council approves the budget")
    assert rules.find_match(p) is None and p.match is not None and p.match.reason == Reason.EXACT
    edited = body.replace("budget", "plan", 2)
    p = page("https://b.example/copy", edited, look)
    rules.find_match(p)
    assert p.match is not None and p.match.reason == Reason.NEAR and p.verdict.thresholds is not None
    # the same site under an unrelated title: two pages, whatever their texts
    p = page("https://a.example/2", body, look, title="Harbour festival draws crowds")
    rules.find_match(p)
    assert p.match is None and p.verdict.guard == Guard.TITLE


def test_find_match_never_matches_the_urls_own_entry_or_a_page_out_of_the_window():
    body = text(1)
    own = Table([kept(1, body, "https://a.example/1")])
    p = page("https://a.example/1", body, own)
    p.revisit = True
    rules.find_match(p)
    assert p.match is None
    old = Table([kept(1, body, "https://a.example/1", time=NOW - 500)])
    p = page("https://b.example/copy", body, old, window=100)
    rules.find_match(p)
    assert p.match is None


def _matched(p: rules.Page, doc: DocRecord, reason: Reason = Reason.NEAR) -> rules.Page:
    p.match = Match(doc, reason, 0, 0.9, "resemblance")
    return p


def test_template_guard():
    doc = kept(1, text(1), "https://a.example/1")
    p = _matched(page("https://b.example/2", text(1), Table([doc], collapsed=True), boilerplate=True), doc)
    assert rules.template_guard(p) is None and p.match is None and p.verdict.guard == Guard.BOILERPLATE
    p = _matched(page("https://b.example/2", text(1), Table([doc], collapsed=True), boilerplate=False), doc)
    assert rules.template_guard(p) is None and p.match is not None  # the setting is off
    p = _matched(page("https://b.example/2", text(1), Table([doc], collapsed=True), boilerplate=True), doc,
                 Reason.CONCEPTUAL)
    assert rules.template_guard(p) is None and p.match is not None  # LSI does not rest on lines


def test_canonical_supersedes_the_kept_copy_that_names_this_url():
    doc = kept(5, text(1), "https://a.example/amp", extras={Extra.CANONICAL: b"https://a.example/story"})
    p = _matched(page("https://a.example/story", text(1), Table([doc])), doc)
    assert rules.canonical(p) is None and p.match is None and p.remove == [5]
    assert p.verdict.superseded is not None and p.verdict.superseded["url"] == "https://a.example/amp"
    dry = _matched(page("https://a.example/story", text(1), Table([doc]), dry_run=True), doc)
    decided = rules.canonical(dry)
    assert decided is not None and not decided.file and decided.verdict.superseded is not None
    other = _matched(page("https://a.example/other", text(1), Table([doc])), doc)
    assert rules.canonical(other) is None and other.match is not None


def test_never_drop():
    doc = kept(1, text(1), "https://a.example/1")
    got = rules.never_drop(_matched(page("https://a.example/hub", text(1), never_drop=True), doc))
    assert got is not None and got.verdict.skipped == Skip.NEVER_DROP and not got.file
    assert rules.never_drop(_matched(page("https://a.example/hub", text(1)), doc)) is None


def test_revisit_copy():
    doc = kept(1, text(1), "https://a.example/1")
    p = _matched(page("https://a.example/2", text(1)), doc)
    p.revisit = True
    assert rules.revisit_copy(p) is None and p.verdict.revisit == Revisit.COPY and p.match is not None
    p = _matched(page("https://a.example/2", text(1), revisit="keep"), doc)
    p.revisit = True
    assert rules.revisit_copy(p) is None and p.match is None


def test_item_of_matched_response():
    doc = kept(8, text(1), "https://a.example/1", run=2, stage="response")
    got = rules.item_of_matched_response(_matched(page("https://a.example/1", text(1), stage=Stage.ITEM, run=2), doc))
    assert got is not None and (got.verdict.skipped, got.verdict.doc_id) == (Skip.CHECKED_AS_RESPONSE, 8)
    assert rules.item_of_matched_response(_matched(page("https://b.example/1", text(1), stage=Stage.ITEM, run=2),
                                                   doc)) is None


@pytest.mark.parametrize("settings, reason, action, filed", [
    ({}, Reason.NEAR, Action.DROP, False),
    ({"dry_run": True}, Reason.NEAR, Action.FLAG, False),
    ({"conceptual": "flag"}, Reason.CONCEPTUAL, Action.FLAG, True),  # flagged, and a page of its own
    ({"conceptual": "drop"}, Reason.CONCEPTUAL, Action.DROP, False),
])
def test_duplicate(settings, reason, action, filed):
    doc = kept(1, text(1), "https://a.example/1")
    got = rules.duplicate(_matched(page("https://b.example/1", text(1), **settings), doc, reason))
    assert got is not None and (got.verdict.action, got.verdict.duplicate_of, got.file) == (action, doc.url, filed)
    assert rules.duplicate(page("https://b.example/1", text(1))) is None  # no match: passes on


def test_keep_files_the_page_and_removes_what_it_replaces():
    p = page("https://a.example/1", text(1))
    p.revisit, p.stale, p.remove = True, 3, [9]
    got = rules.keep(p)
    assert got.file and got.remove == (9, 3) and got.verdict.revisit == Revisit.UPDATED
    plain = rules.keep(page("https://a.example/2", text(2)))
    assert plain.file and plain.remove == () and plain.verdict.revisit is None


def _viewed(doc: DocRecord, shown: str, chrome: float = 0.0) -> DocRecord:
    """A kept page that showed `shown` beside its main text (its visible sample and chrome share)."""
    from crawler_dedup.core.page.visible import main_shingles, sample

    doc.extras[Extra.VISIBLE] = sample(main_shingles(shown)).astype(">u4").tobytes()
    doc.extras[Extra.CHROME] = bytes([round(chrome * 100)])
    return doc


def _with_view(p: rules.Page, shown: str, chrome: float = 0.0) -> rules.Page:
    from crawler_dedup.core.page.visible import PageView, main_shingles

    p.fp.view = PageView(visible=main_shingles(shown), chrome=chrome)
    return p


def test_contained_finds_a_main_text_inside_the_other_pages_visible_text_either_way():
    article, related, comments = "The storm hits the coast. " + text(1, 300), text(2, 200), text(3, 200)
    # the kept source's extraction took its comments; this copy's main text is the article, which
    # the source showed
    source = _viewed(kept(1, comments, "https://a.example/story", title="Storm hits the coast | Daily"),
                     article + " " + comments)
    p = _with_view(page("https://b.example/copy", article, Table([source]), title="Storm hits the coast - Wire"),
                   article)
    assert rules.contained(p) is None and p.match is not None
    assert (p.match.doc.doc_id, p.match.measure, p.match.similarity >= 0.8) == (1, "visible", True)
    # the other way: this copy's extraction took its template's related list; it shows the kept article
    source = _viewed(kept(2, article, "https://a.example/story", title="Storm hits the coast | Daily"), article)
    p = _with_view(page("https://b.example/copy", related, Table([source]), title="Storm hits the coast - Wire"),
                   related + " " + article)
    rules.contained(p)
    assert p.match is not None and p.match.doc.doc_id == 2
    # but a page about its headline that shows a kept page's other text is a page: a full page
    # beside its app shell, whose extraction took the site's related list
    shell = _viewed(kept(3, related, "https://a.example/app/story", title="Storm hits the coast | Daily"), related)
    full = _with_view(page("https://a.example/story", article, Table([shell]), title="Storm hits the coast | Daily"),
                      article + " " + related)
    rules.contained(full)
    assert full.match is None


def test_contained_needs_the_same_headline_text_that_is_not_chrome_and_the_setting():
    article, comments = text(1, 300), text(3, 200)
    source = _viewed(kept(1, comments, "https://a.example/story", title="Storm hits the coast | Daily"),
                     article + " " + comments)
    other = page("https://b.example/copy", article, Table([source]), title="Vote counted tonight | Wire")
    assert rules.contained(_with_view(other, article)) is None and other.match is None  # another headline
    chrome = page("https://b.example/copy", article, Table([source]), title="Storm hits the coast - Wire")
    rules.contained(_with_view(chrome, article, chrome=0.9))
    assert chrome.match is None  # this page's main text is its chrome: no evidence
    off = page("https://b.example/copy", article, Table([source]), title="Storm hits the coast - Wire",
               visible_containment=0)
    rules.contained(_with_view(off, article))
    assert off.match is None
    short = page("https://b.example/copy", text(1, 30), Table([source]), title="Storm hits the coast - Wire")
    rules.contained(_with_view(short, text(1, 30)))
    assert short.match is None  # under 50 shingles: too little to tell


def test_the_exact_entry_counts_only_for_a_page_with_the_same_words():
    """An exact entry names a kept page by the words' digest: a page whose own digest differs (an
    entry left behind, or a page filed over it on a store without transactions) is no exact match."""
    body = text(1)
    stale = kept(5, text(2), "https://a.example/other")
    stale.extras[Extra.DIGEST] = b"\x00" * 16

    class Stale(Table):
        def exact(self, digest):
            return stale

    p = page("https://b.example/x", body, Stale([]))
    assert rules.find_match(p) is None and p.match is None


def test_a_known_copys_304_stands_only_when_dropped_again_as_the_copy_it_was():
    """A dropped copy's 304 (steps 1-4 from the page it copies): dropped again against that page;
    asked again in full (Skip.REFETCH) when no match stands, when the kept page names it as its
    canonical, or when it is the cleaner URL of the page (unless it named the kept page as its
    canonical when it was downloaded); never filed, never replacing a page."""
    body = text(1)

    def copy_304(url, look, named=False, **settings):
        p = page(url, body, look, **settings)
        p.fp.not_modified, p.fp.copy_reason, p.fp.copy_named = True, "exact", named
        return rules.decide(p)

    look = Table([kept(1, body, "https://a.example/1?utm_source=x")])
    again = copy_304("https://b.example/copy", look)
    assert (again.verdict.action, again.verdict.measure, again.file) == (Action.DROP, "not-modified", False)
    cleaner = copy_304("https://a.example/1", look)
    assert (cleaner.verdict.skipped, cleaner.file, cleaner.remove) == (Skip.REFETCH, False, ())
    named = copy_304("https://a.example/1", look, named=True)
    assert named.verdict.action == Action.DROP and not named.file
    assert copy_304("https://a.example/1", look, prefer_clean_url=False).verdict.action == Action.DROP
    gone = copy_304("https://b.example/copy", Table([]))
    assert (gone.verdict.skipped, gone.file) == (Skip.REFETCH, False)
