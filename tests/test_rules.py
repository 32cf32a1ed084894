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
from crawler_dedup.core.decide.model import for_settings
from crawler_dedup.core.verdict import Action, Reason, Revisit, Skip, Stage, Verdict
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

    def __init__(self, docs=(), killed=(), template=None):
        self.docs, self.killed, self.template = list(docs), set(killed), template

    def by_url(self, url):
        return next((d for d in reversed(self.docs) if d.url == url), None)

    def run_killed(self, run):
        return run in self.killed

    def exact(self, digest):
        return next((d for d in self.docs if d.extras.get(Extra.DIGEST) == digest), None)

    def candidates(self, fp):
        return list(self.docs)

    def template_share(self, text, words):
        return self.template

    def headed(self, title):
        return list(self.docs)


def page(url: str, body: str, look: Table | None = None, *, stage: Stage = Stage.RESPONSE, run: int = 2,
         title: str | None = None, now: float = NOW, never_drop: bool = False, canonical: str | None = None,
         **settings) -> rules.Page:
    config = DedupConfig.from_settings({}, **settings)
    verifier = make_verifier(config.verifier)
    look = look or Table()
    judging = rules.Judging(config, run, lambda fp, doc: verifier.score(fp, doc, config), verifier.name, for_settings(config))
    verdict = Verdict(url=url, title=title, never_drop=never_drop, canonical=canonical)
    return rules.Page(verdict, fp_of(body, config), stage, now, look, judging,
                      prior=look.by_url(url) if url else None)


def test_the_chain_is_listed_once_in_order_and_each_rule_says_what_it_decides():
    names = [name for name, _ in rules.describe()]
    assert names == ["item_of_kept_response", "out_of_window", "revisit", "find_match", "known_copy", "canonical",
                     "clean_url", "never_drop", "revisit_copy", "item_of_matched_response", "duplicate", "keep"]
    assert all(len(what) > 30 for _, what in rules.describe())


def test_decide_names_the_rule_that_decided(plain_model):
    body = text(1)
    look = Table([kept(1, body, "https://a.example/1")])
    decision = rules.decide(page("https://b.example/copy", body, look, model=plain_model))
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


def test_find_match_weighs_the_candidates_and_the_score_decides():
    body = text(1)
    look = Table([kept(1, body, "https://a.example/1", title="Council approves the budget")])
    p = page("https://b.example/copy", body, look, title="Council approves the budget")
    assert rules.find_match(p) is None and p.match is not None and p.match.reason == Reason.EXACT
    w = p.match.weighing
    assert w is not None and w.score >= w.threshold and w.measures["exact"] == 1.0 and w.contributions
    assert p.verdict.weighing is w and p.verdict.thresholds is not None
    edited = body.replace("budget", "plan", 2)
    p = page("https://b.example/copy", edited, look, title="Council approves the budget")
    rules.find_match(p)
    assert p.match is not None and p.match.reason == Reason.NEAR
    # no candidate shares anything: nothing weighed, nothing said
    p = page("https://b.example/other", text(2, 150).replace("council", "xylophone"), Table([]))
    rules.find_match(p)
    assert p.match is None and p.verdict.weighing is None


def test_a_page_kept_apart_from_a_candidate_over_the_lookup_thresholds_says_which():
    """The score keeps a pair apart that a plain near-duplicate check drops: the verdict names the
    candidate and its score (the drop log's `kept` line)."""
    body = text(1)
    look = Table([kept(1, body, "https://a.example/1", title="Council approves the budget")])
    edited = " ".join(w if i % 9 else "festival" for i, w in enumerate(body.split()))  # a ninth of the words changed
    p = page("https://a.example/2", edited, look, title="Harbour festival draws crowds", score_threshold=0.999)
    rules.find_match(p)
    w = p.verdict.weighing
    assert p.match is None and w is not None and w.url == "https://a.example/1" and w.score < 0.999


