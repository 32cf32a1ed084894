"""A user's labelled pairs (`crawler-dedup eval --pairs FILE`, `--fit FILE`): what these settings
decide for each pair, the pair's measurements and score, every verifier's score, and
precision/recall over a sweep of thresholds."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Sequence

from ..core.page.extract import extract
from ..core.page.fingerprint import Fingerprinted
from ..core.page.tokens import tokenize


@dataclass
class PairScores:
    duplicate: bool
    resemblance: float
    containment: float
    qgram: float
    swlr: float
    distance: int
    exact: bool


def read_pairs(path: str) -> list[dict]:
    """JSONL, one pair a line: {"a": text, "b": text, "duplicate": true|false}; "a_html"/"b_html"
    instead of (or beside) "a"/"b" for pages to extract first (the markup also gives each page's
    view: what it shows beside its main text); optional "a_title"/"b_title" and "a_url"/"b_url"
    (the same site or not; pairs are grouped by b's host when the fit is cross-validated)."""
    from ..droplog import jsonl_lines

    pairs = []
    for number, pair, _ in jsonl_lines(path):
        if isinstance(pair, json.JSONDecodeError):
            raise ValueError(f"{path}:{number}: not JSON ({pair})")
        if not isinstance(pair, dict) or "duplicate" not in pair or not (
                ("a" in pair or "a_html" in pair) and ("b" in pair or "b_html" in pair)):
            raise ValueError(f'{path}:{number}: needs "a" (or "a_html"), "b" (or "b_html") and "duplicate"')
        if not isinstance(pair["duplicate"], bool):
            raise ValueError(f'{path}:{number}: "duplicate" must be true or false, not {pair["duplicate"]!r}')
        pairs.append({**pair, "_line": number})
    return pairs


def pair_texts(pairs: list[dict], progress=None) -> list[tuple]:
    """((text, title, html), (text, title, html)) per pair, extracting "a_html"/"b_html" once
    (a text given is used as it is, the markup then only for the page's view)."""
    from ..core.page.extract import page_title

    out = []
    for i, pair in enumerate(pairs, 1):
        sides: list[tuple] = []
        for side in ("a", "b"):
            title, html = pair.get(f"{side}_title"), pair.get(f"{side}_html")
            raw = html.encode("utf-8") if isinstance(html, str) else None
            if pair.get(side) is not None:
                sides.append((pair[side], title or (page_title(raw) if raw else None), raw))
            elif html is not None:
                got = extract(html)
                sides.append((got.text if got else None, title or page_title(html), raw))
            else:
                sides.append((None, title, None))
        out.append(tuple(sides))
        if progress:
            progress(i, len(pairs))
    return out


def _url(pair: dict | None, side: str) -> str:
    url = pair.get(f"{side}_url") if pair else None
    return url if isinstance(url, str) and url else f"pair:{side}"


def decide_pairs(texts: list[tuple], settings: dict, pairs: list[dict] | None = None,
                 model=None) -> list[tuple[bool | None, str | None]]:
    """What crawler-dedup with `settings` does with b after keeping a, for each pair:
    (dropped?, or None when a side was skipped; the skip reason, or what decided)."""
    return [(said, why) for said, why, _ in weigh_pairs(texts, settings, pairs, model)]


def weigh_pairs(texts: list[tuple], settings: dict, pairs: list[dict] | None = None,
                model=None) -> list[tuple[bool | None, str | None, dict | None]]:
    """decide_pairs, with the measurements of b against a when the pair was weighed (passed the
    lookup floors: else no score can drop it, and None). `model`: a score model to decide with
    instead of DEDUP_MODEL's."""
    from ..config import DedupConfig
    from ..deduplicator import Deduplicator
    from ..stores import MemoryStore

    config = DedupConfig.from_settings(settings)
    out: list[tuple[bool | None, str | None, dict | None]] = []
    for k, ((a, a_title, a_html), (b, b_title, b_html)) in enumerate(texts):
        pair = pairs[k] if pairs is not None else None
        if not isinstance(a, str) or not isinstance(b, str):
            out.append((None, "no_text", None))
            continue
        d = Deduplicator(config, store=MemoryStore()).open()
        if model is not None:
            d.model = model
        seen: list = []
        d.observe = lambda page, weighed, seen=seen: seen.extend(w for w in weighed if w.doc.url == _url(pair, "a"))
        first = d.check(_url(pair, "a"), html=a_html, text=a, title=a_title)
        if first.skipped:
            out.append((None, first.skipped, None))
            continue
        second = d.check(_url(pair, "b"), html=b_html, text=b, title=b_title)
        if second.skipped:
            out.append((None, second.skipped, None))
            continue
        dropped = second.would_drop
        scored = seen[0].scored if seen else None
        detail = (f"dropped: {second.reason}, score {scored.probability:.3f}" if dropped and scored is not None else
                  f"dropped: {second.reason}, {second.measure} {second.similarity}" if dropped else
                  f"kept (score {scored.probability:.3f})" if scored is not None else
                  "kept (they share too little to be weighed)")
        out.append((dropped, detail, dict(seen[0].measures) if seen else None))
    return out


def pr(decisions: list[bool | None], labels: list[bool]) -> tuple[float | None, float | None, float | None, int]:
    """(precision, recall, F1, pairs decided) of decisions against labels. A pair with a skipped
    side (None) counts as kept, as a crawl keeps such a page: a skipped duplicate is a miss.
    Precision is None when nothing was dropped, recall None when no pair is a duplicate."""
    tp = fp = fn = used = 0
    for said, truth in zip(decisions, labels):
        used += said is not None
        tp += bool(said) and truth
        fp += bool(said) and not truth
        fn += (not said) and truth
    p = tp / (tp + fp) if tp + fp else None
    r = tp / (tp + fn) if tp + fn else None
    f = None if p is None or r is None else (2 * p * r / (p + r) if p + r else 0.0)
    return p, r, f, used


def score_pairs(pairs: list[dict], config=None, progress=None) -> list[PairScores | None]:
    """Every verifier's score for each pair (None where a side has no usable text)."""
    import numpy as np

    from ..config import DedupConfig
    from ..deduplicator import Deduplicator
    from ..core.page.features import shingles as make_shingles
    from ..core.index.records import DocRecord
    from ..core.decide.verify import VERIFIERS
    from ..core.decide.verify import swlr as swlr_score

    d = Deduplicator(config or DedupConfig())
    out: list[PairScores | None] = []
    for i, pair in enumerate(pairs, 1):
        sides: list[Fingerprinted | None] = []
        for side in ("a", "b"):
            text = pair.get(side)
            if text is None:
                got = extract(pair[f"{side}_html"])
                text = got.text if got else None
            fp = d.fingerprint(text) if isinstance(text, str) else None
            if isinstance(text, str) and isinstance(fp, Fingerprinted):
                tokens = tokenize(text)
                feats = make_shingles(tokens, d.config.shingle)
                fp.extras = {**VERIFIERS["qgram"].keep(tokens, feats), **VERIFIERS["swlr"].keep(tokens, feats)}
                sides.append(fp)
            else:
                sides.append(None)
        a, b = sides
        if a is None or b is None:
            out.append(None)
        else:
            doc = DocRecord(url="b", fingerprint=b.fingerprint, sketch=b.sketch, tokens=b.tokens, time=0,
                            shingles=b.shingles, extras=b.extras)
            j, c = VERIFIERS["resemblance"].score(a, doc, d.config)
            out.append(PairScores(
                duplicate=bool(pair["duplicate"]), resemblance=j, containment=c,
                qgram=VERIFIERS["qgram"].score(a, doc, d.config)[0],
                swlr=swlr_score(*(np.frombuffer(x.extras["seq"], ">u4").astype(np.uint64) for x in (a, b))),
                distance=(a.fingerprint ^ b.fingerprint).bit_count(), exact=a.digest == b.digest))
        if progress:
            progress(i, len(pairs))
    return out


def sweep(scored: "Sequence[PairScores | None]", measure: str,
          thresholds=None) -> list[tuple[float, float | None, float | None, float | None]]:
    """(threshold, precision, recall, F1) of "score >= threshold means duplicate"; precision None
    where nothing is called a duplicate, recall None where no pair is one (not a perfect 1.0)."""
    thresholds = thresholds or [round(0.05 * i, 2) for i in range(2, 20)]
    rows = []
    for t in thresholds:
        tp = fp = fn = 0
        for s in scored:
            if s is None:
                continue
            said = s.exact or getattr(s, measure) >= t
            tp += said and s.duplicate
            fp += said and not s.duplicate
            fn += (not said) and s.duplicate
        p = tp / (tp + fp) if tp + fp else None
        r = tp / (tp + fn) if tp + fn else None
        f = None if p is None or r is None else (2 * p * r / (p + r) if p + r else 0.0)
        rows.append((t, p, r, f))
    return rows
