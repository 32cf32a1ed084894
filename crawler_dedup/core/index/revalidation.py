"""Conditional requests, the index's side: what a recrawl's request asks the server with (the
URL's kept response's validators, fetches.py), a 304 turned into the decision its page would get
(an unchanged revisit, `measure` not-modified), and the validators filed with a decision. The
Deduplicator calls these; the Scrapy side is crawler_dedup/scrapy/conditional.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import replace

import numpy as np

from ...config import DedupConfig
from ...exceptions import DedupError
from .fetches import Fetch
from ..page.fingerprint import Fingerprinted
from .neardup import NearDupIndex
from .txn import IndexTxn
from .records import RECORD_EXTRAS, DocRecord, Extra, probe_hashes, url_key
from ..page.site import canonical_url
from ..verdict import Action, Reason, Revisit, Verdict


# the settings a copy's drop depends on: a known copy dropped under others is asked again in full
DECIDING = ("allow", "boilerplate", "canonical", "conceptual", "conceptual_threshold", "containment", "extract_mode",
            "min_resemblance", "min_tokens", "model", "prefer_clean_url", "score_threshold", "site_boilerplate",
            "sketch_probes", "threshold", "tracking_params", "verifier", "visible_containment")


def settings_digest(cfg: DedupConfig) -> str:
    """A digest of the settings that decide whether a page is a copy (a model file by its bytes' size and time)."""
    named = {}
    for name in DECIDING:
        value = getattr(cfg, name)
        if name == "allow":
            value = sorted(p.pattern for p in value)
        elif name == "model" and value:
            try:
                stat = os.stat(str(value))
                value = [str(value), stat.st_size, int(stat.st_mtime)]
            except OSError:
                value = str(value)
        named[name] = value if isinstance(value, (int, float, str, bool, type(None), list)) else repr(value)
    return hashlib.sha1(json.dumps(named, sort_keys=True, default=repr).encode()).hexdigest()[:16]


def settings_since(txn: IndexTxn, digest: str, run: int) -> int:
    """The first run of the settings `digest` now in force (this `run` when they changed): a known
    copy whose entry an earlier run wrote was dropped under other settings. An index that never
    recorded settings keeps its entries (0)."""
    raw = txn.meta_get("deciding")
    before = json.loads(raw) if raw else None
    if before is not None and before.get("digest") == digest:
        return int(before.get("since", 0))
    since = run if before is not None else 0
    txn.meta_put("deciding", json.dumps({"digest": digest, "since": since}).encode())
    return since


def as_fingerprinted(doc: DocRecord) -> Fingerprinted | None:
    """A kept page's steps 1-4 from its record (its text "" when not stored); None without its digest."""
    digest = doc.extras.get(Extra.DIGEST)
    if digest is None:
        return None
    extras = {k: v for k, v in doc.extras.items() if k not in RECORD_EXTRAS}
    sketch = doc.sketch
    if doc.coarse:  # (a coarse record keeps its probes' whole hashes apart: a page filed from it is
        # filed and looked up under them, as extraction would give, not under their high bits)
        filed = doc.extras.get(Extra.PROBES)
        head = probe_hashes(doc, filed[0] if filed else 0)
        sketch = np.concatenate([head, doc.sketch[len(head):]]).astype(np.uint64)
    return Fingerprinted(text=doc.text or "", title=doc.title, tokens=doc.tokens, fingerprint=doc.fingerprint,
                         sketch=sketch, digest=digest, shingles=doc.shingles, extras=extras, known=True)


def entry(index: NearDupIndex | None, run: int, url: str) -> tuple[Fetch, bool] | None:
    """What the index keeps of the URL's last response, and whether the run that fetched it was
    killed (`run`: this process's); None when nothing (or on any doubt: the request goes out
    unconditional)."""
    if index is None or not url:
        return None

    def read(txn: IndexTxn) -> tuple[Fetch, bool] | None:
        raw = txn.fetch_get(url_key(url))
        if raw is None:
            return None
        found = Fetch.decode(raw)
        killed = found.run != run and index.run_killed(txn, found.run)
        if killed and not found.copy_of:
            # (a killed run may have written only the entry: its kept page, filed by a run that
            # ended, is not passed on again, so its validators serve as before)
            doc = index.doc(txn, found.doc_id)
            if doc is not None and doc.run != found.run:
                killed = doc.run != run and index.run_killed(txn, doc.run)
        return found, killed
    try:
        return index.read(read)
    except (DedupError, OSError):
        return None


def kept_under(index: NearDupIndex | None, url: str) -> bool:
    """The index keeps a page under this very URL (DEDUP_CLEAN_REQUESTS asks it as it is: a
    tracking URL the site's rel=canonical names, or one kept with DEDUP_PREFER_CLEAN_URL off, is
    revisited, so its updates reach storage). False on any doubt (the request is cleaned)."""
    if index is None or not url:
        return False
    try:
        doc = index.read(lambda txn: index.by_url(txn, url))
    except (DedupError, OSError):
        return False
    return doc is not None and doc.url == url


def not_modified(index: NearDupIndex | None, cfg: DedupConfig, run: int, url: str, sent: dict[str, str],
                 now: float | None = None) -> tuple[Fingerprinted, Fetch, bool] | None:
    """A 304 to the conditional request that sent `sent` (Fetch.headers): the URL's kept page as
    steps 1-4 (decided as an unchanged revisit, `measure` not-modified), its entry, and whether
    the decision will pass the page on (then it needs the copy). None when the 304 cannot stand
    for the kept page (the entry or the page changed or left, or fell out of the window): the
    page is fetched again in full."""
    if index is None:
        return None

    def read(txn: IndexTxn):
        raw = txn.fetch_get(url_key(url))
        found = None if raw is None else Fetch.decode(raw)
        if found is None or found.headers() != sent:
            return None
        if found.copy_of:  # a dropped copy's: the page it duplicated, still kept, stands for it
            doc = index.doc(txn, found.doc_id)
            return (found, doc, False) if doc is not None and doc.url != url else None
        doc = index.by_url(txn, url)
        if doc is None or doc.doc_id != found.doc_id:
            return None
        return found, doc, doc.run != run and index.run_killed(txn, doc.run)
    try:
        got = index.read(read)
    except (DedupError, OSError):
        return None
    if got is None:
        return None
    found, doc, killed = got
    if cfg.window and doc.time < (time.time() if now is None else now) - cfg.window:
        return None
    fp = as_fingerprinted(doc)
    if fp is None:
        return None
    fp.not_modified = True
    if found.copy_of:  # decided again as the copy it was: dropped against the page it duplicates
        fp.copy_reason, fp.copy_named = "near" if found.near else "exact", found.named
        return fp, found, cfg.dry_run
    passed_on = killed or cfg.unchanged == "keep" or cfg.dry_run or cfg.revisit != "update"
    return fp, found, passed_on


def file_fetch(txn: IndexTxn, verdict: Verdict, fetched: Fetch, now: float, *, filed: int | None, run: int,
               max_age: float) -> None:
    """Keep the response's validators (and copy) for the URL's kept page, filed or unchanged, in
    the decision's transaction; an unchanged response with the validators kept already writes
    nothing. A response without validators takes the URL's old ones out. `filed`: the doc id the
    decision filed, `run` this process's, `max_age` DEDUP_CONDITIONAL_MAX_AGE."""
    doc_id = filed if filed is not None else (
        verdict.doc_id if verdict.revisit == Revisit.UNCHANGED else None)
    if doc_id is None:
        if verdict.action == Action.DROP and verdict.reason in (Reason.EXACT, Reason.NEAR) and verdict.doc_id:
            _file_copy(txn, verdict, fetched, now, run)  # a dropped copy of another URL's page
        return  # (a skip, a flagged copy: nothing a 304 could stand for)
    if fetched.asked:
        return  # (a copy's entry, its 304 not dropped as a copy: nothing to re-point)
    key = url_key(verdict.url)
    raw = txn.fetch_get(key)
    if not fetched.validators:
        if raw is not None:
            txn.fetch_delete(key)
        return
    if raw is not None and filed is None:
        try:
            old: Fetch | None = Fetch.decode(raw)
        except DedupError:
            old = None
        age = max_age
        if (old is not None and old.doc_id == doc_id and old.same_as(fetched) and not verdict.resent
                and (old.copy is not None) == fetched.keep_copy
                and (not age or fetched.fetched - old.fetched < age / 2)):
            return  # (a page passed on again is this run's now: its entry says so, see entry())
    fetched.doc_id, fetched.run = doc_id, run
    fetched.kept = now if filed is not None else (verdict.kept_at or now)
    txn.fetch_put(key, fetched.encode())


def _file_copy(txn: IndexTxn, verdict: Verdict, fetched: Fetch, now: float, run: int) -> None:
    """A dropped copy's validators, a few bytes and no body: its next crawl asks, and a 304 drops
    it again against the page it duplicates without a download (not_modified). Without
    validators the URL's old entry goes."""
    key = url_key(verdict.url)
    if not fetched.validators:
        if txn.fetch_get(key) is not None:
            txn.fetch_delete(key)
        return
    doc_id, near = int(verdict.doc_id or 0), verdict.reason == Reason.NEAR
    # (its rel=canonical named the page it copies: its 304 does not make it that page's cleaner URL;
    # a 304's own rel=canonical is not known: its entry's word stands)
    named = fetched.named if fetched.copy_of and verdict.canonical is None else bool(
        verdict.canonical and verdict.duplicate_of and canonical_url(verdict.canonical) == canonical_url(verdict.duplicate_of))
    if fetched.asked and (fetched.doc_id, fetched.near, fetched.named) == (doc_id, near, named):
        return  # (its 304 dropped it against the page its entry names: nothing new)
    # (a copy, not `fetched` itself: a transaction run again compares with the entry as read)
    entry = replace(fetched, doc_id=doc_id, run=run, copy_of=True, near=near, named=named, kept=now, keep_copy=False,
                    copy=None)
    txn.fetch_put(key, entry.encode())


def take_out(index: NearDupIndex, txn: IndexTxn, remove: list[int], superseded: dict | None, conditional: bool,
             staying: DocRecord | None = None) -> Fetch | None:
    """Take out what a kept page replaces (an update's earlier record, a superseded copy, a stale
    entry); `staying`: the kept page when it is filed already (its lines stay filed under its
    URL). Returns the superseded URL's entry when it has validators: file_superseded keeps them as
    a known copy's once the kept page's doc id is known."""
    carried = _superseded_entry(txn, superseded["url"]) if superseded and conditional else None
    for gone in remove:
        index.remove(txn, gone, staying=staying)
    return carried


def _superseded_entry(txn: IndexTxn, url: str) -> Fetch | None:
    raw = txn.fetch_get(url_key(url))
    if raw is None:
        return None
    try:
        found = Fetch.decode(raw)
    except DedupError:
        return None
    return found if found.validators and not found.copy_of else None


def file_superseded(txn: IndexTxn, superseded: dict, entry: Fetch, kept_id: int, run: int) -> None:
    """The replaced URL's validators, kept as a known copy's of the page that replaced it: its next
    crawl asks, and a 304 drops it against that page without a download (no body copy kept). It
    named that page as its rel=canonical when the canonical rule replaced it. `run`: the replacing
    run's (a copy decided under the settings in force now, not asked in full for a change before)."""
    entry.copy_of, entry.doc_id, entry.run = True, kept_id, run
    entry.near, entry.named = superseded.get("measure") != "exact", superseded.get("rule") == "canonical"
    entry.copy, entry.keep_copy, entry.body = None, False, None
    txn.fetch_put(url_key(superseded["url"]), entry.encode())
