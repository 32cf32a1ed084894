"""Step 5 and the write half of step 8: the near-duplicate index over a store.

`NearDupIndex` maps a fingerprint to every stored fingerprint within k bits (Manku's permuted
tables), and keeps per page a `DocRecord` (URL, fingerprint, sketch, ...) for verification
and for the drop log.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import time
from typing import Callable, TypeVar

import numpy as np

from ...exceptions import StoreDamaged, StoreFormat
from ...stores.base import FORMAT_VERSION, MIGRATABLE, MULTI, pid_gone, u64
from .fetches import doc_of as fetch_doc
from ..page.title import headline_keys
from ..page.boilerplate import PAGES as TEMPLATE_PAGES  # a template line is filed for this many kept pages
from .txn import TABLES, IndexTxn, table_name
from .migrate import migrate, unreadable_format
from .records import DocRecord, Extra, probe_hashes, probe_low_bits, url_key
from ..page.site import canonical_url
from ..page.simhash import hamming_many
from ..page.site import holder_of, lines_of, title_key
from .tables import Plan

__all__ = ["DocRecord", "Extra", "IndexTxn", "NearDupIndex", "TABLES", "canonical_url", "migrate", "url_key"]

logger = logging.getLogger(__name__)
T = TypeVar("T")

POSTING_LIMIT = 200  # a shingle among the smallest of more pages than this is boilerplate
HOLDERS = 4  # pages a site's line (or title part) is filed for: the page, the one compared and sitelines.MIN_PARTS others are enough
TITLED = 2  # kept pages filed under one site and headline: a second says the title is no headline
RUN_LEASE = 1800.0  # seconds an open run's marker stands without renewal: then the run was killed
HEADS_LIMIT = 8  # a title part more kept pages are filed under is a site's name or a stock title, no headline


def _open_run(run: int) -> str:
    return f"run_open_{run}"


def _keys8(values: np.ndarray) -> list[bytes]:
    raw = values.astype(">u8").tobytes()
    return [raw[i:i + 8] for i in range(0, len(raw), 8)]


class NearDupIndex:
    """The plan is chosen when the index is created and stored in its meta record."""

    def __init__(self, store, plan: Plan):
        self.store, self.plan = store, plan
        self.ordered = getattr(store, "ordered", True)  # the store lists keys in order: a time index
        self.version = FORMAT_VERSION  # the stored format (an older one when opened read-only)

    def read(self, fn: Callable[[IndexTxn], T]) -> T:
        return self.store.read(lambda raw: fn(IndexTxn(raw, len(self.plan.tables))))

    def write(self, fn: Callable[[IndexTxn], T]) -> T:
        """fn(txn) atomically and exclusively; it may be run again (stores/base.py)."""
        return self.store.write(lambda raw: fn(IndexTxn(raw, len(self.plan.tables))))

    @classmethod
    def open(cls, store, k: int | None = None, make_plan=None, params: dict | None = None) -> "NearDupIndex":
        """Open `store`, reusing its stored plan; a stored plan for another k, or other stored
        `params` (settings that change fingerprints, e.g. shingle), fail clearly. Without `k`
        and `make_plan`: an existing index as it is (the after-crawl tools)."""
        params = params or {}
        store.open()
        if hasattr(store, "refuse_foreign"):  # (LMDB: a file of something else is never written into)
            try:
                store.refuse_foreign()
            except Exception:
                store.close()
                raise
        store.ensure(TABLES)
        version, plan_json, params_json = store.read(
            lambda raw: (lambda txn: (txn.meta_get("format"), txn.meta_get("plan"), txn.meta_get("params")))(IndexTxn(raw)))
        if version is not None and int(version) not in MIGRATABLE and int(version) != FORMAT_VERSION:
            store.close()
            raise StoreFormat(unreadable_format(store.location, int(version)))
        if params_json is not None:
            for name, value in json.loads(params_json).items():
                if name in params and params[name] != value:
                    store.close()
                    setting = "DEDUP_" + name.upper()
                    raise StoreFormat(
                        f"the index at {store.location} was built with {setting}={value}, not {params[name]}: "
                        f"use {setting}={value} ({name}={value!r} from Python), or a new DEDUP_DIR"
                    )
        if plan_json is not None:
            plan = Plan.from_json(plan_json)
            if k is not None and plan.k != k:
                store.close()
                raise StoreFormat(
                    f"the index at {store.location} was built with DEDUP_K={plan.k}, not {k}: "
                    f"use DEDUP_K={plan.k} (k={plan.k} from Python), or a new DEDUP_DIR for k={k}"
                )
        else:
            if getattr(store, "readonly", False) or make_plan is None:
                store.close()
                raise StoreFormat(f"{store.location} has no plan yet (never used)")
            plan = make_plan()

            def init(raw):
                txn = IndexTxn(raw)
                if txn.meta_get("plan") is None:  # another process may have won the race
                    txn.meta_put("format", str(FORMAT_VERSION).encode())
                    txn.meta_put("plan", plan.to_json().encode())
                    txn.meta_put("params", json.dumps(params, sort_keys=True).encode())
                return Plan.from_json(txn.meta_get("plan") or b"")

            plan = store.write(init)
        store.ensure({table_name(t): MULTI for t in range(len(plan.tables))})
        index = cls(store, plan)
        index.version = FORMAT_VERSION if version is None else int(version)
        if index.version in MIGRATABLE and not getattr(store, "readonly", False):
            migrate(index, index.version)
            index.version = FORMAT_VERSION
        return index

    def new_run(self, txn) -> int:
        """A new run number, marked open (with this host, process and time) until end_run: pages
        filed by a run that never ended (a killed crawl) may not have reached storage."""
        run = txn.counter("runs", 0) + 1
        self.beat(txn, run)
        return run

    def beat(self, txn, run: int) -> None:
        """The open run's marker, its time renewed (the run writes it every RUN_LEASE / 4 or so)."""
        who = {"host": socket.gethostname(), "pid": os.getpid(), "beat": time.time()}
        txn.meta_put(_open_run(run), json.dumps(who).encode())

    def end_run(self, txn, run: int) -> None:
        txn.meta_delete(_open_run(run))

    def run_open(self, txn, run: int) -> bool:
        """The run has not ended: still running, or killed (known yet or not)."""
        return txn.meta_get(_open_run(run)) is not None

    def run_killed(self, txn, run: int) -> bool:
        """The run never ended and is gone: its process is dead on this host, or its marker was
        not renewed for RUN_LEASE (a crawl on another host or container, where a pid says nothing).
        A run that ended (or predates the marker) is not; nor is one still running. Taken for
        killed wrongly (a crawl idle that long), its pages are only passed on again."""
        marker = txn.meta_get(_open_run(run))
        if marker is None:
            return False
        try:
            who = json.loads(marker)
            beat = who.get("beat")
            if isinstance(beat, (int, float)) and time.time() - beat > RUN_LEASE:
                return True
            if who.get("host") != socket.gethostname():
                return False
            return pid_gone(int(who["pid"]))
        except (ValueError, TypeError, KeyError, AttributeError):
            return False  # unreadable: not known to be killed

    def candidates(self, txn, fp: int) -> list[tuple[int, int]]:
        """(fingerprint, distance) of stored fingerprints within k bits, nearest first."""
        found = txn.bucket_union(self.plan.keys(fp))
        if not found.size:
            return []
        dist = hamming_many(found, fp)
        near = dist <= self.plan.k
        # a fingerprint sits in every table, so it may come back once per table
        pairs = sorted(set(zip(dist[near].tolist(), found[near].tolist())))
        return [(int(f), d) for d, f in pairs]

    def prefetch(self, txn, url: str | None, fp: int, digest: bytes | None, sketch: np.ndarray, probes: int,
                 template: np.ndarray | None = None, site: list[bytes] | None = None,
                 titled: bytes | None = None, heads: list[bytes] | None = None) -> None:
        """Read the URL entry, the exact entry, the buckets and the sketch postings of a page's
        lookup, its template and site lines' entries and its headline's (what filing it reads), in
        one go (a networked store's round trip; nothing on LMDB)."""
        key = url_key(url) if url and self.version >= 4 else None
        txn.prefetch(key, digest, self.plan.keys(fp), _keys8(sketch[:probes]) if probes else [],
                     _keys8(template) if template is not None else [], site, titled, heads, fp=fp)

    def sketch_candidates(self, txn, sketch: np.ndarray, probes: int) -> list[int]:
        """Doc ids sharing one of the `probes` smallest shingle hashes, most shared first.

        Two pages with resemblance J share their single smallest hash with probability J, so a
        few probes find copies whose simhash moved more than k bits (edits, truncation).
        """
        lists = [docs for docs in txn.postings_many(_keys8(sketch[:probes]), POSTING_LIMIT)
                 if docs is not None and docs.size]
        if not lists:
            return []
        ids, shared = np.unique(np.concatenate(lists), return_counts=True)
        order = np.lexsort((ids, -shared))  # most shared first, then oldest
        return ids[order].tolist()

    def docs(self, txn, fp: int) -> list[DocRecord]:
        out = []
        for doc_id in txn.fp_docs(fp):
            raw = txn.doc_get(doc_id)
            if raw is not None:
                out.append(DocRecord.decode(raw, doc_id))
        return out

    def doc(self, txn, doc_id: int) -> DocRecord | None:
        raw = txn.doc_get(doc_id)
        return None if raw is None else DocRecord.decode(raw, doc_id)

    def url_id(self, txn, url: str) -> int | None:
        """The doc id the URL's entry names (by_url reads its record and checks it)."""
        return txn.url_get(url_key(url)) if self.version >= 4 else None

    def by_url(self, txn, url: str) -> DocRecord | None:
        """The page kept for `url` (or any URL of the same canonical form), if any."""
        if self.version < 4:  # no URL table yet (format 3, read-only): the newest record of the URL
            found = [d for d in self.scan(txn) if canonical_url(d.url) == canonical_url(url)]
            return found[-1] if found else None
        doc_id = txn.url_get(url_key(url))
        doc = None if doc_id is None else self.doc(txn, doc_id)
        if doc is None or (doc.url != url and canonical_url(doc.url) != canonical_url(url)):  # gone, or a collision
            return None
        return doc

    def scan(self, txn, batch: int = 10_000):
        """Every kept page, in doc id order."""
        after = 0
        while True:
            rows = txn.doc_scan(after, batch)
            for doc_id, raw in rows:
                yield DocRecord.decode(raw, doc_id)
            if len(rows) < batch:
                return
            after = rows[-1][0]

    def exact(self, txn, digest: bytes) -> DocRecord | None:
        doc_id = txn.exact_get(digest)
        return None if doc_id is None else self.doc(txn, doc_id)

    def add(self, txn, record: DocRecord, digest: bytes | None = None, probes: int = 0, exact: bool = True,
            template: np.ndarray | None = None, site_keys: list[bytes] | None = None,
            body: bytes | None = None, doc_id: int | None = None) -> int:
        """File a kept page (under a new doc id, or `doc_id` when `index rebuild` files it again). `digest` is kept in the record (a revisit compares it); `exact`:
        also file it in the exact table (off for a page the score kept beside a page of its words);
        `template`: the keys of the lines it shows outside its text (boilerplate.py; they stay
        known when the page is removed); `site_keys`: its lines' keys under its site, filed with
        its headline (sitelines.py; they leave with the page); `body`: the digest of its response's
        bytes (Deduplicator.known)."""
        doc_id = txn.next_doc_id() if doc_id is None else doc_id
        record.doc_id = doc_id
        record.coarse = getattr(self.store, "coarse_sketches", False)
        record.time = record.time or time.time()
        # what remove() needs to undo every entry below
        record.extras = {**record.extras, Extra.PROBES: bytes([min(probes, 255)])}
        if digest is not None:
            record.extras[Extra.DIGEST] = bytes(digest)
        if body is not None:
            record.extras[Extra.BODY] = bytes(body)
        if record.coarse and probes:  # (the postings are filed under whole hashes: remove() needs them)
            record.extras[Extra.PROBE_LOW] = probe_low_bits(record.sketch[:probes])
        digest = digest if exact else None
        txn.doc_put(doc_id, record.encode())
        if record.url:  # the URL's latest kept page (an item without a URL has no entry)
            txn.url_put(url_key(record.url), doc_id)
        if self.ordered:  # (a store that cannot list the times in order leaves expiry to its keys' TTL)
            txn.time_add(int(record.time), doc_id)
        txn.fp_add(record.fingerprint, doc_id)
        if digest is not None:
            txn.exact_put(digest, doc_id)
        if body is not None:
            txn.body_put(body, doc_id)
        for table, key in enumerate(self.plan.keys(record.fingerprint)):
            txn.bucket_add(table, key, record.fingerprint)
        txn.postings_add(_keys8(record.sketch[:probes]), doc_id, POSTING_LIMIT)
        if template is not None and template.size:
            txn.template_add(_keys8(template), doc_id, TEMPLATE_PAGES - 1)
        if site_keys is not None:
            txn.site_add(site_keys, holder_of(record.url), txn.site_holders(site_keys), HOLDERS)
            headline = title_key(record.url, record.title)
            if headline is not None:
                txn.title_add(headline, doc_id, TITLED)
        if Extra.VISIBLE in record.extras or Extra.VISIBLE_THIN in record.extras:  # kept with its view: found by its title
            txn.heads_add(headline_keys(record.title), doc_id, HEADS_LIMIT)
        return doc_id

    def headed(self, txn, title: str | None) -> list[DocRecord]:
        """The kept pages filed under a part of this title (page/title.headline_keys), first found first."""
        keys = headline_keys(title)
        ids = txn.headed_docs(keys, HEADS_LIMIT) if keys else []
        out = []
        for i, raw in zip(ids, txn.doc_get_many(ids)):
            try:
                if raw is not None:
                    out.append(DocRecord.decode(raw, i))
            except StoreDamaged:
                continue  # (a damaged record is no candidate: lookups.readable names it)
        return out

    def boilerplate_counts(self, txn, keys: list[int]) -> list[int]:
        """For each line key, how many kept pages showed it outside their text (up to TEMPLATE_PAGES)."""
        return txn.template_counts([u64(k) for k in keys]) if keys else []

    def remove(self, txn, doc_id: int, heir: DocRecord | None = None, staying: DocRecord | None = None) -> bool:
        """Take a page out of every database; its fingerprint leaves the tables with its last page.
        `heir`: the kept page it was a copy of (a page withdrawn on a store without transactions,
        claims.py): an entry of one value the two shared (the URL, the exact words, the response's
        bytes), which the later writer took, goes back to it. `staying`: a page filed before this
        one left that replaces it (claims.py): the lines it files under the same URL stay filed,
        and an entry of one value the two share goes to it, as to an heir."""
        doc = self.doc(txn, doc_id)
        if doc is None:
            return False
        txn.doc_delete(doc_id)
        if heir is None and staying is not None:
            heir = staying  # (filed before this one left: its entries may have been overwritten by this one's)
        heir_id = heir.doc_id if heir is not None and heir.doc_id != doc_id else None
        key = url_key(doc.url) if doc.url else None
        if key is not None and txn.url_get(key) == doc_id:
            if heir_id is not None and heir is not None and heir.url and url_key(heir.url) == key:
                txn.url_put(key, heir_id)
            else:
                txn.url_delete(key)
        fetch = txn.fetch_get(key) if key is not None else None
        if fetch is not None and fetch_doc(fetch) == doc_id:  # (its validators and copy leave with it)
            txn.fetch_delete(key)
        if self.ordered:
            txn.time_remove(int(doc.time), doc_id)
        txn.fp_remove(doc.fingerprint, doc_id)
        if not txn.fp_docs(doc.fingerprint):
            for table, key in enumerate(self.plan.keys(doc.fingerprint)):
                txn.bucket_remove(table, key, doc.fingerprint)
        shared = heir.extras if heir_id is not None and heir is not None else {}
        digest = doc.extras.get(Extra.DIGEST)
        if digest is not None and txn.exact_get(digest) == doc_id:
            if shared.get(Extra.DIGEST) == digest:
                txn.exact_put(digest, heir_id)
            else:
                txn.exact_delete(digest)
        body = doc.extras.get(Extra.BODY)
        if body is not None and txn.body_get(body) == doc_id:
            # (another kept page of these bytes: the newer one filed beside a page out of DEDUP_WINDOW)
            twin = heir_id if shared.get(Extra.BODY) == body else _with_extra(txn, doc, Extra.BODY, body)
            if twin is not None:
                txn.body_put(body, twin)
            else:
                txn.body_delete(body)
        probes = doc.extras.get(Extra.PROBES, b"\x00")[0]
        for value in probe_hashes(doc, probes).tolist():
            txn.posting_remove(u64(value), doc_id)
        # its site lines and headline (filed with DEDUP_SITE_BOILERPLATE; removing nothing is fine)
        text = doc.text
        lines = lines_of(text, doc.url, doc.title) if text is not None else None
        if lines is not None and lines.keys:
            keys = lines.filed
            if staying is not None and staying.text is not None and holder_of(staying.url) == holder_of(doc.url):
                theirs = lines_of(staying.text, staying.url, staying.title)
                keys = [k for k in keys if theirs is None or k not in set(theirs.filed)]
            txn.site_remove(keys, holder_of(doc.url))
        titled = title_key(doc.url, doc.title)
        if titled is not None:
            txn.title_remove(titled, doc_id)
        if Extra.VISIBLE in doc.extras or Extra.VISIBLE_THIN in doc.extras:
            txn.heads_remove(headline_keys(doc.title), doc_id)
        return True

    def expire(self, txn, before: float, limit: int) -> int:
        """Remove up to `limit` pages kept before time `before`, oldest first; how many were (none
        on a store without the time index: its keys expire on their own)."""
        if not self.ordered:
            return 0
        old = txn.time_oldest(int(before), limit)
        for _, doc_id in old:
            if not self.remove(txn, doc_id):
                txn.time_remove(_, doc_id)  # a stale time entry
        return len(old)


def _with_extra(txn, doc: DocRecord, extra: str, value: bytes) -> int | None:
    """Another kept page of `doc`'s fingerprint whose `extra` is `value` (the same bytes, the same fingerprint)."""
    for other in txn.fp_docs(doc.fingerprint):
        raw = None if other == doc.doc_id else txn.doc_get(other)
        if raw is not None and DocRecord.decode(raw, other).extras.get(extra) == value:
            return other
    return None


def deciding(index: NearDupIndex | None):
    """A page's decision, its filing to its second looks: a store may send some of its writes
    with its next round trip within it (Redis's spread layout: a journal's deletion)."""
    hook = getattr(index.store, "deferring", None) if index is not None else None
    return hook() if hook is not None else contextlib.nullcontext()
