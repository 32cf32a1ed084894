"""decide/matching.py: the lookup thresholds, the candidates weighed and the order the scores
rank them in (pure functions: no store, no clock), and the score carried through the verdict to
the drop log and `show`."""

import zlib
from types import SimpleNamespace

import numpy as np

from crawler_dedup import Deduplicator
from crawler_dedup.config import DedupConfig
from crawler_dedup.core.decide.matching import FLOOR_CONTAINMENT, FLOOR_RESEMBLANCE, gathered, supersedes, thresholds_for, weigh
from crawler_dedup.core.decide.measures import NAMES, Side
from crawler_dedup.core.decide.model import load
from crawler_dedup.core.index.records import DocRecord, Extra
from crawler_dedup.core.verdict import Action, Reason, Verdict
from crawler_dedup.droplog import make_record
from crawler_dedup.tools.show import why


def _doc(doc_id, fingerprint=0, title=None, url=None, shingles=100, **extras):
    return DocRecord(url=url or f"https://k/{doc_id}", fingerprint=fingerprint, sketch=np.empty(0, np.uint64),
                     tokens=500, time=1.0, title=title, doc_id=doc_id, shingles=shingles, extras=extras)


def _fp(tokens=500, fingerprint=0, digest=b"d" * 16, shingles=100, text="a b c"):
    return SimpleNamespace(tokens=tokens, fingerprint=fingerprint, extras={}, digest=digest, text=text,
                           sketch=np.empty(0, np.uint64), shingles=shingles, view=None)


def test_the_lookup_thresholds_are_the_settings_and_the_models():
    cfg = DedupConfig.from_settings({"DEDUP_THRESHOLD": 0.6, "DEDUP_CONTAINMENT": 0.9, "DEDUP_SCORE_THRESHOLD": 0.8})
    got = thresholds_for(cfg, load())
    assert (got.threshold, got.containment, got.min_resemblance, got.visible) == (0.6, 0.9, 0.2, 0.8)
    assert got.score == load().threshold  # (the model's own: DEDUP_SCORE_THRESHOLD is applied where it is loaded)
    assert thresholds_for(DedupConfig.from_settings({"DEDUP_CONTAINMENT": 0}), None).containment == 0


def test_only_candidates_over_the_floors_are_weighed_and_the_highest_score_ranks_first():
    """A candidate is weighed when the texts share something (FLOOR_RESEMBLANCE, or
    FLOOR_CONTAINMENT either way); `passed` says whether a plain near-duplicate check with these
    settings would drop it; the weighed come back highest score first."""
    scores = {1: (0.7, 0.7), 2: (0.95, 0.95), 3: (FLOOR_RESEMBLANCE / 2, FLOOR_CONTAINMENT / 2), 4: (0.1, 0.92)}
    docs = [_doc(i) for i in scores]
    model = load()
    got = weigh(Side(_fp(), None, "https://a/x", 3), docs, set(), lambda fp, d: scores[d.doc_id],
                thresholds_for(DedupConfig(), model), model)
    assert {w.doc.doc_id for w in got} == {1, 2, 4}  # 3 shares too little
    assert [w.scored.logit for w in got] == sorted((w.scored.logit for w in got), reverse=True)
    passed = {w.doc.doc_id: w.passed for w in got}
    assert passed == {1: True, 2: True, 4: False}  # 4: contained 0.92 but resemblance under 0.2
    assert all(set(w.measures) == set(NAMES) for w in got)


def test_gathered_lists_each_kept_page_once_the_exact_entry_first():
    a, b, c = _doc(1), _doc(2), _doc(3)
    assert [d.doc_id for d in gathered(b, [a, b], [c, a])] == [2, 1, 3]
    assert [d.doc_id for d in gathered(None, [], [c])] == [3]


def test_same_site_compares_registered_domains():
    from crawler_dedup.core.page.site import same_site

    assert same_site("https://news.example.co.uk/a", "http://www.example.co.uk/b")
    assert not same_site("https://example.co.uk/a", "https://other.co.uk/a")
    assert not same_site("https://a.blogspot.com/x", "https://b.blogspot.com/x")  # a public suffix: two sites
    assert not same_site(None, "https://example.com/") and not same_site("not a url", "not a url")


def test_supersedes_only_the_copy_that_names_this_url():
    copy = _doc(1, url="https://amp.example/story", **{Extra.CANONICAL: b"https://example.com/story?b=2&a=1"})
    assert supersedes("https://example.com/story?a=1&b=2", None, copy)
    assert not supersedes("https://example.com/other", None, copy)
    assert not supersedes("https://example.com/story?a=1&b=2", "https://amp.example/story", copy)  # they name each other
    assert not supersedes("https://example.com/story", None, _doc(2))


