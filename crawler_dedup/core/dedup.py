"""Steps 1-8 for one page: `Deduplicator.check(url, html|text) -> Verdict`. No Scrapy here.

The Deduplicator owns the index and runs each decision in a write transaction: read what the
index holds for the page (its URL's entry, the exact and near candidates), apply the pure rules
of decide.py, and file the page when it is kept.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np

from ..config import DedupConfig
from ..exceptions import DedupError, StoreError
from ..stores import make_store
from .boilerplate import collapsed, template_keys, text_lines
from .churn import churn_digest, mask
from .decide import (
    Match,
    exact_match,
    near_match,
    supersedes,
    thresholds_for,
    unchanged,
)
from .extract import canonical_link, page_title
from .fingerprint import (
    Fingerprinted,
    extract_and_fingerprint,
    extract_step,
    fingerprint,
    fp_hex,
)
from .index import DocRecord, Extra, IndexTxn, NearDupIndex, canonical_url
from .records import RECORD_EXTRAS
from .plugins import Plugin, conceptual_plugin, feature_plugin, is_pure
from .sitelines import KeptLines, SitePage
from .tables import choose_plan
from .verdict import Action, Failure, Guard, Reason, Revisit, Skip, Stage, Step, Verdict
from .verify import make_verifier

logger = logging.getLogger(__name__)

EXPIRE_BATCH = 4  # expired pages removed per page kept (more than one: the index shrinks back)
MAX_VERIFIED = 64  # candidates verified per page at most (a flood means a bad plan, not more work)

__all__ = ["Deduplicator", "Pending", "Verdict", "extract_and_fingerprint", "extract_step", "fp_hex"]


@dataclass(frozen=True)
class Pending:
    """A prepared page waiting for its decision (Deduplicator.decide_many)."""

    verdict: Verdict
    fp: Fingerprinted
    stage: Stage
    now: float


class Deduplicator:
    """Owns the index; one per process. Use as a context manager or call open()/close()."""

    def __init__(self, config: DedupConfig | None = None, store=None, **overrides):
        if config is not None and overrides:  # a config plus a few changes, checked like settings
            base = {k: v for k, v in config.__dict__.items() if k != "extra"}
            config = DedupConfig.from_settings({}, **{**base, **overrides})
        self.config = config or DedupConfig.from_settings({}, **overrides)
        self._store = store
        self.verifier = make_verifier(self.config.verifier)
        self.features = feature_plugin(self.config)
        self.conceptual = conceptual_plugin(self.config)
        # the plugins with state to load, undo and save (none by default)
        self.plugins: list[Plugin] = [p for p in (self.features, self.conceptual) if not p.pure]
        self.pure = is_pure(self.config)
        # what the verifier keeps per page: a kept page without it cannot stand in for a page (known())
        try:
            self._verifier_keys: set[str] | None = set(self.verifier.keep(["a", "b", "c"], np.arange(1, dtype=np.uint64)))
        except Exception:  # a Verifier of one's own that wants real pages: no fast path
            self._verifier_keys = None
        self.commits = 0  # write transactions that decided pages and committed
        self.index: NearDupIndex | None = None
        self.run = 0
        self._logged: set[str] = set()
        self._kept_lines = KeptLines()  # kept pages' lines, recently compared (sitelines.py)

    # -- lifecycle -------------------------------------------------------------------------
    def open(self, new_run: bool = True) -> "Deduplicator":
        """Open the index; `new_run` numbers this process's decisions as a new run."""
        if self.index is None:
            store = self._store or make_store(self.config)
            plan = lambda: choose_plan(self.config.k, self.config.expected_pages)  # noqa: E731
            params = {"shingle": self.config.shingle, "features": self.config.features,
                      "weighting": self.config.weighting}
            index = self.index = NearDupIndex.open(store, self.config.k, plan, params)
            if new_run:
                self.run = index.write(index.new_run)
            for plugin in self.plugins:
                index.read(plugin.load)
        return self

    def close(self) -> None:
        index = self.index
        if index is not None:
            try:
                for plugin in self.plugins:
                    if plugin.unsaved():
                        index.write(plugin.save)
                if self.run:  # ended: what it passed on was handed to storage
                    index.write(lambda txn: index.end_run(txn, self.run))
            except DedupError as exc:  # the store went away (a networked one): the run stays open, as if killed
                logger.warning("crawler-dedup could not close the run on %s: %s", index.store.location, exc)
            finally:
                index.store.close()
                self.index = None

    def __enter__(self):
        return self.open()

    def __exit__(self, *exc):
        self.close()

    # -- steps 1-4 -------------------------------------------------------------------------
    def fingerprint(self, text: str) -> Fingerprinted | Skip:
        """Steps 2-4, or why the text is not checked (Skip.TOO_SHORT, Skip.NOTICE)."""
        return fingerprint(text, self.config, self.features, self.verifier, self.conceptual)

    def known(self, body: bytes) -> Fingerprinted | None:
        """The fast path: a kept page whose response had these very bytes (fingerprint.body_digest)
        gives this one's steps 1-4 without extraction: the same bytes extract to the same text,
        so what it stored (fingerprint, sketch, digest, text) is this page's, and the decision
        that follows is the one extraction would give. Only where fingerprints depend on the text
        alone and the kept text is stored; None when not known (or on any doubt)."""
        if self.index is None or not self.pure or not self.config.store_text or self._verifier_keys is None:
            return None
        index = self.index
        try:
            doc = index.read(lambda txn: (lambda doc_id: None if doc_id is None else index.doc(txn, doc_id))(
                txn.body_get(body)))
        except (DedupError, OSError):
            return None
        if doc is None or doc.extras.get(Extra.BODY) != body or Extra.DIGEST not in doc.extras:
            return None
        text = doc.text
        extras = {k: v for k, v in doc.extras.items() if k not in RECORD_EXTRAS}
        if text is None or not self._verifier_keys <= set(extras):  # (kept under another DEDUP_VERIFIER)
            return None
        return Fingerprinted(text=text, title=doc.title, tokens=doc.tokens, fingerprint=doc.fingerprint,
                             sketch=doc.sketch, digest=doc.extras[Extra.DIGEST], shingles=doc.shingles,
                             extras=extras, body=body)

    def allowed(self, url: str) -> bool:
        return any(p.search(url) for p in self.config.allow)

    # -- steps 1-8 -------------------------------------------------------------------------
    def check(self, url: str, html: bytes | str | None = None, text: str | None = None, *,
              stage: Stage = Stage.RESPONSE, title: str | None = None, now: float | None = None,
              fingerprinted: Fingerprinted | Skip | None = None, never_drop: bool = False,
              canonical: str | None = None, body: bytes | None = None) -> Verdict:
        """Decide one page. Never raises on bad input or a failing step: the page is kept and
        `Verdict.error` says where it failed (fail open). `now`: the page's time (default: the
        clock), for DEDUP_WINDOW and the record. `fingerprinted`: steps 1-4 already done by
        extract_and_fingerprint (in a worker), with the same settings. `never_drop`: a page that
        must be kept (a start page the crawl follows links from) is still indexed when new, so
        its copies are caught; when it matches, it is kept and skipped as `never_drop`.
        `canonical`: the page's rel=canonical URL (found in `html` when not given). `body`: the
        digest of the response's bytes (fingerprint.body_digest), filed when the page is kept."""
        verdict, pending = self.prepare(url, html, text, stage=stage, title=title, now=now,
                                        fingerprinted=fingerprinted, never_drop=never_drop, canonical=canonical,
                                        body=body)
        return verdict if pending is None else self.decide_many([pending])[0]

    def prepare(self, url: str, html: bytes | str | None = None, text: str | None = None, *,
                stage: Stage = Stage.RESPONSE, title: str | None = None, now: float | None = None,
                fingerprinted: Fingerprinted | Skip | None = None,
                never_drop: bool = False, canonical: str | None = None,
                body: bytes | None = None) -> tuple[Verdict, Pending | None]:
        """Steps 1-4 of check(), without the index: (the final verdict, None) for a page kept
        without a lookup (allowed, skipped, failed), else (verdict, what decide_many takes)."""
        verdict = Verdict(url=url if isinstance(url, str) else str(url or ""), title=title, never_drop=never_drop,
                          canonical=canonical)
        try:
            when = time.time() if now is None else float(now)
            if self.allowed(verdict.url):
                return verdict.but(skipped=Skip.ALLOWED), None
            if canonical is None and self.config.canonical and isinstance(html, (str, bytes)):
                verdict = verdict.but(canonical=canonical_link(html, verdict.url))
            fp = fingerprinted
            if fp is None:
                verdict, fp = self._fingerprinted(verdict, html, text)
                if fp is None:
                    return verdict, None
            if isinstance(fp, str):  # a Skip
                return verdict.but(skipped=Skip(fp)), None
            if body is not None:
                fp.body = body
            if self.config.boilerplate and fp.template is None and isinstance(html, (str, bytes, bytearray)) and html:
                fp.template = template_keys(html, fp.text)  # (a worker found them already)
            excerpt = " ".join(fp.text[:600].split())  # a prefix of the whole text's join
            if len(excerpt) < 200:
                excerpt = " ".join(fp.text.split())
            verdict = verdict.but(fingerprint=fp.fingerprint, tokens=fp.tokens, excerpt=excerpt[:200])
            return verdict, Pending(verdict, fp, stage, when)
        except Exception as exc:  # a bug or hostile input must never drop or crash: keep
            return self.failed(verdict, Failure.INTERNAL, exc), None

    def _fingerprinted(self, verdict: Verdict, html, text) -> tuple[Verdict, Fingerprinted | Skip | None]:
        """Extract (unless given the text) and fingerprint; None when `verdict` is final."""
        if text is None:
            kind, value, title = extract_step(html, verdict.url, self.config.max_bytes, self.config.extract_mode)
            if kind == Step.ERROR:
                return self.failed(verdict, Failure.EXTRACT, value), None
            if kind == Step.SKIPPED:
                return verdict.but(skipped=value), None
            text = str(value)
            verdict = verdict.but(title=verdict.title or title)
        elif not isinstance(text, str):
            return verdict.but(skipped=Skip.BAD_INPUT), None
        elif verdict.title is None and html and isinstance(html, (str, bytes)):
            verdict = verdict.but(title=page_title(html))
        try:
            return verdict, self.fingerprint(text)
        except Exception as exc:
            return self.failed(verdict, Failure.FINGERPRINT, exc), None

    def decide_many(self, pages: list[Pending]) -> list[Verdict]:
        """Steps 5-8 for prepared pages, in order, in one write transaction and one durable
        commit (group commit): each page sees the pages kept before it, as if checked one by
        one. Fails open like check(): a store failure keeps them all; a failure on one page
        keeps that page only (the batch is run again, a transaction a page)."""
        if not pages:
            return []
        # a plugin that learns from kept pages: a page prepared before the earlier pages of its
        # batch were decided is fingerprinted again
        again = len(pages) > 1 and not self.pure

        def run(txn: IndexTxn) -> list[Verdict]:
            for plugin in self.plugins:
                plugin.attempt()  # a transaction run again (map grown) starts afresh
            out = []
            for page in pages:
                fp = self.fingerprint(page.fp.text) if again else page.fp
                if not isinstance(fp, Fingerprinted):  # (never: the same tokens)
                    fp = page.fp
                # (what came from the page's markup and bytes, which are not here)
                fp.template, fp.body, fp.lines = page.fp.template, page.fp.body, page.fp.lines
                out.append(self._decide(txn, page.verdict.but(fingerprint=fp.fingerprint), fp, page.stage, page.now))
            return out

        for plugin in self.plugins:
            plugin.start()
        try:
            if self.index is None:
                self.open()
            assert self.index is not None
            verdicts = self.index.write(run)
        except Exception as exc:
            for plugin in self.plugins:
                plugin.end(committed=False)  # undo what the aborted transaction did outside the store
            if isinstance(exc, (DedupError, OSError)):
                return [self.failed(page.verdict, Failure.STORE, exc) for page in pages]
            if len(pages) == 1:  # a bug: find its page, keep the others' decisions
                return [self.failed(pages[0].verdict, Failure.INTERNAL, exc)]
            return [self.decide_many([page])[0] for page in pages]
        for plugin in self.plugins:
            plugin.end(committed=True)
        self.commits += 1
        kept = sum(v.action != Action.DROP and v.doc_id is not None and not v.skipped for v in verdicts)
        if self.config.window and kept and getattr(self.index.store, "expire_apart", False):
            self._expire_apart(max(p.now for p in pages) - self.config.window, EXPIRE_BATCH * kept)
        return verdicts

    def _expire_apart(self, cutoff: float, limit: int) -> None:
        """A store whose writers run at once (Redis) removes expired pages in a transaction of its
        own: inside the page's, every writer would read the time table and conflict. Decisions do
        not wait for it (a page out of the window never matches); a failure is left for the next."""
        index = self.index
        assert index is not None
        try:
            index.write(lambda txn: index.expire(txn, cutoff, limit))
        except (DedupError, OSError) as exc:
            logger.debug("crawler-dedup: removing expired pages failed (%s); the next page tries again", exc)

    def _decide(self, txn: IndexTxn, verdict: Verdict, fp: Fingerprinted, stage: Stage, now: float) -> Verdict:
        """Lookup, verify and (when kept) insert, all inside one write transaction; a kept page
        also files its lines and headline under its site (sitelines.py)."""
        site = (SitePage.of(verdict.url, fp.text, verdict.title, fp.lines, self._kept_lines)
                if self.config.site_boilerplate and self.config.store_text else None)
        return self._decide_page(txn, verdict, fp, stage, now, site)

    def _decide_page(self, txn: IndexTxn, verdict: Verdict, fp: Fingerprinted, stage: Stage, now: float,
                     site: SitePage | None) -> Verdict:
        """Lookup, verify and (when kept) insert. A page whose URL is in the index is a revisit
        (DEDUP_REVISIT): never a copy of itself."""
        index, cfg = self.index, self.config
        assert index is not None
        cutoff = now - cfg.window if cfg.window else None
        index.prefetch(txn, verdict.url, fp.fingerprint, fp.digest, fp.sketch, cfg.sketch_probes,
                       fp.template if cfg.boilerplate else None, site.keys if site is not None else None,
                       site.title_key if site is not None else None)
        prior = index.by_url(txn, verdict.url) if verdict.url else None
        if prior is not None and stage == Stage.ITEM and prior.stage == Stage.RESPONSE and prior.run == self.run:
            # the middleware kept this very page earlier in this run; the item is that page
            return verdict.but(skipped=Skip.CHECKED_AS_RESPONSE, doc_id=prior.doc_id)
        replace_id: int | None = None
        if prior is not None and cutoff is not None and prior.time < cutoff:
            # out of the window: no longer in the index (removal may lag); replaced below
            replace_id, prior = prior.doc_id, None
        revisit = prior is not None and cfg.revisit != "drop"
        if prior is not None and revisit:
            verdict = verdict.but(kept_at=prior.time)
            same = unchanged(fp, prior, self._score)
            if same is not None:
                verdict = _matched(verdict, same, Action.KEEP).but(revisit=Revisit.UNCHANGED)
                if prior.run != self.run and index.run_killed(txn, prior.run):
                    # filed by a crawl that was killed: it may never have reached storage, pass it on
                    prior.run = self.run  # (once: if this run ends, the next crawl drops it)
                    txn.doc_put(int(prior.doc_id or 0), prior.encode())
                    return verdict.but(resent=True)
                if cfg.revisit == "update" and cfg.unchanged == "drop" and not verdict.never_drop:
                    text = fp.text if cfg.store_text and same.measure != "exact" else None
                    verdict = verdict.but(action=Action.FLAG if cfg.dry_run else Action.DROP, text=text)
                return verdict  # the index holds this text already
            replace_id = prior.doc_id
        thresholds = thresholds_for(cfg, fp.tokens)
        # (a revisit is never a copy of its own URL: older records of it, if any, are no match)
        match, guard = self._match(txn, verdict, fp, cutoff, thresholds, exclude=replace_id,
                                   own_url=verdict.url if revisit else None, site=site)
        verdict = verdict.but(thresholds=thresholds, guard=guard if match is None else None)
        if match is not None and cfg.boilerplate and match.reason != Reason.CONCEPTUAL and self._boilerplate(txn, fp):
            match, verdict = None, verdict.but(guard=Guard.BOILERPLATE)  # the match is on lines of no page
        replace_ids: list[int] = []
        if match is not None and cfg.canonical and supersedes(verdict.url, verdict.canonical, match.doc):
            verdict = verdict.but(superseded=_superseded(match, cfg.store_text))
            if cfg.dry_run:
                return verdict  # flagged only: the kept copy stays, this page is not filed
            replace_ids.append(int(match.doc.doc_id or 0))
            match = None
        if match is not None:
            if verdict.never_drop:
                return verdict.but(skipped=Skip.NEVER_DROP)
            if revisit:
                verdict = verdict.but(revisit=Revisit.COPY)
                if cfg.revisit == "keep":
                    match = None  # never drops a revisit: an update, though it copies another page
        if (match is not None and prior is None and stage == Stage.ITEM and match.doc.stage == Stage.RESPONSE
                and match.doc.run == self.run and verdict.url and match.doc.url == verdict.url):
            # (DEDUP_REVISIT=drop: no URL lookup above)
            return verdict.but(skipped=Skip.CHECKED_AS_RESPONSE, doc_id=match.doc.doc_id)
        if match is not None:
            flag_only = match.reason == Reason.CONCEPTUAL and cfg.conceptual == "flag"
            verdict = _matched(verdict, match, Action.FLAG if cfg.dry_run or flag_only else Action.DROP)
            verdict = verdict.but(text=fp.text if cfg.store_text else None)
            if not flag_only or cfg.dry_run:
                return verdict
            # a flagged conceptual duplicate is still a page of its own: it is kept and indexed
        if revisit:
            verdict = verdict.but(revisit=Revisit.UPDATED)  # (and replaces the URL's entry)
        if replace_id is not None:
            replace_ids.append(replace_id)
        for doc_id in replace_ids:  # an update, a superseded page or a stale entry: out, in this transaction
            index.remove(txn, doc_id)
        doc_id = index.add(txn, self._record(verdict, fp, stage, now), fp.digest, probes=cfg.sketch_probes,
                           exact=not verdict.guard, template=fp.template if cfg.boilerplate else None,
                           site_keys=site.keys if site is not None else None, body=fp.body)
        if verdict.action == Action.KEEP:
            verdict = verdict.but(doc_id=doc_id)
        if cutoff is not None and not getattr(index.store, "expire_apart", False):
            index.expire(txn, cutoff, EXPIRE_BATCH)  # a few expired pages out per page in: the index stays flat
        for plugin in self.plugins:
            plugin.kept(index, txn, doc_id, fp)
        return verdict

    def _record(self, verdict: Verdict, fp: Fingerprinted, stage: Stage, now: float) -> DocRecord:
        cfg = self.config
        record = DocRecord(url=verdict.url, fingerprint=fp.fingerprint, sketch=fp.sketch, tokens=fp.tokens,
                           time=now, shingles=fp.shingles, run=self.run, title=verdict.title, stage=stage,
                           extras=dict(fp.extras))  # a copy: a transaction run again starts from fp as prepared
        if cfg.store_text:
            record.set_text(fp.text)
        if not cfg.store_text and mask(fp.text) != fp.text:  # (with the text stored, compared from it)
            digest = churn_digest(fp.text)
            if digest != fp.digest:
                record.extras[Extra.CHURN] = digest
        if verdict.canonical and canonical_url(verdict.canonical) != canonical_url(verdict.url):
            record.extras[Extra.CANONICAL] = verdict.canonical.encode("utf-8", "surrogatepass")
        return record

    def _boilerplate(self, txn: IndexTxn, fp: Fingerprinted) -> bool:
        """The page's text is mostly lines that kept pages showed outside their own text."""
        assert self.index is not None
        lines = text_lines(fp.text)
        if not lines:
            return False
        counts = self.index.boilerplate_counts(txn, [key for key, _ in lines])
        return collapsed(lines, counts, fp.tokens)

    def _score(self, fp, doc: DocRecord) -> tuple[float, float]:
        return self.verifier.score(fp, doc, self.config)

    def _match(self, txn: IndexTxn, verdict: Verdict, fp: Fingerprinted, cutoff: float | None, thresholds,
               exclude: int | None = None, own_url: str | None = None,
               site: SitePage | None = None) -> tuple[Match | None, Guard | None]:
        """The kept page this one duplicates, and the guard that rejected one, if any.
        `exclude`: a doc id never matched (the URL's own earlier page, on a revisit); `own_url`:
        no page at this URL is matched either. Pages out of the window never match. `site`: the
        page's lines, to compare candidates without their sites' boilerplate."""
        index = self.index
        assert index is not None
        own = canonical_url(own_url) if own_url else None

        def usable(doc: DocRecord) -> bool:
            mine = doc.doc_id == exclude or (own is not None and canonical_url(doc.url) == own)
            return not mine and (cutoff is None or doc.time >= cutoff)

        exact = index.exact(txn, fp.digest)
        match, guarded = exact_match(fp, verdict.title, exact if exact is not None and usable(exact) else None, verdict.url)
        if match is not None:
            return match, None
        candidates = [doc for doc in self._candidates(txn, fp, site.titled(txn) if site else ()) if usable(doc)]
        content = headline = collapsed = None
        if site is not None:
            content = lambda doc: site.compare(txn, doc, self.config.shingle)  # noqa: E731
            headline = lambda doc: site.same_headline(txn, doc, self.config.shingle, exclude)  # noqa: E731
            collapsed = lambda doc: site.all_boilerplate(txn, doc)  # noqa: E731
        near, guard = near_match(fp, verdict.title, candidates, thresholds, self._score, self.verifier.name, verdict.url,
                                 content, headline, collapsed)
        if near is None:
            near = self.conceptual.match(fp, candidates)
        return near, Guard.TITLE if guarded else guard

    def _candidates(self, txn: IndexTxn, fp: Fingerprinted, titled: list[int] | tuple = ()) -> list[DocRecord]:
        """Kept pages to verify: simhash neighbours within k (nearest first), then pages sharing
        one of the smallest shingle hashes (most shared first), then the page of the site under
        the same headline (`titled`); at most MAX_VERIFIED."""
        index = self.index
        assert index is not None
        near = [f for f, _ in index.candidates(txn, fp.fingerprint)]
        ids = [d for docs in txn.fp_docs_many(near) for d in docs] if near else []
        if self.config.sketch_probes:
            ids += index.sketch_candidates(txn, fp.sketch, self.config.sketch_probes)
        ids += titled
        ids = list(dict.fromkeys(ids))  # first occurrence order
        out: list[DocRecord] = []
        for start in range(0, len(ids), MAX_VERIFIED):  # read in one go; more only when records are gone
            batch = ids[start:start + MAX_VERIFIED]
            for doc_id, raw in zip(batch, txn.doc_get_many(batch)):
                if raw is not None:
                    out.append(DocRecord.decode(raw, doc_id))
                    if len(out) >= MAX_VERIFIED:
                        return out
        return out

    def failed(self, verdict: Verdict, where: Failure, exc: BaseException | object) -> Verdict:
        """The page kept after a failure, logged once per kind (a broken store cannot flood the log)."""
        if where not in self._logged:
            self._logged.add(where)
            logger.warning("dedup %s failed, keeping %s (further %s errors are only counted): %s",
                           where, verdict.url, where, exc, exc_info=not isinstance(exc, StoreError))
        return verdict.kept_because(where)


def _matched(verdict: Verdict, match: Match, action: Action) -> Verdict:
    doc = match.doc
    return verdict.but(action=action, reason=match.reason, distance=match.distance,
                       similarity=round(match.similarity, 4), measure=match.measure, duplicate_of=doc.url,
                       duplicate_of_title=doc.title, duplicate_of_fingerprint=doc.fingerprint, doc_id=doc.doc_id)


def _superseded(match: Match, store_text: bool) -> dict:
    """What the drop log and the page_superseded signal say about a kept page replaced as its
    canonical URL's copy."""
    doc = match.doc
    return {"url": doc.url, "title": doc.title, "fingerprint": doc.fingerprint, "time": doc.time,
            "distance": match.distance, "similarity": round(match.similarity, 4), "measure": match.measure,
            "text": doc.text if store_text else None, "run": doc.run}
