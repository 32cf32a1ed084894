"""Steps 6-7 for one page's candidates: which kept pages are worth weighing (the lookup
thresholds), their measurements (measures.py) and their score (model.py); the match that stands.
Pure functions: a page's fingerprint, the kept pages found for it and the settings in; no store,
no clock, no state, so `show` and the crawl decide alike.

A candidate is weighed when the texts share something: the same words, a resemblance or a
containment over the floors below, or a kept page under the page's headline whose visible text
holds the page's main text (or the other way). Everything else about the pair is the score's to
weigh. The lookup thresholds decide nothing: a weighed candidate is a copy only when its score is
at or over the model's threshold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from ..index.records import DocRecord, Extra, names_as_canonical
from ..page.plugins import cosine
from ..page.site import canonical_url
from ..page.title import headline_coverage, titles
from ..page.tokens import tokenize
from ..page.visible import PageView, main_shingles, thin_main, thin_visible
from ..verdict import Reason, Thresholds, Weighing
from .churn import churn_digest, same_but_churn
from .measures import KeptTexts, Measures, Side, measure
from .model import Model, Scored

Scorer = Callable[[object, DocRecord], "tuple[float, float]"]  # (score, containment) of a page and a kept page


@dataclass(frozen=True)
class Match:
    """A kept page this page duplicates, and how."""

    doc: DocRecord
    reason: Reason
    distance: int
    similarity: float
    measure: str  # exact | churn | the verifier's name | containment | visible | content | lsi
    weighing: Weighing | None = None  # the pair's score (None: a revisit's sameness, an LSI neighbour)


def thresholds_for(config, model: Model | None = None) -> Thresholds:
    """The lookup thresholds of these settings, and the model's."""
    conceptual = config.conceptual_threshold if config.conceptual != "off" else 0.0
    return Thresholds(config.threshold, config.containment, config.min_resemblance, config.visible_containment,
                      conceptual, model.threshold if model is not None else 0.0)


FLOOR_RESEMBLANCE = 0.05  # the least resemblance a candidate needs to be weighed,
FLOOR_CONTAINMENT = 0.3  # or the least containment either way (a short text inside a long one)
HEADED_TITLE = 0.8  # a kept page under the page's headline (a title part this alike) is weighed when
# one page's main text is in the other's visible text (DEDUP_VISIBLE_CONTAINMENT)
MAX_WEIGHED = 8  # candidates measured in full per page at most, the strongest first

@dataclass(frozen=True)
class Weighed:
    """A candidate weighed: its measurements and score, and whether it passed the verifier's own
    thresholds (DEDUP_THRESHOLD, DEDUP_CONTAINMENT: what a plain near-duplicate check drops)."""

    doc: DocRecord
    measures: Measures
    scored: Scored
    passed: bool
    verified: float  # the verifier's score (DEDUP_VERIFIER)

    @property
    def reason(self) -> Reason:
        return Reason.EXACT if self.measures.get("exact") else Reason.NEAR

    def evidence(self, verifier: str) -> tuple[float, str]:
        """(similarity, measure) for the drop log: the verifier's score, or the measurement that
        says most of the copy when that is not the text's resemblance (a containment, a text
        found in the other page's visible text, what is left without the sites' boilerplate)."""
        m = self.measures
        if m.get("exact"):
            return 1.0, "exact"
        best, how = self.verified, verifier
        for name, label in (("contained", "containment"), ("own_resemblance", "content"), ("own_contained", "content"),
                            ("shown_in_kept", "visible"), ("shows_kept", "visible")):
            value = m.get(name)
            if value is not None and value > best + 0.1:
                best, how = float(value), label
        return best, how


def gathered(exact: DocRecord | None, candidates: Iterable[DocRecord], headed: Iterable[DocRecord]) -> list[DocRecord]:
    """The exact entry, the near candidates and the kept pages under the headline, each once."""
    seen: set = set()
    out = []
    for doc in (*([exact] if exact is not None else []), *candidates, *headed):
        key = doc.doc_id if doc.doc_id is not None else id(doc)
        if key not in seen:
            seen.add(key)
            out.append(doc)
    return out


