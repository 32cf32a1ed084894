"""Steps 1-8 for one page: `Deduplicator.check(url, html|text) -> Verdict`. No Scrapy here.

The Deduplicator owns an index over the store it is given and runs each decision in a write
transaction: read what the index holds for the page (lookups.py), run the chain of rules
(rules.py), and apply the writes the deciding rule asks for (file a kept page).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..config import DedupConfig
from ..exceptions import ConfigError, DedupError, ModelError, StoreDamaged, StoreError
from .page.boilerplate import template_keys
from .page.extract import canonical_link, page_title
from .page.fingerprint import Fingerprinted, extract_parsed, extract_step, fingerprint, fingerprint_html, fp_hex
from .page.plugins import Plugin, conceptual_plugin, feature_plugin, is_pure
from .page.site import canonical_url
from .page.visible import page_view
from .index import held, revalidation
from .index.fetches import Fetch
from .index.neardup import RUN_LEASE, NearDupIndex, deciding
from .index.records import DocRecord, Extra, canonical_key
from .index.tables import choose_plan
from .index.txn import IndexTxn
from .decide.churn import churn_digest, mask
from .decide.claims import AGAIN_MAX, second_looks, unsettled
from .decide.lookups import TxnLookups, read_ahead
from .decide.matching import thin_view
from .decide.measures import KeptTexts
from .decide.model import for_settings as model_for
from .decide.rules import RULES, Decision, Judging, Page, decide
from .decide.sitelines import KeptLines, SitePage
from .decide.verify import make_verifier
from .verdict import Action, Failure, Skip, Stage, Step, Verdict

logger = logging.getLogger(__name__)

EXPIRE_BATCH = 4  # expired pages removed per page kept (more than one: the index shrinks back)

__all__ = ["Deduplicator", "Pending", "Verdict", "extract_and_fingerprint", "extract_step", "fp_hex"]


def extract_and_fingerprint(html, url: str, config) -> tuple[Step, object, str | None]:
    """Steps 1-4 in a worker process (page/fingerprint.fingerprint_html), with the verifier
    DEDUP_VERIFIER names: chosen here, above the page's steps, and handed down."""
    return fingerprint_html(html, url, config, make_verifier(config.verifier))


