"""Step 5 and the write half of step 8: the near-duplicate index over a store.

`NearDupIndex` maps a fingerprint to every stored fingerprint within k bits (Manku's permuted
tables), and keeps per page a `DocRecord` (URL, fingerprint, sketch, ...) for verification
and for the drop log.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import socket
import struct
import time
import zlib
from dataclasses import dataclass, field
from typing import Callable, TypeVar

import numpy as np
import xxhash
from w3lib.url import canonicalize_url

from ..exceptions import StoreFormat
from .simhash import hamming_many
from ..stores.base import FORMAT_VERSION, MIGRATABLE, MULTI, SINGLE, from_u64, u64
from .tables import Plan

logger = logging.getLogger(__name__)
T = TypeVar("T")

# fingerprint, time, tokens, shingles, run, sketch size, title bytes, stage, url bytes
_HEAD = struct.Struct(">QdIIIHHBI")
_EXTRA = struct.Struct(">BI")  # name bytes, data bytes
_STAGES = ("response", "item")
POSTING_LIMIT = 200  # a shingle among the smallest of more pages than this is boilerplate


class Extra:
    """Names of a record's extras (stored in the index: never renamed). The verifiers and the
    LSI check add their own (qg, qn, seq, lsi)."""

    DIGEST = "dg"  # the content digest (a revisit compares it)
    PROBES = "pr"  # how many sketch postings the page was filed under (remove() undoes them)
    TEXT = "tx"  # the zlib-compressed extracted text (DEDUP_STORE_TEXT)
    CHURN = "cd"  # the digest with churn masked, when no text is stored and it differs
    CANONICAL = "cu"  # the page's rel=canonical, when it names another URL


@dataclass
class DocRecord:
    url: str
    fingerprint: int
    sketch: np.ndarray
    tokens: int
    time: float
    shingles: int = 0  # distinct shingles: with the sketch, gives intersection and containment
    run: int = 0
    title: str | None = None
    doc_id: int | None = None
    stage: str = "response"
    extras: dict[str, bytes] = field(default_factory=dict)  # what a verifier keeps per page

    TEXT = Extra.TEXT

    def set_text(self, text: str) -> None:
        self.extras[self.TEXT] = zlib.compress(text.encode("utf-8", "surrogatepass"), 1)  # 1: a third the time of 6, 9% larger

    @property
    def text(self) -> str | None:
        """The stored extracted text; None when the page was kept without it (setting off, older index)."""
        data = self.extras.get(self.TEXT)
        if data is None:
            return None
        try:
            return zlib.decompress(data).decode("utf-8", "replace")
        except zlib.error:
            return None

    def encode(self) -> bytes:
        # cut on a character boundary; surrogatepass: a URL with a lone surrogate still round-trips
        title = (self.title or "")[:1000].encode("utf-8", "surrogatepass")[:4000].decode("utf-8", "ignore").encode()
        stage = _STAGES.index(self.stage) if self.stage in _STAGES else 0
        url = self.url.encode("utf-8", "surrogatepass")
        head = _HEAD.pack(self.fingerprint, self.time, self.tokens, self.shingles, self.run, self.sketch.size,
                          len(title), stage, len(url))
        parts = [head, self.sketch.astype(">u8").tobytes(), title, url]
        for name, data in sorted(self.extras.items()):
            parts += [_EXTRA.pack(len(name), len(data)), name.encode(), bytes(data)]
        return b"".join(parts)

    @classmethod
    def decode(cls, data: bytes, doc_id: int | None = None) -> "DocRecord":
        fp, t, tokens, shingles, run, n, tl, stage, ul = _HEAD.unpack_from(data)
        pos = _HEAD.size
        sketch = np.frombuffer(data, dtype=">u8", count=n, offset=pos).astype(np.uint64)
        pos += 8 * n
        title = data[pos : pos + tl].decode("utf-8", "replace") or None
        pos += tl
        url = data[pos : pos + ul].decode("utf-8", "surrogatepass")
        pos += ul
        extras = {}
        while pos < len(data):
            nl, dl = _EXTRA.unpack_from(data, pos)
            pos += _EXTRA.size
            name = data[pos : pos + nl].decode()
            extras[name] = data[pos + nl : pos + nl + dl]
            pos += nl + dl
        return cls(url=url, fingerprint=fp, sketch=sketch, tokens=tokens, time=t, shingles=shingles, run=run,
                   title=title, doc_id=doc_id, stage=_STAGES[stage] if stage < len(_STAGES) else "response",
                   extras=extras)


@functools.lru_cache(maxsize=4096)  # a page's URL is looked up, then filed: canonicalized once (~25 us)
def canonical_url(url: str) -> str:
    """The URL as Scrapy's request fingerprint sees it: query sorted, fragment dropped, escapes
    normalized. Two URLs with the same canonical form are one page."""
    try:
        return canonicalize_url(url, keep_fragments=False)
    except (ValueError, UnicodeError, TypeError):  # a URL w3lib cannot parse stays as it is
        return url


def url_key(url: str) -> bytes:
    """The URL table's key: 16 bytes of the canonical URL (LMDB keys stop at 511 bytes)."""
    return xxhash.xxh3_128_digest(canonical_url(url).encode("utf-8", "surrogatepass"))