def test_the_score_travels_in_the_verdict_the_drop_log_and_show():
    words = "the county board met on tuesday to vote on the plan for new bus routes and a library".split()
    text = " ".join(words * 8)
    with Deduplicator(backend="memory") as d:
        d.check("https://a.example/1", text=text, title="County board votes on bus routes")
        v = d.check("https://b.example/1", text=text + " more", title="County board votes on bus routes")
    assert v.action == Action.DROP and v.weighing is not None and v.weighing.url == "https://a.example/1"
    rec = make_record(v, "response", "s")
    assert rec["score"] >= rec["score_threshold"] and set(rec["features"]) == set(NAMES)
    assert abs(rec["base"] + sum(rec["contributions"].values()) - v.weighing.logit) < 0.05  # they add up
    assert rec["thresholds"]["threshold"] == 0.5 and round(rec["thresholds"]["score"], 4) == rec["score_threshold"]
    line = why(rec, DedupConfig())
    assert f"{rec['score']:.3f}" in line and f"{rec['score_threshold']:.3f}" in line
    rec.update(reason="conceptual", measure="lsi", similarity=0.93, thresholds={**rec["thresholds"], "conceptual": 0.92})
    assert why(rec, DedupConfig()).endswith("DEDUP_CONCEPTUAL_THRESHOLD 0.92")  # not the settings' 0.9


def test_a_verdict_is_immutable_and_changed_by_copies():
    v = Verdict(url="https://a/1")
    try:
        v.action = Action.DROP
    except AttributeError:
        pass
    else:
        raise AssertionError("a verdict field could be assigned")
    dropped = v.but(action=Action.DROP, reason=Reason.NEAR)
    assert v.action == "keep" and dropped.is_duplicate and f"dedup/dropped/{dropped.reason}" == "dedup/dropped/near"
    assert dropped.kept_because("droplog").action == Action.KEEP
    assert dropped == Verdict(url="https://a/1", action=Action.DROP, reason=Reason.NEAR)  # a copy is a whole verdict
    try:
        v.but(acton=Action.DROP)
    except TypeError as exc:
        assert "acton" in str(exc)
    else:
        raise AssertionError("a misspelt field was accepted")


class _Lines:
    """What a site's lines say of a kept page (rules.SiteEvidence), as a second look may read it changed."""

    def __init__(self, shares):
        self.shares = shares

    def compare(self, doc):
        return None

    def boilerplate_shares(self, doc):
        return self.shares

    def site_parts(self, doc):
        return frozenset(), frozenset()

    def prefetch(self, docs):
        pass


def test_a_second_look_measures_the_texts_once_and_the_site_lines_again():
    """A page's measurements against a kept page are made once (by doc id: a record's text never
    changes under it) and its score once while they stay the same; what the site's lines say is
    read again each look, so a second look whose lines moved scores the pair as a fresh look would."""
    from crawler_dedup.core.decide.measures import KeptTexts, measure

    words = [f"w{i % 97}x{i // 97}" for i in range(400)]
    mine = _fp(text=" ".join(words), shingles=390)
    mine.measured, mine.title = {}, None
    doc = _doc(7, url="https://a/y", **{DocRecord.TEXT: zlib.compress(" ".join(words[:380]).encode())})
    kept = KeptTexts().get(doc, 3)
    first = measure(Side(mine, None, "https://a/x", 3), doc, kept, _Lines((0.0, 0.0)))
    assert mine.measured and first["sitelines_page"] == 0.0 and first["resemblance"] > 0.8
    moved = measure(Side(mine, None, "https://a/x", 3), doc, kept, _Lines((0.6, 0.5)))
    fresh = _fp(text=" ".join(words), shingles=390)  # (no memo: every measurement made anew)
    assert moved == measure(Side(fresh, None, "https://a/x", 3), doc, kept, _Lines((0.6, 0.5)))
    assert (moved["sitelines_page"], moved["sitelines_kept"]) == (0.6, 0.5)
    model, thresholds = load(), thresholds_for(DedupConfig.from_settings({}), load())

    def scored(fp, lines):
        return weigh(Side(fp, None, "https://a/x", 3), [doc], set(), lambda f, d: (0.9, 0.9), thresholds, model,
                     lines, KeptTexts())[0].scored

    again = scored(mine, _Lines((0.6, 0.5)))
    assert again == scored(fresh, _Lines((0.6, 0.5))) and again != scored(mine, _Lines((0.0, 0.0)))
