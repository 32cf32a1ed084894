"""The index's words for a store transaction (`IndexTxn`), each a line or two over the generic
store contract (stores/base.py), and the tables the index keeps in its store."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import numpy as np

from ...stores.base import MULTI, SINGLE, Claim, from_u64, u64

# the index's tables in its store: meta; docs (doc id -> record); exact (content digest -> doc
# id); urls (key of the canonical URL -> doc id); fps (fingerprint -> doc ids); mins (each page's
# few smallest shingle hashes -> doc ids: candidates whose simhash moved too far); times
# (seconds -> doc ids, for the time window); tpl (a line kept pages showed outside their text ->
# the first of those pages: boilerplate.py); site (a line of extracted text under its site -> the
# kept pages that show it (their URLs' keys), a few: sitelines.py); titles (a site and headline -> the kept pages under
# it, two at most: sitelines.py); bodies (digest of a kept page's response bytes -> its doc id: the
# same bytes again are decided without extraction); heads (a part of a kept page's title -> the kept
# pages under it, a few: page/title.headline_keys: the candidates under a headline); fetches (key of the canonical URL
# -> its kept response's validators and copy: fetches.py, the conditional request); t000.. one per Manku permutation
# (permuted prefix -> the fingerprints in that bucket)
TABLES = {"meta": SINGLE, "docs": SINGLE, "exact": SINGLE, "urls": SINGLE,
          "fps": MULTI, "mins": MULTI, "times": MULTI, "tpl": MULTI,
          "site": MULTI, "titles": MULTI, "bodies": SINGLE, "heads": MULTI, "fetches": SINGLE}


def table_name(t: int) -> str:
    return "t%03d" % t


class IndexTxn:
    """The index's words for a store transaction: what NearDupIndex and the Deduplicator call,
    each a line or two over the generic contract (stores/base.py)."""

    def __init__(self, raw, tables: int = 0):
        self.raw, self._names = raw, [table_name(t) for t in range(tables)]
        self._gather: tuple[list, list] | None = None  # prefetches held for one read (gathered)

    def meta_get(self, name: str) -> bytes | None:
        return self.raw.get("meta", name.encode())

    def meta_put(self, name: str, value: bytes) -> None:
        self.raw.put("meta", name.encode(), value)

    def meta_delete(self, name: str) -> None:
        self.raw.delete("meta", name.encode())

    def counter(self, name: str, start: int) -> int:
        """Advance a counter; its value before (`start` when new)."""
        return self.raw.incr("meta", name.encode(), 1, start) - 1

    def next_doc_id_now(self) -> int | None:
        """The id the next kept page gets, without taking it (None: none handed out yet). A store
        that hands ids out of a counter of its own (Redis) says how far it went."""
        peek = getattr(self.raw, "sequence_peek", None)
        if peek is not None:
            done = peek("meta", b"next_id")
            return None if done is None else done + 1
        value = self.meta_get("next_id")
        return None if value is None else from_u64(value)

    def next_doc_id(self) -> int:
        """A new doc id (unique; Redis may skip some: stores/base.py `sequence`)."""
        return self.raw.sequence("meta", b"next_id", 1, 1) - 1

    def prefetch(self, url_key: bytes | None, digest: bytes | None, buckets: list[bytes], postings: list[bytes],
                 template: list[bytes] | None = None, site: list[bytes] | None = None,
                 titled: bytes | None = None, heads: list[bytes] | None = None, fp: int | None = None) -> None:
        """What a page's lookup reads first, in one go where the store can (Redis: one round trip);
        `fp`: the pages filed under its very fingerprint too."""
        single = ([("urls", bytes(url_key)), ("fetches", bytes(url_key))] if url_key is not None else []) + (
            [("exact", bytes(digest))] if digest is not None else [])
        self._prefetch(single, [*zip(self._names, buckets), *(("mins", k) for k in postings),
                                   *(("tpl", k) for k in template or []), *(("site", k) for k in site or []),
                                   *([("titles", titled)] if titled is not None else []),
                                   *(("heads", k) for k in heads or []),
                                   *([("fps", u64(fp))] if fp is not None else [])])

    @property
    def reads_ahead(self) -> bool:
        """Whether prefetch reads (a networked store): then the next steps' reads are hinted too."""
        return bool(getattr(self.raw, "reads_ahead", False))

    def prefetch_more(self, fps: list[int] = (), doc_ids: list[int] = (),  # type: ignore[assignment]
                      claims: list[int] = ()) -> None:  # type: ignore[assignment]
        """A hint: these fingerprints' doc ids and these records (and these pages' claims, on a
        store with claims) are read next (one round trip)."""
        single = [("docs", u64(d)) for d in doc_ids]
        if claims and hasattr(self.raw, "claim_places"):
            single += self.raw.claim_places(claims)
        self._prefetch(single, [("fps", u64(f)) for f in fps])

    def _prefetch(self, single: list[tuple[str, bytes]], multi: list[tuple[str, bytes]]) -> None:
        if self._gather is None:
            self.raw.prefetch(single, multi)
        else:
            self._gather[0].extend(single)
            self._gather[1].extend(multi)

    @contextmanager
    def gathered(self) -> Iterator[None]:
        """The prefetches made inside, read as one when it ends: several pages' reads of one
        step in one round trip (a batch's), not one a page. A read inside that needs a value
        reads it at once, as outside."""
        if self._gather is not None:  # (nested: the outer one reads)
            yield
            return
        gather: tuple[list, list] = ([], [])
        self._gather = gather
        try:
            yield
        finally:
            self._gather = None
        if gather[0] or gather[1]:
            self.raw.prefetch(*gather)

    def bucket_union(self, keys: list[bytes]) -> np.ndarray:
        return self.raw.union_u64(self._names[:len(keys)], keys)

    def bucket_add(self, table: int, key: bytes, fp: int) -> None:
        self.raw.add(self._names[table], key, u64(fp))

    def bucket_remove(self, table: int, key: bytes, fp: int) -> None:
        self.raw.remove(self._names[table], key, u64(fp))

    def postings_many(self, keys: list[bytes], limit: int) -> list[np.ndarray | None]:
        """Doc ids filed under each key; None for a key with more than `limit` (boilerplate).
        Counts first, so a boilerplate list is never read (LMDB: a count is one cursor step; a
        full list 200 values, and a page whose probes were all boilerplate read 1,600)."""
        counts = self.raw.value_counts("mins", keys)
        small = [k for k, n in zip(keys, counts) if n <= limit]
        lists = iter(self.raw.values_many("mins", small) if small else ())
        return [None if n > limit else _ids(next(lists)) for n in counts]

    def fp_docs_many(self, fps: list[int]) -> list[list[int]]:
        return [[from_u64(v) for v in vals] for vals in self.raw.values_many("fps", [u64(f) for f in fps])]

    def doc_get_many(self, doc_ids: list[int]) -> list[bytes | None]:
        return self.raw.get_many("docs", [u64(d) for d in doc_ids])

    def postings_add(self, keys: list[bytes], doc_id: int, limit: int) -> None:
        """File doc_id under each key whose list holds `limit` doc ids or fewer (a boilerplate
        shingle's list stops growing), reading the lists' sizes in one go."""
        for key, filed in zip(keys, self.raw.value_counts("mins", keys)):  # counts, not the lists
            if filed <= limit:
                self.raw.add("mins", key, u64(doc_id))

    def template_counts(self, keys: list[bytes]) -> list[int]:
        """How many kept pages showed each line outside their text (counted up to a few)."""
        return self.raw.value_counts("tpl", keys)

    def template_add(self, keys: list[bytes], doc_id: int, limit: int) -> None:
        """File doc_id under each line filed for `limit` pages or fewer (then it is known)."""
        for key, filed in zip(keys, self.raw.value_counts("tpl", keys)):
            if filed <= limit:
                self.raw.add("tpl", key, u64(doc_id))

    def site_holders(self, keys: list[bytes]) -> list[list[int]]:
        """The kept pages (their URLs' keys) filed under each site line."""
        return [[from_u64(v) for v in vals] for vals in self.raw.values_many("site", keys)] if keys else []

    def site_add(self, keys: list[bytes], holder: int, holders: list[list[int]], limit: int) -> None:
        """File a kept page (`holder`: its URL's key) under each site line that holds fewer than
        `limit` pages and not it yet (`holders`: site_holders of the keys, read in this transaction)."""
        value = u64(holder)
        for key, ids in zip(keys, holders):
            if len(ids) < limit and holder not in ids:
                self.raw.add("site", key, value)

    def site_remove(self, keys: list[bytes], holder: int) -> None:
        value = u64(holder)
        for key in keys:
            self.raw.remove("site", key, value)

    def claim(self, doc_id: int, quiet: bool = False) -> int:
        """The order of a filed page, from one counter (a store without transactions: claims.py);
        `quiet`: confirmed at once when no page claimed since its filing's first read (`quiet`)."""
        if quiet and hasattr(self.raw, "quiet"):  # (a store that offers it: stores/base.py)
            return self.raw.claim(doc_id, quiet=True)
        return self.raw.claim(doc_id)

    def mark_page(self) -> None:
        """A batch's next page begins (a store with claims files each page apart: what it read and
        wrote itself); nothing elsewhere."""
        mark = getattr(self.raw, "mark_page", None)
        if mark is not None:
            mark()

    def claim_ahead(self, pages: list[tuple[int, bool]]) -> None:
        """A batch's filed pages (doc id, quiet) claimed at once, in order, where the store can
        (one round trip); each page's `claim` then takes its own reply. A hint: else each claims then."""
        ahead = getattr(self.raw, "claim_ahead", None)
        if ahead is not None:
            ahead(pages)

    @property
    def quiet(self) -> bool:
        """The last claim confirmed its page without the rules run again: no page claimed between
        the filing's reads and it, or nothing the filing read changed since."""
        return bool(getattr(self.raw, "quiet", False))

    def claims(self, doc_ids: list[int]) -> list[Claim | None]:
        return self.raw.claims(doc_ids)

    def confirm(self, doc_id: int) -> None:
        """The filed page's second look is done: it stays (claims.py)."""
        self.raw.confirm(doc_id)

    def unclaim(self, doc_id: int) -> None:
        self.raw.unclaim(doc_id)

    def headed_docs(self, keys: list[bytes], limit: int) -> list[int]:
        """The kept pages filed under any of these title parts, first found first; a part with
        `limit` pages is a site's name or a stock title, no headline, and is left out."""
        counts = self.raw.value_counts("heads", keys)
        usable = [k for k, n in zip(keys, counts) if 0 < n < limit]
        found = [from_u64(v) for vals in (self.raw.values_many("heads", usable) if usable else []) for v in vals]
        return list(dict.fromkeys(found))

    def heads_add(self, keys: list[bytes], doc_id: int, limit: int) -> None:
        """File a kept page under its title's parts; a part's list stops growing at `limit`."""
        for key, filed in zip(keys, self.raw.value_counts("heads", keys)):
            if filed < limit:
                self.raw.add("heads", key, u64(doc_id))

    def heads_remove(self, keys: list[bytes], doc_id: int) -> None:
        for key in keys:
            self.raw.remove("heads", key, u64(doc_id))

    def title_docs(self, key: bytes) -> list[int]:
        return [from_u64(v) for v in self.raw.values("titles", key)]

    def title_add(self, key: bytes, doc_id: int, limit: int) -> None:
        if self.raw.value_count("titles", key) < limit:
            self.raw.add("titles", key, u64(doc_id))

    def title_remove(self, key: bytes, doc_id: int) -> None:
        self.raw.remove("titles", key, u64(doc_id))

    def posting_remove(self, key: bytes, doc_id: int) -> None:
        self.raw.remove("mins", key, u64(doc_id))

    def fp_docs(self, fp: int) -> list[int]:
        return [from_u64(v) for v in self.raw.values("fps", u64(fp))]

    def fp_add(self, fp: int, doc_id: int) -> None:
        self.raw.add("fps", u64(fp), u64(doc_id))

    def fp_remove(self, fp: int, doc_id: int) -> None:
        self.raw.remove("fps", u64(fp), u64(doc_id))

    def body_get(self, digest: bytes) -> int | None:
        value = self.raw.get("bodies", bytes(digest))
        return None if value is None else from_u64(value)

    def body_put(self, digest: bytes, doc_id: int) -> None:
        self.raw.put("bodies", bytes(digest), u64(doc_id))

    def body_delete(self, digest: bytes) -> None:
        self.raw.delete("bodies", bytes(digest))

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

    def fetch_get(self, key: bytes) -> bytes | None:
        return self.raw.get("fetches", bytes(key))

    def fetch_put(self, key: bytes, value: bytes) -> None:
        self.raw.put("fetches", bytes(key), value)

    def fetch_delete(self, key: bytes) -> None:
        self.raw.delete("fetches", bytes(key))

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