def weigh(page: Side, docs: list[DocRecord], headed_ids: set, score: Scorer, thresholds: Thresholds,
          model: Model | None, site=None, kept: KeptTexts | None = None) -> list[Weighed]:
    """The candidates over the floors (FLOOR_RESEMBLANCE, FLOOR_CONTAINMENT, or under the same
    headline with one main text in the other page's view), measured and scored, highest score
    first; `passed`: over the lookup thresholds too (what a plain near-duplicate check drops)."""
    fp = page.fp
    picked: list[tuple[float, DocRecord, float, bool]] = []
    for doc in docs:
        j, c = score(fp, doc)
        inter = c * max(fp.shingles, 1)  # type: ignore[attr-defined]
        reverse = min(1.0, inter / max(doc.shingles, 1))
        same = doc.extras.get(Extra.DIGEST) == fp.digest  # type: ignore[attr-defined]
        passed = same or j >= thresholds.threshold or (
            bool(thresholds.containment) and c >= thresholds.containment and j >= thresholds.min_resemblance)
        strength = max(j, c, reverse)
        if same or j >= FLOOR_RESEMBLANCE or max(c, reverse) >= FLOOR_CONTAINMENT:
            picked.append((2.0 if same else strength, doc, j, passed))
        elif doc.doc_id in headed_ids and page.title and doc.title:
            if (titles(page.title, doc.title)[0] or 0.0) >= HEADED_TITLE:
                picked.append((strength, doc, j, passed))
    picked.sort(key=lambda p: -p[0])
    kept = kept if kept is not None else KeptTexts()
    if site is not None and picked:
        site.prefetch([doc for _, doc, _, _ in picked[:MAX_WEIGHED]])
    out = []
    for _, doc, j, passed in picked[:MAX_WEIGHED]:
        text = kept.get(doc, page.w)
        m = measure(page, doc, text, site)
        if doc.doc_id in headed_ids and not passed and j < FLOOR_RESEMBLANCE:
            # weighed for its headline only: one page shows the other's main text, or it is no candidate
            shown = max(m.get("shown_in_kept") or 0.0, m.get("shows_kept") or 0.0)
            if shown < thresholds.visible:
                continue
        scored = _scored(model, fp, doc, m)
        out.append(Weighed(doc, m, scored, passed, j))
    out.sort(key=lambda w: (-w.scored.logit, w.doc.doc_id or 0))
    return out


def _scored(model: Model | None, fp, doc: DocRecord, m: Measures) -> Scored:
    """The model's score of the measurements, once a page and kept page while they stay the same
    (a second look, claims.py, scores again only a pair whose site lines moved)."""
    if model is None:
        return Scored(0.0, 0.0, (), False)
    memo = getattr(fp, "measured", None)
    if memo is None or doc.doc_id is None:
        return model.score(m)
    key, values = ("scored", id(model), doc.doc_id), tuple(m.values())
    hit = memo.get(key)
    if hit is not None and hit[0] == values:
        return hit[1]
    scored = model.score(m)
    memo[key] = (values, scored)
    return scored


def weighing(w: "Weighed | None", judging, fp) -> Weighing | None:
    """What a verdict says of a weighed pair (the drop log's score, features and contributions)."""
    if w is None:
        return None
    model = judging.model
    similarity, how = w.evidence(judging.measure)
    return Weighing(w.doc.url, w.doc.title, w.doc.fingerprint, w.doc.doc_id, w.scored.probability, w.scored.logit,
                    model.origin if model is not None else 0.0,
                    model.threshold if model is not None else 0.0,
                    dict(w.measures), w.scored.contributions, round(similarity, 4), how)


def thin_view(text: str, title: str | None, view: PageView) -> dict[str, bytes]:
    """What a kept page files for the visible measurements when its text is not stored: thin
    samples of its visible and main texts, its main text's size and how much of its headline it names."""
    tokens = tokenize(text or "")
    main = main_shingles(tokens)
    coverage = headline_coverage(title, frozenset(tokens))
    said = 255 if coverage is None else min(100, round(coverage * 100))
    return {Extra.VISIBLE_THIN: thin_visible(view.visible), Extra.MAIN_THIN: thin_main(main),
            Extra.MAIN_SHINGLES: min(main.size, 65535).to_bytes(2, "big"), Extra.HEADLINE: bytes([said])}


def conceptual_match(fp, candidates: Iterable[DocRecord], threshold: float) -> Match | None:
    """The textually related candidate closest in LSI space, if within the threshold (seed 000)."""
    mine = fp.extras.get("lsi")
    if mine is None:
        return None
    best, best_cos = None, threshold
    for doc in candidates:
        if "lsi" in doc.extras:
            cos = cosine(mine, doc.extras["lsi"])
            if cos >= best_cos:
                best, best_cos = doc, cos
    return None if best is None else Match(best, Reason.CONCEPTUAL, _distance(fp, best), best_cos, "lsi")


def _distance(fp, doc: DocRecord) -> int:
    return (doc.fingerprint ^ fp.fingerprint).bit_count()


def unchanged(fp, prior: DocRecord, score: Scorer) -> Match | None:
    """A revisit whose text is the one kept for its URL: the same words (measure `exact`), or the
    same but for churn (dates, times, counters: churn.py; measure `churn`)."""
    same_words = prior.extras.get(Extra.DIGEST) == fp.digest
    if not same_words:
        old = prior.text
        if old is not None:
            churn_only = same_but_churn(old, fp.text)
        else:  # no stored text: the digest with churn masked, kept when it differed
            churn_only = prior.extras.get(Extra.CHURN, prior.extras.get(Extra.DIGEST)) == churn_digest(fp.text)
        if not churn_only:
            return None
    similarity = 1.0 if same_words else round(score(fp, prior)[0], 4)
    return Match(prior, Reason.UNCHANGED, _distance(fp, prior), similarity, "exact" if same_words else "churn")


def supersedes(url: str, canonical: str | None, kept: DocRecord) -> bool:
    """The canonical rule: the kept page names `url` as its rel=canonical (or og:url), so the
    page at `url` is the one to keep, unless the two name each other (the first kept stays)."""
    named = kept.extras.get(Extra.CANONICAL)
    if not named or not names_as_canonical(named, url):
        return False
    return not (canonical and canonical_url(canonical) == canonical_url(kept.url))