def _open_run(run: int) -> str:
    return f"run_open_{run}"


def _keys8(values: np.ndarray) -> list[bytes]:
    raw = values.astype(">u8").tobytes()
    return [raw[i:i + 8] for i in range(0, len(raw), 8)]


# the index's tables in its store: meta; docs (doc id -> record); exact (content digest -> doc
# id); urls (key of the canonical URL -> doc id); fps (fingerprint -> doc ids); mins (each page's
# few smallest shingle hashes -> doc ids: candidates whose simhash moved too far); times
# (seconds -> doc ids, for the time window); t000.. one per Manku permutation (permuted prefix ->
# the fingerprints in that bucket)
TABLES = {"meta": SINGLE, "docs": SINGLE, "exact": SINGLE, "urls": SINGLE,
          "fps": MULTI, "mins": MULTI, "times": MULTI}


def table_name(t: int) -> str:
    return "t%03d" % t


class IndexTxn:
    """The index's words for a store transaction: what NearDupIndex and the Deduplicator call,
    each a line or two over the generic contract (stores/base.py)."""

    def __init__(self, raw, tables: int = 0):
        self.raw, self._names = raw, [table_name(t) for t in range(tables)]

    def meta_get(self, name: str) -> bytes | None:
        return self.raw.get("meta", name.encode())

    def meta_put(self, name: str, value: bytes) -> None:
        self.raw.put("meta", name.encode(), value)

    def meta_delete(self, name: str) -> None:
        self.raw.delete("meta", name.encode())

    def counter(self, name: str, start: int) -> int:
        """Advance a counter; its value before (`start` when new)."""
        return self.raw.incr("meta", name.encode(), 1, start) - 1

    def bucket_union(self, keys: list[bytes]) -> np.ndarray:
        return self.raw.union_u64(self._names[:len(keys)], keys)

    def bucket_add(self, table: int, key: bytes, fp: int) -> None:
        self.raw.add(self._names[table], key, u64(fp))

    def bucket_remove(self, table: int, key: bytes, fp: int) -> None:
        self.raw.remove(self._names[table], key, u64(fp))

    def postings(self, key: bytes, limit: int) -> np.ndarray | None:
        """Doc ids filed under `key`; None when more than `limit` (a boilerplate shingle)."""
        n = self.raw.value_count("mins", key)
        if n > limit:
            return None
        return _ids(self.raw.values("mins", key)) if n else np.empty(0, np.uint64)

    def posting_add(self, key: bytes, doc_id: int, limit: int) -> None:
        if self.raw.value_count("mins", key) > limit:
            return  # its list stops growing
        self.raw.add("mins", key, u64(doc_id))

    def posting_remove(self, key: bytes, doc_id: int) -> None:
        self.raw.remove("mins", key, u64(doc_id))

    def fp_docs(self, fp: int) -> list[int]:
        return [from_u64(v) for v in self.raw.values("fps", u64(fp))]

    def fp_add(self, fp: int, doc_id: int) -> None:
        self.raw.add("fps", u64(fp), u64(doc_id))

    def fp_remove(self, fp: int, doc_id: int) -> None:
        self.raw.remove("fps", u64(fp), u64(doc_id))

    def exact_get(self, digest: bytes) -> int | None:
        value = self.raw.get("exact", bytes(digest))
        return None if value is None else from_u64(value)

    def exact_put(self, digest: bytes, doc_id: int) -> None:
        self.raw.put("exact", bytes(digest), u64(doc_id))

    def exact_delete(self, digest: bytes) -> None:
        self.raw.delete("exact", bytes(digest))

    def doc_get(self, doc_id: int) -> bytes | None:
        return self.raw.get("docs", u64(doc_id))

    def doc_put(self, doc_id: int, record: bytes) -> None:
        self.raw.put("docs", u64(doc_id), record)

    def doc_delete(self, doc_id: int) -> None:
        self.raw.delete("docs", u64(doc_id))

    def doc_count(self) -> int:
        return self.raw.count("docs")

    def doc_scan(self, after: int, limit: int) -> list[tuple[int, bytes]]:
        """Up to `limit` (doc id, record) with doc id > after, in id order."""
        return [(from_u64(k), v) for k, v in self.raw.scan("docs", u64(after + 1), limit)]

    def url_get(self, key: bytes) -> int | None:
        value = self.raw.get("urls", bytes(key))
        return None if value is None else from_u64(value)

    def url_put(self, key: bytes, doc_id: int) -> None:
        self.raw.put("urls", bytes(key), u64(doc_id))

    def url_delete(self, key: bytes) -> None:
        self.raw.delete("urls", bytes(key))

    def url_count(self) -> int:
        return self.raw.count("urls")

    def time_add(self, seconds: int, doc_id: int) -> None:
        self.raw.add("times", u64(seconds), u64(doc_id))

    def time_oldest(self, before: int, limit: int) -> list[tuple[int, int]]:
        """Up to `limit` (seconds, doc id) with seconds < before, oldest first."""
        rows = self.raw.scan("times", b"", limit)
        return [(from_u64(k), from_u64(v)) for k, v in rows if from_u64(k) < before]

    def time_remove(self, seconds: int, doc_id: int) -> None:
        self.raw.remove("times", u64(seconds), u64(doc_id))


