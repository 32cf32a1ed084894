"""Pass 2, decide: pages in the policy's order, best first, through the Deduplicator over
OUT/index, so the best page of a group comes first and is kept and the groups do not depend on
the input's order. Each batch's decisions go into the state file after the index's commit; the
one batch a kill can leave half done is decided again (its kept pages are known to the index as
filed by a killed run).

`decide` (steps 5-8 for pages extracted already) is also `index add`'s (tools/seed.py).
"""

from __future__ import annotations

import json
import pickle
import zlib

from ...config import DedupConfig
from ...core.decide.policy import Page, rank
from ...core.verdict import Action, Failure, Reason, Skip, Stage, Step, Verdict
from ...deduplicator import Deduplicator
from ...droplog import make_record, superseded_record
from ..sources import PAGE
from .options import Progress, ScanError
from .state import State

BATCH = 64  # pages a decision transaction


def decide(dedup: Deduplicator, items: list[tuple[str, tuple, dict]]) -> list[Verdict]:
    """Steps 5-8 for pages extracted already, in order, in one transaction: `items` holds (url,
    (kind, value, title, ...) as extraction gave it, Deduplicator.prepare's other arguments)."""
    verdicts: list[Verdict | None] = [None] * len(items)
    pending, where = [], []
    for n, (url, result, page) in enumerate(items):
        kind, value, title = result[:3]
        if kind == Step.FINGERPRINT:
            verdict, p = dedup.prepare(url, fingerprinted=value, title=title, stage=Stage.RESPONSE, **page)
        elif kind == Step.TEXT:
            verdict, p = dedup.prepare(url, text=value, title=title, stage=Stage.RESPONSE, **page)
        elif kind == Step.SKIPPED:
            verdict, p = Verdict(url=url, skipped=Skip(value)), None
        else:  # kept, counted, logged once
            verdict, p = dedup.failed(Verdict(url=url), Failure.EXTRACT, value), None
        if p is None:
            verdicts[n] = verdict
        else:
            pending.append(p)
            where.append(n)
    for n, verdict in zip(where, dedup.decide_many(pending)):
        verdicts[n] = verdict
    return verdicts  # type: ignore[return-value]


def decide_pass(state: State, config: DedupConfig, keys: tuple[str, ...], progress: Progress,
                batch_size: int = BATCH) -> None:
    """`batch_size`: pages a transaction (Scan passes the package's BATCH, read when it runs)."""
    db = state.db
    if state.get("decided"):
        return
    pages = [Page(seq, url, words or 0, t, score, canonical, no) for seq, url, words, t, score, canonical, no in db.execute(
        "SELECT e.seq, e.url, coalesce(s.words, e.words), e.time, e.score, coalesce(e.canonical, s.canonical), "
        "e.file_no FROM entries e LEFT JOIN entries s ON s.seq = e.same_as WHERE e.kind=?", (PAGE,))]
    jsonl = {no for no, fmt in db.execute("SELECT file_no, format FROM files") if fmt == "jsonl"}
    order = rank(pages, keys)
    step = db.execute("SELECT count(*) FROM decisions").fetchone()[0]
    again = set(state.get("pending") or ())  # the batch a kill may have left half done
    kept_url: dict[str, int] = {}  # URL -> the seq of the page kept under it last
    for url, seq in db.execute("SELECT e.url, d.seq FROM decisions d JOIN entries e USING (seq) "
                               "WHERE d.dropped=0 AND d.reason IS NOT 'skipped' ORDER BY d.step"):
        kept_url[url] = seq
    dedup = Deduplicator(config)
    try:
        dedup.open()
    except Exception as exc:
        raise ScanError(f"the scan's index could not be opened: {exc}") from None
    try:
        for start in range(step, len(order), batch_size):
            batch = order[start:start + batch_size]
            state.put("pending", [p.seq for p in batch])
            verdicts = _decide_batch(db, dedup, batch)
            db.execute("BEGIN")
            for n, (page, verdict) in enumerate(zip(batch, verdicts)):
                _file_decision(db, config, page, verdict, start + n, kept_url, page.seq in again,
                               "item" if page.source in jsonl else "response")
            state.put("pending", None)
            db.execute("COMMIT")
            again = set()
            progress("decide", start + len(batch), len(order), start + len(batch))
    finally:
        dedup.close()
    state.put("decided", True)
    progress("decide", len(order), len(order), len(order))


def _decide_batch(db, dedup: Deduplicator, batch: list[Page]) -> list[Verdict]:
    items = []
    for page in batch:
        blob, body, when = db.execute("SELECT coalesce(s.result, e.result), e.body, e.time FROM entries e "
                                      "LEFT JOIN entries s ON s.seq = e.same_as WHERE e.seq=?", (page.seq,)).fetchone()
        result = pickle.loads(zlib.decompress(blob)) if blob is not None else (Step.SKIPPED, Skip.BAD_INPUT, None)
        items.append((page.url, result, dict(canonical=page.canonical, now=when,
                                             body=bytes(body) if body else None)))
    return decide(dedup, items)


def _file_decision(db, config: DedupConfig, page: Page, verdict: Verdict, step: int, kept_url: dict[str, int],
                   again: bool, stage: str) -> None:
    if verdict.resent:
        # unchanged against a record a killed run filed: this page's own, from the batch
        # that run left half done, unless this scan kept the URL before
        if page.url in kept_url and kept_url[page.url] != page.seq:
            verdict = verdict.but(action=Action.FLAG if config.dry_run else Action.DROP)
        else:
            verdict = verdict.but(action=Action.KEEP, reason=None, duplicate_of=None, resent=False)
    elif again and verdict.reason == Reason.UNCHANGED and kept_url.get(page.url) is None:
        verdict = verdict.but(action=Action.KEEP, reason=None, duplicate_of=None)
    if verdict.skipped or verdict.error:
        db.execute("INSERT OR REPLACE INTO decisions VALUES (?, ?, 0, 0, 'skipped', NULL, ?, NULL)",
                   (page.seq, step, str(verdict.skipped or f"error:{verdict.error}")))
        return
    if verdict.action in (Action.DROP, Action.FLAG):
        record = make_record(verdict, stage, "scan")
        record.pop("time", None)
        leader = kept_url.get(verdict.duplicate_of or "")
        db.execute("INSERT OR REPLACE INTO decisions VALUES (?, ?, ?, ?, ?, ?, NULL, ?)",
                   (page.seq, step, int(verdict.action == Action.DROP), int(verdict.action == Action.FLAG),
                    str(verdict.reason), leader, json.dumps(record, ensure_ascii=False)))
        return
    db.execute("INSERT OR REPLACE INTO decisions VALUES (?, ?, 0, 0, NULL, NULL, ?, NULL)",
               (page.seq, step, str(verdict.revisit) if verdict.revisit else None))
    if verdict.superseded:
        old = kept_url.get(verdict.superseded.get("url", ""))
        if old is not None:
            record = superseded_record(verdict, stage, "scan", dry_run=config.dry_run)
            record.pop("time", None)
            db.execute("UPDATE decisions SET dropped=?, flagged=?, reason='superseded', leader=?, record=? "
                       "WHERE seq=?", (int(not config.dry_run), int(config.dry_run), page.seq,
                                       json.dumps(record, ensure_ascii=False), old))
            db.execute("UPDATE decisions SET leader=? WHERE leader=?", (page.seq, old))
    kept_url[page.url] = page.seq
