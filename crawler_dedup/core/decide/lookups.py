"""Steps 5-6's reads for one page inside its write transaction: what the rules (rules.py) look at.

`TxnLookups` is the index's side of the rules' `Lookups` protocol: the URL's entry, the exact
entry, the candidates (simhash neighbours, sketch postings, the site's page under the same
headline), the learned template lines and the site's lines. A test can hand the rules any
object with these methods instead.
"""

from __future__ import annotations

import logging

from ...exceptions import StoreDamaged
from ..page.boilerplate import template_share, text_lines
from ..page.title import headline_keys
from ..index.neardup import NearDupIndex
from ..index.txn import IndexTxn
from ..index.records import DocRecord
from .sitelines import SitePage

logger = logging.getLogger(__name__)

MAX_VERIFIED = 64  # candidates verified per page at most (a flood means a bad plan, not more work)


class SiteInTxn:
    """sitelines.SitePage bound to the page's transaction (rules.SiteEvidence)."""

    def __init__(self, site: SitePage, txn: IndexTxn, shingle: int):
        self.page, self.txn, self.shingle = site, txn, shingle

    def compare(self, doc: DocRecord):
        return self.page.compare(self.txn, doc, self.shingle)

    def boilerplate_shares(self, doc: DocRecord) -> tuple[float | None, float | None]:
        return self.page.boilerplate_shares(self.txn, doc)

    def site_parts(self, doc: DocRecord) -> tuple[frozenset, frozenset]:
        return self.page.site_parts(self.txn, doc)

    def prefetch(self, docs: list[DocRecord]) -> None:
        self.page.prefetch(self.txn, docs)


class TxnLookups:
    """What the rules read about one page, in its transaction."""

    def __init__(self, index: NearDupIndex, txn: IndexTxn, config, site: SitePage | None):
        self.index, self.txn, self.config, self._site = index, txn, config, site
        self.site = SiteInTxn(site, txn, config.shingle) if site is not None else None

    def prefetch(self, url: str | None, fp, title: str | None = None) -> None:
        """Everything the page's decision reads first, in one go (a networked store's round trip)."""
        self.prefetch_first(url, fp, title)
        if self.txn.reads_ahead:  # (three round trips in all, not one a step)
            self.prefetch_records(url, fp, self.prefetch_near(fp))

    def prefetch_first(self, url: str | None, fp, title: str | None = None) -> None:
        """The page's entries: URL, exact copy, buckets, postings, template, site and headline lines."""
        cfg, site = self.config, self._site
        self.index.prefetch(self.txn, url, fp.fingerprint, fp.digest, fp.sketch, cfg.sketch_probes,
                            fp.template if cfg.boilerplate else None, site.keys if site is not None else None,
                            site.title_key if site is not None else None,
                            headline_keys(title) if cfg.visible_containment else None)

    def prefetch_near(self, fp) -> list[int]:
        """The near fingerprints (read from the buckets) whose doc ids the rules read next, hinted."""
        near = [f for f, _ in self.index.candidates(self.txn, fp.fingerprint)]
        if near:
            self.txn.prefetch_more(fps=near)
        return near

    def prefetch_records(self, url: str | None, fp, near: list[int]) -> None:
        """The records the rules read next (the URL's kept page, the exact copy, the candidates),
        hinted with their claims."""
        index, txn = self.index, self.txn
        ids = [d for d in (index.url_id(txn, url) if url else None, txn.exact_get(fp.digest) if fp.digest else None)
               if d is not None]
        ids += self._candidate_ids(fp, near, titled=False)[:MAX_VERIFIED]
        ids = list(dict.fromkeys(ids))
        txn.prefetch_more(doc_ids=ids, claims=ids)  # (on a store with claims: they ride with the records)

    def headed(self, title: str | None) -> list[DocRecord]:
        return self.index.headed(self.txn, title)

    def by_url(self, url: str) -> DocRecord | None:
        return self.index.by_url(self.txn, url)

    def run_killed(self, run: int) -> bool:
        return self.index.run_killed(self.txn, run)

    def exact(self, digest: bytes) -> DocRecord | None:
        return self.index.exact(self.txn, digest)

    def template_share(self, text: str, words: int) -> float | None:
        """The share of a text's words in lines kept pages showed outside their own (DEDUP_BOILERPLATE)."""
        lines = text_lines(text)
        if not lines:
            return None
        counts = self.index.boilerplate_counts(self.txn, [key for key, _ in lines])
        return template_share(lines, counts, words)

    def candidates(self, fp) -> list[DocRecord]:
        """Kept pages to verify: simhash neighbours within k (nearest first), then pages sharing
        one of the smallest shingle hashes (most shared first), then the page of the site under
        the same headline; at most MAX_VERIFIED."""
        index, txn = self.index, self.txn
        ids = self._candidate_ids(fp, [f for f, _ in index.candidates(txn, fp.fingerprint)])
        out: list[DocRecord] = []
        for start in range(0, len(ids), MAX_VERIFIED):  # read in one go; more only when records are gone
            batch = ids[start:start + MAX_VERIFIED]
            for doc_id, raw in zip(batch, txn.doc_get_many(batch)):
                doc = readable(raw, doc_id)
                if doc is not None:
                    out.append(doc)
                    if len(out) >= MAX_VERIFIED:
                        return out
        return out

    def _candidate_ids(self, fp, near: list[int], titled: bool = True) -> list[int]:
        """The candidates' doc ids in the order they are verified (first occurrence). `titled`
        False: the headline's pages unfiltered (prefetch runs before a claim limits what it sees)."""
        index, txn = self.index, self.txn
        ids = [d for docs in txn.fp_docs_many(near) for d in docs] if near else []
        if self.config.sketch_probes:
            ids += index.sketch_candidates(txn, fp.sketch, self.config.sketch_probes)
        if self._site is not None:
            if titled:
                ids += self._site.titled(txn)
            elif self._site.title_key is not None:
                ids += txn.title_docs(self._site.title_key)
        return list(dict.fromkeys(ids))


_said = [False]  # (one line a process: a damaged file has many damaged records)


def readable(raw: bytes | None, doc_id: int) -> DocRecord | None:
    """A candidate's record, or None when gone or damaged: a damaged record cannot be verified as a
    match, so the page is decided on the others (said once in the log; `index verify` finds the
    records, `index rebuild` salvages what can be read)."""
    if raw is None:
        return None
    try:
        return DocRecord.decode(raw, doc_id)
    except StoreDamaged as exc:
        if not _said[0]:
            _said[0] = True
            logger.warning("crawler-dedup: %s; pages whose candidates it is are decided without it "
                           "(further damaged candidates are not logged)", exc)
        return None



def read_ahead(index: NearDupIndex, txn: IndexTxn, config, pages: list, site_of) -> list[TxnLookups]:
    """A batch's pages' lookups (`pages`: the Deduplicator's Pending; `site_of(verdict, fp)`: a
    page's SitePage), their first reads made for all of them at once: each step for every page
    in one round trip on a networked store (three for the batch, not three a page). Only a hint:
    what a page's decision reads is read then if it is not here."""
    looks = [TxnLookups(index, txn, config, site_of(p.verdict, p.fp)) for p in pages]
    with txn.gathered():
        for look, p in zip(looks, pages):
            look.prefetch_first(p.verdict.url, p.fp, p.verdict.title)
    if txn.reads_ahead:
        with txn.gathered():
            nears = [look.prefetch_near(p.fp) for look, p in zip(looks, pages)]
        with txn.gathered():
            for look, p, near in zip(looks, pages, nears):
                look.prefetch_records(p.verdict.url, p.fp, near)
    return looks