def test_find_match_never_matches_the_urls_own_entry_or_a_page_out_of_the_window():
    body = text(1)
    own = Table([kept(1, body, "https://a.example/1")])
    p = page("https://a.example/1", body, own)
    p.revisit = True
    rules.find_match(p)
    assert p.match is None
    title = "Council approves the budget"
    old = Table([kept(1, body, "https://a.example/1", title=title, time=NOW - 500)])
    p = page("https://b.example/copy", body, old, title=title, window=100)
    rules.find_match(p)
    assert p.match is None
    p = page("https://b.example/copy", body, old, title=title, window=1000)  # (in the window: the copy it is)
    rules.find_match(p)
    assert p.match is not None and p.match.doc.doc_id == 1


def _matched(p: rules.Page, doc: DocRecord, reason: Reason = Reason.NEAR) -> rules.Page:
    p.match = Match(doc, reason, 0, 0.9, "resemblance")
    return p


def test_the_sites_template_lines_count_as_its_boilerplate_with_dedup_boilerplate():
    """DEDUP_BOILERPLATE: the share of a page's text in lines kept pages showed outside their own
    text is measured with its site's lines (`sitelines_page`), not a rule of its own."""
    doc = kept(1, text(1), "https://a.example/1")
    seen = []
    for on in (True, False):
        p = page("https://b.example/2", text(1), Table([doc], template=0.9), boilerplate=on)
        p.judging.observe = lambda page, weighed: seen.append(weighed[0].measures["sitelines_page"])
        rules.find_match(p)
    assert seen == [0.9, None]


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


def test_one_main_text_inside_the_other_pages_visible_text_is_measured_either_way():
    article, related, comments = "The storm hits the coast. " + text(1, 300), text(2, 200), text(3, 200)
    # the kept source's extraction took its comments; this copy's main text is the article, which
    # the source showed
    source = _viewed(kept(1, comments, "https://a.example/story", title="Storm hits the coast | Daily"),
                     article + " " + comments)
    seen = []
    p = _with_view(page("https://b.example/copy", article, Table([source]), title="Storm hits the coast - Wire"),
                   article)
    p.judging.observe = lambda page, weighed: seen.extend(weighed)
    rules.find_match(p)
    assert len(seen) == 1 and seen[0].measures["shown_in_kept"] >= 0.8 and seen[0].measures["resemblance"] < 0.05
    # the other way: this copy's extraction took its template's related list; it shows the kept article
    source = _viewed(kept(2, article, "https://a.example/story", title="Storm hits the coast | Daily"), article)
    seen.clear()
    p = _with_view(page("https://b.example/copy", related, Table([source]), title="Storm hits the coast - Wire"),
                   related + " " + article)
    p.judging.observe = lambda page, weighed: seen.extend(weighed)
    rules.find_match(p)
    assert len(seen) == 1 and seen[0].measures["shows_kept"] >= 0.8


def test_a_kept_page_under_the_headline_is_weighed_only_when_one_text_is_in_the_others_page():
    """A candidate that shares no words is weighed when it is under the page's headline and one
    main text is in the other page's visible text (DEDUP_VISIBLE_CONTAINMENT); not under another
    headline, not under the setting's share, and not with the setting at 0."""
    article, comments = text(1, 300), text(3, 200)
    source = _viewed(kept(1, comments, "https://a.example/story", title="Storm hits the coast | Daily"),
                     article + " " + comments)

    def weighed(title, shown, **settings):
        seen: list = []
        p = _with_view(page("https://b.example/copy", article, Table([source]), title=title, **settings), shown)
        p.judging.observe = lambda page, got: seen.extend(got)
        rules.find_match(p)
        return seen

    assert len(weighed("Storm hits the coast - Wire", article)) == 1
    assert weighed("Vote counted tonight | Wire", article) == []  # another headline
    assert weighed("Storm hits the coast - Wire", article, visible_containment=0) == []


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


def test_a_known_copys_304_stands_only_when_dropped_again_as_the_copy_it_was(plain_model):
    """A dropped copy's 304 (steps 1-4 from the page it copies): dropped again against that page;
    asked again in full (Skip.REFETCH) when no match stands, when the kept page names it as its
    canonical, or when it is the cleaner URL of the page (unless it named the kept page as its
    canonical when it was downloaded); never filed, never replacing a page."""
    body = text(1)

    def copy_304(url, look, named=False, **settings):
        p = page(url, body, look, model=plain_model, **settings)
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
