"""A user's labelled pairs (`crawler-dedup eval --pairs FILE`): what these settings decide for each
pair, every verifier's score, and precision/recall over a sweep of thresholds."""

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
    instead of "a"/"b" for pages to extract first."""
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
    """((text, title), (text, title)) per pair, extracting "a_html"/"b_html" once."""
    from ..core.page.extract import page_title

    out = []
    for i, pair in enumerate(pairs, 1):
        sides: list[tuple] = []
        for side in ("a", "b"):
            title = pair.get(f"{side}_title")
            if pair.get(side) is not None:
                sides.append((pair[side], title))
            else:
                got = extract(pair[f"{side}_html"])
                sides.append((got.text if got else None, title or page_title(pair[f"{side}_html"])))
        out.append(tuple(sides))
        if progress:
            progress(i, len(pairs))
    return out


def decide_pairs(texts: list[tuple], settings: dict) -> list[tuple[bool | None, str | None]]:
    """What crawler-dedup with `settings` does with b after keeping a, for each pair:
    (dropped?, or None when a side was skipped; the skip reason, or what decided)."""
    from ..config import DedupConfig
    from ..deduplicator import Deduplicator
    from ..stores import MemoryStore

    config = DedupConfig.from_settings(settings)
    out: list[tuple[bool | None, str | None]] = []
    for (a, a_title), (b, b_title) in texts:
        if not isinstance(a, str) or not isinstance(b, str):
            out.append((None, "no_text"))
            continue
        d = Deduplicator(config, store=MemoryStore()).open()
        first = d.check("pair:a", text=a, title=a_title)
        if first.skipped:
            out.append((None, first.skipped))
            continue
        second = d.check("pair:b", text=b, title=b_title)
        if second.skipped:
            out.append((None, second.skipped))
            continue
        dropped = second.would_drop
        detail = (f"dropped: {second.reason}, {second.measure} {second.similarity}" if dropped
                  else "kept" + (f" (the {second.guard} guard)" if second.guard else ""))
        out.append((dropped, detail))
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