def _ids(values: list[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(values), dtype=">u8").astype(np.uint64)


class NearDupIndex:
    """The plan is chosen when the index is created and stored in its meta record."""

    def __init__(self, store, plan: Plan):
        self.store, self.plan = store, plan
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
        store.ensure(TABLES)
        version, plan_json, params_json = store.read(
            lambda raw: (lambda txn: (txn.meta_get("format"), txn.meta_get("plan"), txn.meta_get("params")))(IndexTxn(raw)))
        if version is not None and int(version) not in MIGRATABLE and int(version) != FORMAT_VERSION:
            store.close()
            raise StoreFormat(
                f"the index at {store.location} has format version {int(version)}, this crawler-dedup "
                f"reads version {FORMAT_VERSION}: use a new DEDUP_DIR or delete the old one"
            )
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
            plan = make_plan()

            if getattr(store, "readonly", False) or make_plan is None:
                store.close()
                raise StoreFormat(f"{store.location} has no plan yet (never used)")

            def init(raw):
                txn = IndexTxn(raw)
                if txn.meta_get("plan") is None:  # another process may have won the race
                    txn.meta_put("format", str(FORMAT_VERSION).encode())
                    txn.meta_put("plan", plan.to_json().encode())
                    txn.meta_put("params", json.dumps(params, sort_keys=True).encode())
                return Plan.from_json(txn.meta_get("plan"))

            plan = store.write(init)
        store.ensure({table_name(t): MULTI for t in range(len(plan.tables))})
        index = cls(store, plan)
        index.version = FORMAT_VERSION if version is None else int(version)
        if index.version in MIGRATABLE and not getattr(store, "readonly", False):
            migrate(index, index.version)
            index.version = FORMAT_VERSION
        return index

    def new_run(self, txn) -> int:
        """A new run number, marked open (with this host and process) until end_run: pages filed
        by a run that never ended (a killed crawl) may not have reached storage."""
        run = txn.counter("runs", 0) + 1
        txn.meta_put(_open_run(run), json.dumps({"host": socket.gethostname(), "pid": os.getpid()}).encode())
        return run

    def end_run(self, txn, run: int) -> None:
        txn.meta_delete(_open_run(run))

    def run_killed(self, txn, run: int) -> bool:
        """The run never ended and its process is gone. A run that ended (or predates the marker)
        is not; nor is one still running (another crawl on this index), nor one on another host."""
        marker = txn.meta_get(_open_run(run))
        if marker is None:
            return False
        try:
            who = json.loads(marker)
            if who.get("host") != socket.gethostname():
                return False
            os.kill(int(who["pid"]), 0)
        except ProcessLookupError:
            return True
        except (ValueError, TypeError, KeyError, AttributeError, PermissionError, OSError):
            return False  # unreadable, or alive under another user: not known to be killed
        return False

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

    def candidates_many(self, txn, fps) -> list[list[tuple[int, int]]]:
        """candidates() for a batch: one read per table for the whole batch, not one per page."""
        fps = np.asarray(fps, dtype=np.uint64)
        if not hasattr(txn.raw, "values_batch"):  # a store without batch reads
            return [self.candidates(txn, int(fp)) for fp in fps.tolist()]
        prefixes = self.plan.prefixes(fps)
        hits_q, hits_fp, hits_d = [], [], []
        for table in range(len(self.plan.tables)):
            size = self.plan.key_bytes(table)
            # queries sharing a key go in later rounds, so that in a round each entry has one query
            order = np.argsort(prefixes[table], kind="stable")
            ranked = prefixes[table][order]
            first = np.flatnonzero(np.concatenate(([True], ranked[1:] != ranked[:-1])))
            rank = np.arange(order.size) - np.repeat(first, np.diff(np.concatenate((first, [order.size]))))
            for r in range(int(rank.max()) + 1 if rank.size else 0):
                queries = order[rank == r]  # sorted by key, keys distinct
                raw = ranked[rank == r].astype(">u8").tobytes()
                keys = [raw[i + 8 - size:i + 8] for i in range(0, len(raw), 8)]
                which, found_counts, stored = txn.raw.values_batch(table_name(table), keys)
                if not stored.size:
                    continue
                q_entry = queries[np.repeat(which, found_counts)]
                dist = np.bitwise_count(stored ^ fps[q_entry])
                near = np.flatnonzero(dist <= self.plan.k)
                hits_q.append(q_entry[near]), hits_fp.append(stored[near]), hits_d.append(dist[near])
        out: list[list[tuple[int, int]]] = [[] for _ in range(fps.size)]
        if hits_q:
            seen = set(zip(np.concatenate(hits_q).tolist(), np.concatenate(hits_d).tolist(),
                           np.concatenate(hits_fp).tolist()))
            for q, d, f in sorted(seen):
                out[q].append((f, d))
        return out

    def sketch_candidates(self, txn, sketch: np.ndarray, probes: int) -> list[int]:
        """Doc ids sharing one of the `probes` smallest shingle hashes, most shared first.

        Two pages with resemblance J share their single smallest hash with probability J, so a
        few probes find copies whose simhash moved more than k bits (edits, truncation).
        """
        lists = []
        for key in _keys8(sketch[:probes]):
            docs = txn.postings(key, POSTING_LIMIT)
            if docs is not None and docs.size:
                lists.append(docs)
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

    def add(self, txn, record: DocRecord, digest: bytes | None = None, probes: int = 0, exact: bool = True) -> int:
        """File a kept page. `digest` is kept in the record (a revisit compares it); `exact`:
        also file it in the exact table (off for a page a guard kept beside its match)."""
        doc_id = txn.counter("next_id", 1)
        record.doc_id = doc_id
        record.time = record.time or time.time()
        # what remove() needs to undo every entry below
        record.extras = {**record.extras, Extra.PROBES: bytes([min(probes, 255)])}
        if digest is not None:
            record.extras[Extra.DIGEST] = bytes(digest)
        digest = digest if exact else None
        txn.doc_put(doc_id, record.encode())
        if record.url:  # the URL's latest kept page (an item without a URL has no entry)
            txn.url_put(url_key(record.url), doc_id)
        txn.time_add(int(record.time), doc_id)
        txn.fp_add(record.fingerprint, doc_id)
        if digest is not None:
            txn.exact_put(digest, doc_id)
        for table, key in enumerate(self.plan.keys(record.fingerprint)):
            txn.bucket_add(table, key, record.fingerprint)
        for value in record.sketch[:probes].tolist():
            txn.posting_add(u64(value), doc_id, POSTING_LIMIT)
        return doc_id

    def remove(self, txn, doc_id: int) -> bool:
        """Take a page out of every database; its fingerprint leaves the tables with its last page."""
        doc = self.doc(txn, doc_id)
        if doc is None:
            return False
        txn.doc_delete(doc_id)
        key = url_key(doc.url) if doc.url else None
        if key is not None and txn.url_get(key) == doc_id:
            txn.url_delete(key)
        txn.time_remove(int(doc.time), doc_id)
        txn.fp_remove(doc.fingerprint, doc_id)
        if not txn.fp_docs(doc.fingerprint):
            for table, key in enumerate(self.plan.keys(doc.fingerprint)):
                txn.bucket_remove(table, key, doc.fingerprint)
        digest = doc.extras.get(Extra.DIGEST)
        if digest is not None and txn.exact_get(digest) == doc_id:
            txn.exact_delete(digest)
        probes = doc.extras.get(Extra.PROBES, b"\x00")[0]
        for value in doc.sketch[:probes].tolist():
            txn.posting_remove(u64(value), doc_id)
        return True

    def expire(self, txn, before: float, limit: int) -> int:
        """Remove up to `limit` pages kept before time `before`, oldest first; how many were."""
        old = txn.time_oldest(int(before), limit)
        for _, doc_id in old:
            if not self.remove(txn, doc_id):
                txn.time_remove(_, doc_id)  # a stale time entry
        return len(old)


MIGRATE_BATCH = 10_000


def migrate(index: NearDupIndex, version: int) -> int:
    """Bring an index of an older format up to FORMAT_VERSION in place; how many records were
    read. 3 -> 4: the URL table, filled from the kept records. Format 3 could keep several
    records for one URL (a page that changed a lot was kept again): the newest is the URL's page,
    the older ones are removed, as an update removes them now, so that no revisit matches its own
    URL's old text. In batches of write transactions; the format is bumped by the last, so an
    interrupted migration starts again on the next open."""
    store = index.store
    if version != 3:
        raise StoreFormat(f"the index at {store.location} has format version {version}: cannot migrate it")
    logger.info("crawler-dedup: migrating the index at %s from format %d to %d (adding the URL table)",
                store.location, version, FORMAT_VERSION)
    after, seen, older = 0, 0, []
    while True:
        def batch(txn, after=after):
            rows, replaced = txn.doc_scan(after, MIGRATE_BATCH), []
            for doc_id, raw in rows:  # in id order: a URL's newest record comes last
                url = DocRecord.decode(raw, doc_id).url
                if not url:  # (an item without a URL: no URL entry, as add() files it)
                    continue
                key = url_key(url)
                previous = txn.url_get(key)
                if previous is None or previous < doc_id:
                    txn.url_put(key, doc_id)
                    if previous is not None:
                        replaced.append(previous)
                elif previous > doc_id:  # a migration run before and cut short filed the newer one
                    replaced.append(doc_id)
            return (rows[-1][0] if rows else after), len(rows), replaced
        after, count, replaced = index.write(batch)
        seen += count
        older += replaced
        if count < MIGRATE_BATCH:
            break
    for start in range(0, len(older) + 1, MIGRATE_BATCH):
        def remove(txn, ids=older[start:start + MIGRATE_BATCH], last=start + MIGRATE_BATCH > len(older)):
            for doc_id in ids:
                index.remove(txn, doc_id)
            if last:
                txn.meta_put("format", str(FORMAT_VERSION).encode())
        index.write(remove)
    logger.info("crawler-dedup: migrated %d records; %d older records of a URL kept again removed", seen, len(older))
    return seen