@dataclass(frozen=True)
class Pending:
    """A prepared page waiting for its decision (Deduplicator.decide_many)."""

    verdict: Verdict
    fp: Fingerprinted
    stage: Stage
    now: float
    fetched: Fetch | None = None  # the response's validators (and body) for the URL's next request


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
        self.run, self._renewed = 0, 0.0
        self.settings_since = 0  # the first run of the deciding settings in force (revalidation.settings_since)
        self._logged: set[str] = set()
        self._kept_lines = KeptLines()  # kept pages' lines, recently compared (sitelines.py)
        self._kept_texts = KeptTexts()  # kept pages' texts, recently measured (measures.py)
        try:  # the score: DEDUP_MODEL's (else the shipped one), at DEDUP_SCORE_THRESHOLD
            self.model = model_for(self.config)
        except ModelError as exc:
            raise ConfigError("DEDUP_MODEL", self.config.model or "(the model shipped with the package)",
                              f"a score model file ({exc})") from None
        self.observe: Callable | None = None  # (page, weighed candidates) of each decision: benchmarks/fit_score.py records them
        self.rules = RULES  # the chain (rules.py); a benchmark may put a rule of its own in it
        self.filed: int | None = None  # the doc id the last decision filed
        self._looked: DocRecord | None = None  # the last decision's URL's kept page: claims
        self._recheck: int | None = None  # a killed run's page passed on again that never had its second look: claims
        self._deferred: tuple[int, ...] = ()  # what the last filed page replaces, where claims take it out

    # -- lifecycle -------------------------------------------------------------------------
    def open(self, new_run: bool = True) -> "Deduplicator":
        """Open the index; `new_run` numbers this process's decisions as a new run."""
        if self.index is None:
            store = self._store if self._store is not None else self.make_store()
            plan = lambda: choose_plan(self.config.k, self.config.expected_pages)  # noqa: E731
            params = {"shingle": self.config.shingle, "features": self.config.features,
                      "weighting": self.config.weighting}
            index = self.index = NearDupIndex.open(store, self.config.k, plan, params)
            if new_run:
                digest = revalidation.settings_digest(self.config)

                def begin(txn) -> tuple[int, int]:
                    run = index.new_run(txn)
                    return run, revalidation.settings_since(txn, digest, run)
                self.run, self.settings_since = index.write(begin)
                self._renewed = time.time()
            for plugin in self.plugins:
                index.read(plugin.load)
        return self

    def make_store(self):
        """The store to open when none was given. The core builds none: `crawler_dedup.Deduplicator`
        builds the one DEDUP_BACKEND names."""
        raise DedupError("this Deduplicator was given no store: pass store=..., or use crawler_dedup.Deduplicator, "
                         "which builds the store DEDUP_BACKEND names")

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
        if doc is None or doc.extras.get(Extra.BODY) != body:
            return None
        fp = revalidation.as_fingerprinted(doc)
        if fp is None or not fp.text or not self._verifier_keys <= set(fp.extras):  # (kept under another DEDUP_VERIFIER)
            return None
        fp.body = body
        return fp

    def fetch_entry(self, url: str) -> tuple[Fetch, bool] | None:
        """What the index keeps of the URL's last response, and whether its run was killed (revalidation.py)."""
        return revalidation.entry(self.index, self.run, url)

    def not_modified(self, url: str, sent: dict[str, str], now: float | None = None):
        """A 304 to the conditional request that sent `sent`, as steps 1-4 (revalidation.py)."""
        return revalidation.not_modified(self.index, self.config, self.run, url, sent, now)

    def allowed(self, url: str) -> bool:
        return any(p.search(url) for p in self.config.allow)

    # -- steps 1-8 -------------------------------------------------------------------------
    def check(self, url: str, html: bytes | str | None = None, text: str | None = None, *,
              stage: Stage = Stage.RESPONSE, title: str | None = None, now: float | None = None,
              fingerprinted: Fingerprinted | Skip | None = None, never_drop: bool = False,
              canonical: str | None = None, body: bytes | None = None, fetched: Fetch | None = None) -> Verdict:
        """Decide one page. Never raises on bad input or a failing step: the page is kept and
        `Verdict.error` says where it failed (fail open). `now`: the page's time (default: the
        clock), for DEDUP_WINDOW and the record. `fingerprinted`: steps 1-4 already done by
        extract_and_fingerprint (in a worker), with the same settings. `never_drop`: a page that
        must be kept (a start page the crawl follows links from) is still indexed when new, so
        its copies are caught; when it matches, it is kept and skipped as `never_drop`.
        `canonical`: the page's rel=canonical URL (found in `html` when not given). `body`: the
        digest of the response's bytes (fingerprint.body_digest), filed when the page is kept.
        `fetched`: what to keep of the response for the URL's next conditional request (fetches.py)."""
        verdict, pending = self.prepare(url, html, text, stage=stage, title=title, now=now,
                                        fingerprinted=fingerprinted, never_drop=never_drop, canonical=canonical,
                                        body=body, fetched=fetched)
        return verdict if pending is None else self.decide_many([pending])[0]

    def prepare(self, url: str, html: bytes | str | None = None, text: str | None = None, *,
                stage: Stage = Stage.RESPONSE, title: str | None = None, now: float | None = None,
                fingerprinted: Fingerprinted | Skip | None = None,
                never_drop: bool = False, canonical: str | None = None,
                body: bytes | None = None, fetched: Fetch | None = None) -> tuple[Verdict, Pending | None]:
        """Steps 1-4 of check(), without the index: (the final verdict, None) for a page kept
        without a lookup (allowed, skipped, failed), else (verdict, what decide_many takes)."""
        verdict = Verdict(url=url if isinstance(url, str) else str(url or ""), title=title, never_drop=never_drop,
                          canonical=canonical)
        try:
            when = time.time() if now is None else float(now)
            if self.allowed(verdict.url):
                return verdict.but(skipped=Skip.ALLOWED), None
            if canonical is None and self.config.canonical and isinstance(html, (str, bytes)):
                verdict = verdict.but(canonical=canonical_link(html, verdict.url) or "")  # ("": none, known)
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
            if (self.config.visible_containment and fp.view is None and not fp.known
                    and isinstance(html, (str, bytes, bytearray)) and html):
                # (the fast path skips it: the same bytes as a kept page match that page exactly)
                fp.view = page_view(html, fp.text)
            excerpt = " ".join(fp.text[:600].split())  # a prefix of the whole text's join
            if len(excerpt) < 200:
                excerpt = " ".join(fp.text.split())
            verdict = verdict.but(fingerprint=fp.fingerprint, tokens=fp.tokens, excerpt=excerpt[:200])
            return verdict, Pending(verdict, fp, stage, when, fetched)
        except Exception as exc:  # a bug or hostile input must never drop or crash: keep
            return self.failed(verdict, Failure.INTERNAL, exc), None

    def _fingerprinted(self, verdict: Verdict, html, text) -> tuple[Verdict, Fingerprinted | Skip | None]:
        """Extract (unless given the text) and fingerprint; None when `verdict` is final."""
        tree = None
        if text is None:
            kind, value, title, tree = extract_parsed(html, verdict.url, self.config.max_bytes,
                                                      self.config.extract_mode)
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
            fp = self.fingerprint(text)
        except Exception as exc:
            return self.failed(verdict, Failure.FINGERPRINT, exc), None
        if tree is not None and self.config.visible_containment and isinstance(fp, Fingerprinted):
            fp.view = page_view(html, fp.text, tree=tree)  # (the parse extraction made: one a page)
        return verdict, fp

    def decide_many(self, pages: list[Pending], _again: int = 0) -> list[Verdict]:
        """Steps 5-8 for prepared pages, in order, in one write transaction and one durable
        commit (group commit): each page sees the pages kept before it, as if checked one by
        one. Fails open like check(): a store failure keeps them all; a failure on one page
        keeps that page only (the batch is run again, a transaction a page)."""
        with deciding(self.index):
            return self._decide_many(pages, _again) if pages else []

    def _decide_many(self, pages: list[Pending], _again: int) -> list[Verdict]:
        again = len(pages) > 1 and not self.pure  # (a plugin that learns from kept pages: fingerprinted again)

        filed: list[tuple[int, int, DocRecord | None, tuple[int, ...]]] = []  # (page, doc id, its URL's kept page, what it replaces) of the pages filed: claims

        def run(txn: IndexTxn) -> list[Verdict]:
            for plugin in self.plugins:
                plugin.attempt()  # a transaction run again (map grown) starts afresh
            out = []
            filed.clear()
            looks: list = ([None] * len(pages) if len(pages) < 2 or not txn.reads_ahead or self.index is None
                           else read_ahead(self.index, txn, self.config, pages, self._site_of))
            for page, look in zip(pages, looks):
                fp = self.fingerprint(page.fp.text) if again else page.fp
                if not isinstance(fp, Fingerprinted):  # (never: the same tokens)
                    fp = page.fp
                # (what came from the page's markup and bytes, which are not here)
                fp.template, fp.body, fp.lines, fp.view = page.fp.template, page.fp.body, page.fp.lines, page.fp.view
                self.filed = self._recheck = None
                txn.mark_page() if len(pages) > 1 else None  # (a store with claims files each page apart)
                out.append(self._decide(txn, page.verdict.but(fingerprint=fp.fingerprint), fp, page.stage, page.now,
                                        page.fetched, look if fp.fingerprint == page.fp.fingerprint else None))
                if self.filed is not None:
                    filed.append((len(out) - 1, self.filed, self._looked, self._deferred))
                elif self._recheck is not None:
                    filed.append((len(out) - 1, self._recheck, None, ()))
            if self.run and time.time() - self._renewed > RUN_LEASE / 4:  # (not renewed for RUN_LEASE: killed)
                self._renewed = time.time()
                self.index.beat(txn, self.run)  # type: ignore[union-attr]
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
            if len(pages) > 1 and (isinstance(exc, StoreDamaged) or not isinstance(exc, (DedupError, OSError))):
                # a damaged record one page's lookup met, or a bug: find its page, the others are
                # decided and filed each in a transaction of its own
                return [self.decide_many([page], _again)[0] for page in pages]
            if isinstance(exc, (DedupError, OSError)):
                return [self.failed(page.verdict, Failure.STORE, exc) for page in pages]
            return [self.failed(pages[0].verdict, Failure.INTERNAL, exc)]
        for plugin in self.plugins:
            plugin.end(committed=True)
        self.commits += 1
        if not getattr(self.index.store, "serializable", True):  # (the spread Redis layout: claims.py)
            verdicts = second_looks(self.index, self.judging(), pages, verdicts, filed, self._site_of,
                                    lambda i: self.decide_many([pages[i]], _again + 1)[0] if _again < AGAIN_MAX else None,
                                    self.failed)
        kept = sum(v.action != Action.DROP and v.doc_id is not None and not v.skipped for v in verdicts)
        if self.config.window and kept and getattr(self.index.store, "expire_apart", False):
            self._expire_apart(max(p.now for p in pages) - self.config.window, EXPIRE_BATCH * kept)
        return verdicts

    def _expire_apart(self, cutoff: float, limit: int) -> None:
        """Expired pages out in a transaction of their own on a store whose writers run at once
        (Redis: inside the page's, every writer would read the time table and conflict); not waited
        for (a page out of the window never matches); a failure is left for the next."""
        index = self.index
        assert index is not None
        try:
            index.write(lambda txn: index.expire(txn, cutoff, limit))
        except (DedupError, OSError) as exc:
            logger.debug("crawler-dedup: removing expired pages failed (%s); the next page tries again", exc)

    def _decide(self, txn: IndexTxn, verdict: Verdict, fp: Fingerprinted, stage: Stage, now: float,
                fetched: Fetch | None = None, look: TxnLookups | None = None) -> Verdict:
        """Read what the index holds for the page (`look`: read ahead with its batch's), run the
        chain of rules (rules.py) and apply its decision's writes, in one write transaction."""
        index, cfg = self.index, self.config
        assert index is not None
        if look is None:
            (look := TxnLookups(index, txn, cfg, self._site_of(verdict, fp))).prefetch(verdict.url, fp, verdict.title)
        site = look.site.page if look.site is not None else None
        page = Page(verdict, fp, stage, now, look, self.judging(),
                    prior=look.by_url(verdict.url) if verdict.url else None)
        self._looked = page.prior
        verdict = self._apply(txn, page, decide(page, self.rules), site)
        if fetched is not None and verdict.url:
            revalidation.file_fetch(txn, verdict, fetched, now, filed=self.filed, run=self.run,
                                    max_age=cfg.conditional_max_age)
        return verdict

    def _site_of(self, verdict: Verdict, fp: Fingerprinted) -> SitePage | None:
        """The page's lines under its site, with DEDUP_SITE_BOILERPLATE (sitelines.py)."""
        cfg = self.config
        return (SitePage.of(verdict.url, fp.text, verdict.title, fp.lines, self._kept_lines)
                if cfg.site_boilerplate and cfg.store_text else None)

    def judging(self) -> Judging:
        """What the rules decide with in this process (the same for each of its pages)."""
        return Judging(self.config, self.run, self._score, self.verifier.name, self.model, self._kept_texts,
                       self.observe)

    def _apply(self, txn: IndexTxn, page: Page, decision: Decision, site: SitePage | None) -> Verdict:
        """The writes a decision asks for: pass an unchanged page on again, or file a page (its
        replaced entries out first), then a few expired pages out."""
        index, cfg, verdict, fp = self.index, self.config, decision.verdict, page.fp
        assert index is not None
        if decision.resend is not None:
            verdict = held.resent(index, txn, verdict, decision.resend, self.run)
            self._recheck = decision.resend.doc_id if unsettled(index, txn, decision.resend) else None
        elif decision.passed_on is not None:
            held.passed_on(txn, decision.passed_on, self.run)
        if not decision.file:
            return verdict
        deferred = not getattr(index.store, "serializable", True)  # (claims.confirm takes them out once it stays)
        self._deferred = decision.remove if deferred else ()
        carried = None if deferred else revalidation.take_out(index, txn, list(decision.remove), verdict.superseded,
                                                               cfg.conditional)
        self.filed = doc_id = index.add(txn, self._record(verdict, fp, page.stage, page.now), fp.digest, probes=cfg.sketch_probes,
                           exact=not _scored_apart_from_same_words(verdict), template=fp.template if cfg.boilerplate else None,
                           site_keys=site.keys if site is not None else None,
                           body=fp.body if cfg.store_text else None)  # (the fast path reads the kept text)
        if carried is not None and verdict.superseded:  # the replaced URL is a known copy of this page now
            revalidation.file_superseded(txn, verdict.superseded, carried, doc_id, self.run)
        if verdict.action == Action.KEEP:
            verdict = verdict.but(doc_id=doc_id)
            verdict = held.after_kept(index, txn, verdict, decision, self.run)  # (a killed run's page replaced)
        cutoff = page.cutoff
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
        if not cfg.dry_run:
            held.hold(record, verdict.superseded, self.run)  # (told at the close: a kill never tells it)
        if cfg.visible_containment and fp.view is not None:
            record.extras[Extra.CHROME] = bytes([min(100, round(fp.view.chrome * 100))])
            if cfg.store_text:  # (the rule compares with the kept text; filed under its title's parts: index.add)
                record.extras[Extra.VISIBLE] = fp.view.sample().astype(">u4").tobytes()
            else:  # no text to compare with: a thin view of both texts (visible.py)
                record.extras.update(thin_view(fp.text, verdict.title, fp.view))
        if not cfg.store_text and mask(fp.text) != fp.text:  # (with the text stored, compared from it)
            digest = churn_digest(fp.text)
            if digest != fp.digest:
                record.extras[Extra.CHURN] = digest
        if verdict.canonical and canonical_url(verdict.canonical) != canonical_url(verdict.url):
            record.extras[Extra.CANONICAL] = canonical_key(verdict.canonical)
        return record

    def _score(self, fp, doc: DocRecord) -> tuple[float, float]:
        return self.verifier.score(fp, doc, self.config)

    def failed(self, verdict: Verdict, where: Failure, exc: BaseException | object) -> Verdict:
        """The page kept after a failure, logged once per kind (a broken store cannot flood the log)."""
        if where not in self._logged:
            self._logged.add(where)
            logger.warning("dedup %s failed, keeping %s (further %s errors are only counted): %s",
                           where, verdict.url, where, exc, exc_info=not isinstance(exc, StoreError))
        return verdict.kept_because(where)


def _scored_apart_from_same_words(verdict: Verdict) -> bool:
    """A page kept although a kept page has its very words (the score kept them apart): the exact
    entry stays that page's."""
    return verdict.scored_apart and bool(verdict.weighing.measures.get("exact"))  # type: ignore[union-attr]
