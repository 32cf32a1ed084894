"""decide.py: the rules as pure functions (no store, no clock), and the thresholds they applied
carried through the verdict to the drop log and `show`."""

from types import SimpleNamespace

import numpy as np

from crawler_dedup import Deduplicator
from crawler_dedup.config import DedupConfig
from crawler_dedup.core.decide.matching import (
    SHORT_THRESHOLD,
    SHORT_TOKENS,
    exact_match,
    near_match,
    supersedes,
    thresholds_for,
)
from crawler_dedup.core.index.records import DocRecord, Extra
from crawler_dedup.core.verdict import Action, Guard, Reason, Verdict
from crawler_dedup.droplog import make_record
from crawler_dedup.tools.show import why


def _doc(doc_id, fingerprint=0, title=None, url=None, **extras):
    return DocRecord(url=url or f"https://k/{doc_id}", fingerprint=fingerprint, sketch=np.empty(0, np.uint64),
                     tokens=500, time=1.0, title=title, doc_id=doc_id, extras=extras)


def _fp(tokens=500, fingerprint=0, digest=b"d" * 16):
    return SimpleNamespace(tokens=tokens, fingerprint=fingerprint, extras={}, digest=digest)


def test_thresholds_are_the_settings_raised_only_for_short_texts():
    cfg = DedupConfig.from_settings({"DEDUP_THRESHOLD": 0.6, "DEDUP_CONTAINMENT": 0.9})
    long = thresholds_for(cfg, SHORT_TOKENS)
    assert (long.threshold, long.containment, long.min_resemblance, long.short) == (0.6, 0.9, 0.2, False)
    short = thresholds_for(cfg, SHORT_TOKENS - 1)
    assert (short.threshold, short.containment, short.min_resemblance, short.short) == (SHORT_THRESHOLD, 0.95, 0.6, True)
    off = thresholds_for(DedupConfig.from_settings({"DEDUP_CONTAINMENT": 0}), 10)
    assert off.containment == 0  # containment off stays off
    strict = thresholds_for(DedupConfig.from_settings({"DEDUP_THRESHOLD": 0.95}), 10)
    assert strict.threshold == 0.95  # a stricter setting is never lowered


def test_near_match_ranks_by_score_then_distance_then_age_and_says_when_a_guard_rejected():
    cfg = DedupConfig()
    scores = {1: (0.7, 0.7), 2: (0.95, 0.95), 3: (0.95, 0.95), 4: (0.4, 0.92), 5: (0.1, 0.99)}
    docs = [_doc(1), _doc(2, fingerprint=0b111), _doc(3, fingerprint=0b1), _doc(4), _doc(5)]
    match, guarded = near_match(_fp(), None, docs, thresholds_for(cfg, 500), lambda fp, d: scores[d.doc_id], "resemblance")
    assert (match.doc.doc_id, match.reason, match.measure, match.distance, guarded) == (3, Reason.NEAR, "resemblance", 1, None)
    only_contained = near_match(_fp(), None, [docs[3], docs[4]], thresholds_for(cfg, 500),
                                lambda fp, d: scores[d.doc_id], "resemblance")[0]
    assert (only_contained.doc.doc_id, only_contained.measure) == (4, "containment")  # 5: resemblance under 0.2
    titled = [_doc(2, title="Budget vote delayed again"), _doc(3, title="Budget vote delayed again")]
    match, guarded = near_match(_fp(tokens=120), "Storm closes schools", titled, thresholds_for(cfg, 120),
                                lambda fp, d: (0.7, 0.7), "resemblance", url="https://www.k/story")
    assert match is None and guarded == Guard.TITLE  # one site, different titles: two pages (a block taken for both texts)
    match, guarded = near_match(_fp(tokens=120), "Storm closes schools", titled, thresholds_for(cfg, 120),
                                lambda fp, d: (0.7, 0.7), "resemblance", url="https://other.example/story")
    assert match.doc.doc_id == 2 and guarded is None  # another site's title over a longer text: a syndicated copy
    match, guarded = near_match(_fp(tokens=80), "Storm closes schools", titled, thresholds_for(cfg, 80),
                                lambda fp, d: (0.9, 0.9), "resemblance", url="https://other.example/story")
    assert match is None and guarded == Guard.TITLE  # another site, but a short text: a promo or notice block


def test_same_site_compares_registered_domains():
    from crawler_dedup.core.decide.matching import same_site

    assert same_site("https://news.example.co.uk/a", "http://www.example.co.uk/b")
    assert not same_site("https://example.co.uk/a", "https://other.co.uk/a")
    assert not same_site("https://a.blogspot.com/x", "https://b.blogspot.com/x")  # a public suffix: two sites
    assert not same_site(None, "https://example.com/") and not same_site("not a url", "not a url")


def test_exact_match_and_its_title_guard():
    doc = _doc(7, fingerprint=5, title="Storm closes schools", **{Extra.DIGEST: b"d" * 16})
    match, guarded = exact_match(_fp(tokens=50, fingerprint=4), "Storm closes schools", doc)
    assert (match.reason, match.similarity, match.distance, guarded) == (Reason.EXACT, 1.0, 1, None)
    assert exact_match(_fp(tokens=50), "Local team wins the final", doc) == (None, Guard.TITLE)
    assert exact_match(_fp(tokens=50), "x", None) == (None, None)
    # an entry that names a page with other words (left behind, or filed over) is no exact match
    assert exact_match(_fp(tokens=50, digest=b"e" * 16), "Storm closes schools", doc) == (None, None)


def test_supersedes_only_the_copy_that_names_this_url():
    copy = _doc(1, url="https://amp.example/story", **{Extra.CANONICAL: b"https://example.com/story?b=2&a=1"})
    assert supersedes("https://example.com/story?a=1&b=2", None, copy)
    assert not supersedes("https://example.com/other", None, copy)
    assert not supersedes("https://example.com/story?a=1&b=2", "https://amp.example/story", copy)  # they name each other
    assert not supersedes("https://example.com/story", None, _doc(2))


def test_the_thresholds_applied_travel_in_the_verdict_the_drop_log_and_show():
    words = "the county board met on tuesday to vote on the plan for new bus routes and a library".split()
    text = " ".join(words * 4)  # 64 words: a short text
    with Deduplicator(backend="memory") as d:
        d.check("https://a/1", text=text)
        v = d.check("https://b/1", text=text + " more")
    assert v.action == Action.DROP and v.thresholds.short and v.thresholds.threshold == SHORT_THRESHOLD
    rec = make_record(v, "response", "s")
    assert rec["thresholds"] == {"threshold": SHORT_THRESHOLD, "containment": 0.95, "min_resemblance": 0.6, "short": True,
                                 "conceptual": 0.0}
    rec.update(reason="near", measure="containment", similarity=0.97)
    line = why(rec, DedupConfig())  # the crawl's thresholds, not the settings given to show
    assert "DEDUP_CONTAINMENT 0.95" in line and "DEDUP_MIN_RESEMBLANCE 0.6" in line and "short text" in line
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
