"""Steps 1-8 for one page: `Deduplicator.check(url, html|text) -> Verdict`. No Scrapy here."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace

import numpy as np

from .churn import churn_digest, mask, same_but_churn
from .conceptual import LsiModel, cosine, term_vector
from .config import DedupConfig
from .exceptions import DedupError, StoreError
from .extract import canonical_link, extract, page_title
from .features import content_hash, document_image, shingles, token_hashes
from .guards import looks_like_notice, titles_disagree
from .index import DocRecord, NearDupIndex, canonical_url
from .simhash import simhash
from .sketch import SKETCH_SIZE
from .stores import make_store
from .tables import choose_plan
from .tokens import tokenize
from .verify import VERIFIERS
from .weights import DocFrequencies

logger = logging.getLogger(__name__)

GUARD_TOKENS = 300  # texts shorter than this need agreeing titles to be dropped ...
GUARD_RESEMBLANCE = 0.8  # ... and so do longer ones less alike than this
SHORT_TOKENS = 100  # texts shorter than this (obituaries, product blurbs) are mostly template:
SHORT_THRESHOLD = 0.85  # they need this much resemblance, or to be all but wholly inside the
SHORT_CONTAINMENT, SHORT_MIN_RESEMBLANCE = 0.95, 0.6  # other page (a teaser) and close to it
# record extras: the digest with churn masked (kept when no text is stored and it differs from the
# digest); a rel=canonical naming another URL
CHURN, CANONICAL = "cd", "cu"
EXPIRE_BATCH = 4  # expired pages removed per page kept (more than one: the index shrinks back)
MAX_VERIFIED = 64  # candidates verified per page at most (a flood means a bad plan, not more work)


def extract_step(html, url: str, max_bytes: int, mode: str = "thorough") -> tuple[str, object, str | None]:
    """Step 1 as a plain function (it also runs in worker processes):
    ("text", text, title), ("skipped", reason, None) or ("error", exception, None)."""
    if not html:
        return "skipped", "empty", None
    if not isinstance(html, (str, bytes, bytearray)):
        return "skipped", "bad_input", None
    if len(html) > max_bytes:
        return "skipped", "too_large", None
    try:
        extracted = extract(html, url, mode)
    except Exception as exc:  # trafilatura/lxml on hostile markup: keep the page
        return "error", exc, None
    if extracted is None:
        return "skipped", "no_text", None
    return "text", extracted.text, extracted.title


_WORKER_DEDUPS: dict = {}


def extract_and_fingerprint(html, url: str, config) -> tuple[str, object, str | None]:
    """Steps 1-4 in a worker process: like extract_step, but ("fingerprint", Fingerprinted or
    the reason it was not checked, title) when the fingerprint depends on the text alone. With
    TF-IDF weighting, document images or LSI it depends on the index too: text comes back."""
    kind, value, title = extract_step(html, url, config.max_bytes, config.extract_mode)
    if kind != "text" or not fingerprint_is_pure(config):
        return kind, value, title
    key = (config.shingle, config.min_tokens, config.verifier)
    dedup = _WORKER_DEDUPS.get(key)
    if dedup is None:  # never opened: fingerprinting needs no index
        dedup = _WORKER_DEDUPS[key] = Deduplicator(config)
    try:
        return "fingerprint", dedup.fingerprint(value), title
    except Exception:  # decided in the crawler process instead, where a failure is counted
        return kind, value, title


def fingerprint_is_pure(config) -> bool:
    return config.weighting == "none" and config.features == "shingles" and config.conceptual == "off"


def fp_hex(fp: int | None) -> str | None:
    return None if fp is None else f"{fp:016x}"


@dataclass
class Verdict:
    """What to do with one page. `action`: keep | drop | flag (dry run: would be dropped)."""

    url: str
    action: str = "keep"
    reason: str | None = None  # exact | near | conceptual | unchanged (a revisit with the same text)
    duplicate_of: str | None = None
    duplicate_of_title: str | None = None
    distance: int | None = None
    similarity: float | None = None
    fingerprint: int | None = None
    duplicate_of_fingerprint: int | None = None
    skipped: str | None = None  # why the page was kept without a check
    error: str | None = None  # where a failure made us keep the page (fail open)
    guard: str | None = None  # a guard that kept a page the index matched (`title`)
    measure: str | None = None  # what `similarity` is: exact, resemblance, containment, qgram, swlr, lsi
    title: str | None = None
    excerpt: str | None = None
    tokens: int = 0
    doc_id: int | None = None
    text: str | None = None  # the extracted text of a duplicate, for the drop log (DEDUP_STORE_TEXT)
    never_drop: bool = False  # a hub page: indexed when new, kept (and not indexed again) when matched
    canonical: str | None = None  # the page's rel=canonical (or og:url), absolute
    revisit: str | None = None  # the URL was in the index: unchanged | updated | copy (of another URL's page)
    kept_at: float | None = None  # a revisit: when the URL's page in the index was kept
    superseded: dict | None = None  # a kept page this one replaced as its canonical URL (url, title, ...)
    resent: bool = False  # unchanged, but filed by a crawl that never ended (killed): passed on again

    @property
    def is_duplicate(self) -> bool:
        return self.action in ("drop", "flag")


@dataclass
class Fingerprinted:
    text: str
    title: str | None
    tokens: int
    fingerprint: int
    sketch: np.ndarray
    digest: bytes
    shingles: int = 0
    extras: dict = field(default_factory=dict)  # what the verifier keeps per page
    df_keys: np.ndarray | None = None  # what a kept page adds to the document frequencies
    terms: tuple | None = None  # (bucket ids, log tf) for the LSI model


@dataclass
class Pending:
    """A prepared page waiting for its decision (Deduplicator.decide_many)."""

    verdict: Verdict
    fp: Fingerprinted
    stage: str
    now: float


class Deduplicator:
    """Owns the index; one per process. Use as a context manager or call open()/close()."""

    def __init__(self, config: DedupConfig | None = None, store=None, **overrides):
        if config is not None and overrides:  # a config plus a few changes, checked like settings
            base = {k: v for k, v in config.__dict__.items() if k != "extra"}
            config = DedupConfig.from_settings({}, **{**base, **overrides})
        self.config = config or DedupConfig.from_settings({}, **overrides)
        self._store = store
        self.verifier = VERIFIERS[self.config.verifier]
        self.df = DocFrequencies()
        self.lsi: LsiModel | None = None
        self._lsi_pending: list = []
        self._df_added: list | None = None  # df.add()s of the transaction running, to undo on abort
        self.commits = 0  # write transactions that decided pages and committed
        self.index: NearDupIndex | None = None
        self.run = 0
        self._now = 0.0
        self._logged: set[str] = set()

    # -- lifecycle -------------------------------------------------------------------------
    def open(self, new_run: bool = True) -> "Deduplicator":
        """Open the index; `new_run` numbers this process's decisions as a new run."""
        if self.index is None:
            store = self._store or make_store(self.config)
            plan = lambda: choose_plan(self.config.k, self.config.expected_pages)  # noqa: E731
            params = {"shingle": self.config.shingle, "features": self.config.features,
                      "weighting": self.config.weighting}
            self.index = NearDupIndex.open(store, self.config.k, plan, params)
            if new_run:
                self.run = self.index.write(self.index.new_run)
            self.index.read(self.df.load)
            if self.config.conceptual != "off":
                blob = self.index.read(lambda txn: txn.meta_get("lsi"))
                self.lsi = LsiModel.from_bytes(blob) if blob else None
        return self

    def close(self) -> None:
        if self.index is not None:
            try:
                if self.df.docs:
                    self.index.write(lambda txn: self.df.maybe_save(txn, force=True))
                if self.run:  # ended: what it passed on was handed to storage
                    self.index.write(lambda txn: self.index.end_run(txn, self.run))
            finally:
                self.index.store.close()
                self.index = None

    def __enter__(self):
        return self.open()

    def __exit__(self, *exc):
        self.close()

    # -- steps 1-4 -------------------------------------------------------------------------
    def fingerprint(self, text: str) -> Fingerprinted | str:
        """Steps 2-4, or the reason the text is not checked (`too_short`, `notice`)."""
        tokens = tokenize(text)
        if len(tokens) < self.config.min_tokens:
            return "too_short"
        if looks_like_notice(tokens):
            return "notice"
        cfg, df_keys, weights = self.config, None, None
        features = word_shingles = shingles(tokens, cfg.shingle)
        if cfg.features == "docimage":  # seed 001: top TF-IDF words of each 100-word part
            df_keys = np.unique(token_hashes(tokens))
            features = document_image(tokens, self.df.idf)
        elif cfg.weighting == "tfidf":  # seed 000: shingles weighted by TF-IDF
            df_keys = np.unique(features)
            weights = self.df.idf(features)
        distinct = np.unique(features)
        fp = Fingerprinted(
            text=text, title=None, tokens=len(tokens), fingerprint=simhash(features, weights),
            sketch=distinct[:SKETCH_SIZE].copy(), digest=content_hash(tokens), shingles=int(distinct.size),
            extras=self.verifier.keep(tokens, word_shingles),
            df_keys=df_keys,
        )
        if cfg.conceptual != "off":
            fp.terms = term_vector(tokens)
            if self.lsi is not None:
                fp.extras["lsi"] = self.lsi.project(*fp.terms).tobytes()
        return fp

    # -- steps 1-8 -------------------------------------------------------------------------
    def check(self, url: str, html: bytes | str | None = None, text: str | None = None, *,
              stage: str = "response", title: str | None = None, now: float | None = None,
              fingerprinted: "Fingerprinted | str | None" = None, never_drop: bool = False,
              canonical: str | None = None) -> Verdict:
        """Decide one page. Never raises on bad input or a failing step: the page is kept and
        `Verdict.error` says where it failed (fail open). `now`: the page's time (default: the
        clock), for DEDUP_WINDOW and the record. `fingerprinted`: steps 1-4 already done by
        extract_and_fingerprint (in a worker), with the same settings. `never_drop`: a page that
        must be kept (a start page the crawl follows links from) is still indexed when new, so
        its copies are caught; when it matches, it is kept and skipped as `never_drop`.
        `canonical`: the page's rel=canonical URL (found in `html` when not given)."""
        verdict, pending = self.prepare(url, html, text, stage=stage, title=title, now=now,
                                        fingerprinted=fingerprinted, never_drop=never_drop, canonical=canonical)
        return verdict if pending is None else self.decide_many([pending])[0]

    def prepare(self, url: str, html: bytes | str | None = None, text: str | None = None, *,
                stage: str = "response", title: str | None = None, now: float | None = None,
                fingerprinted: "Fingerprinted | str | None" = None,
                never_drop: bool = False, canonical: str | None = None) -> "tuple[Verdict, Pending | None]":
        """Steps 1-4 of check(), without the index: (the final verdict, None) for a page kept
        without a lookup (allowed, skipped, failed), else (verdict, what decide_many takes)."""
        verdict = Verdict(url=url if isinstance(url, str) else str(url or ""), title=title, never_drop=never_drop,
                          canonical=canonical)
        try:
            now = time.time() if now is None else float(now)
            if self.allowed(verdict.url):
                verdict.skipped = "allowed"
                return verdict, None
            if canonical is None and self.config.canonical and isinstance(html, (str, bytes)):
                verdict.canonical = canonical_link(html, verdict.url)
            fp = fingerprinted
            if fp is None:
                fp = self._fingerprinted(verdict, html, text)
                if fp is None:
                    return verdict, None
            if isinstance(fp, str):
                verdict.skipped = fp
                return verdict, None
            verdict.fingerprint, verdict.tokens = fp.fingerprint, fp.tokens
            excerpt = " ".join(fp.text[:600].split())  # a prefix of the whole text's join
            if len(excerpt) < 200:
                excerpt = " ".join(fp.text.split())
            verdict.excerpt = excerpt[:200]
            return verdict, Pending(verdict, fp, stage, now)
        except Exception as exc:  # a bug or hostile input must never drop or crash: keep
            return self._failed(verdict, "internal", exc), None

    def allowed(self, url: str) -> bool:
        return any(p.search(url) for p in self.config.allow)

    def _fingerprinted(self, verdict: Verdict, html, text) -> "Fingerprinted | str | None":
        """Extract (unless given the text) and fingerprint; None when `verdict` is final."""
        url = verdict.url
        if text is None:
            kind, value, title = extract_step(html, url, self.config.max_bytes, self.config.extract_mode)
            if kind == "error":
                self._failed(verdict, "extract", value)
                return None
            if kind == "skipped":
                verdict.skipped = value
                return None
            text, verdict.title = value, verdict.title or title
        elif not isinstance(text, str):
            verdict.skipped = "bad_input"
            return None
        elif verdict.title is None and html and isinstance(html, (str, bytes)):
            verdict.title = page_title(html)
        try:
            return self.fingerprint(text)
        except Exception as exc:
            self._failed(verdict, "fingerprint", exc)
            return None

    def decide_many(self, pages: "list[Pending]") -> list[Verdict]:
        """Steps 5-8 for prepared pages, in order, in one write transaction and one durable
        commit (group commit): each page sees the pages kept before it, as if checked one by
        one. Fails open like check(): a store failure keeps them all; a failure on one page
        keeps that page only (the batch is run again, a transaction a page)."""
        if not pages:
            return []
        # TF-IDF weights, document images and LSI vectors depend on the pages kept before: a
        # page prepared before the earlier pages of its batch were decided is fingerprinted again
        again = len(pages) > 1 and not fingerprint_is_pure(self.config)
        lsi, lsi_pending = self.lsi, list(self._lsi_pending)

        def run(txn):
            self._rollback(lsi, lsi_pending)  # a transaction run again (map grown) starts afresh
            self._df_added = []
            out = []
            for page in pages:
                self._now = page.now
                fp = self.fingerprint(page.fp.text) if again else page.fp  # (never a skip: same tokens)
                # a copy: a run again starts from the prepared verdict
                out.append(self._decide(txn, replace(page.verdict, fingerprint=fp.fingerprint), fp, page.stage))
            return out

        try:
            if self.index is None:
                self.open()
            verdicts = self.index.write(run)
        except (DedupError, OSError) as exc:
            self._rollback(lsi, lsi_pending)
            return [self._failed(page.verdict, "store", exc) for page in pages]
        except Exception as exc:  # a bug: find its page, keep the others' decisions
            self._rollback(lsi, lsi_pending)
            if len(pages) == 1:
                return [self._failed(pages[0].verdict, "internal", exc)]
            return [self.decide_many([page])[0] for page in pages]
        finally:
            self._df_added = None
        self.commits += 1
        for page, verdict in zip(pages, verdicts):
            page.verdict.__dict__.update(verdict.__dict__)  # callers may hold the prepared objects
        return [page.verdict for page in pages]

    def _rollback(self, lsi, lsi_pending: list) -> None:
        """Undo what an aborted transaction did outside the store: document frequencies, LSI."""
        for buckets in reversed(self._df_added or ()):
            self.df.undo(buckets)
        self._df_added = []
        self.lsi, self._lsi_pending = lsi, list(lsi_pending)

    def _guarded(self, verdict: Verdict, fp: Fingerprinted, doc: DocRecord, resemblance: float) -> bool:
        """The title guard: a match under an unrelated title is not the same page when the text
        is short (a promo or "related stories" block taken for the content) or not nearly the
        same (two press releases sharing a long "About us" block)."""
        if (fp.tokens < GUARD_TOKENS or resemblance < GUARD_RESEMBLANCE) and titles_disagree(verdict.title, doc.title):
            verdict.guard = "title"
            return True
        return False

    def _decide(self, txn, verdict: Verdict, fp: Fingerprinted, stage: str) -> Verdict:
        """Lookup, verify and (when kept) insert, all inside one write transaction. A page whose
        URL is in the index is a revisit (DEDUP_REVISIT): never a copy of itself."""
        index, cfg = self.index, self.config
        cutoff = self._now - cfg.window if cfg.window else None
        prior = index.by_url(txn, verdict.url) if verdict.url else None
        if prior is not None and stage == "item" and prior.stage == "response" and prior.run == self.run:
            # the middleware kept this very page earlier in this run; the item is that page
            verdict.skipped = "checked_as_response"
            verdict.doc_id = prior.doc_id
            return verdict
        replace_id = None
        if prior is not None and cutoff is not None and prior.time < cutoff:
            # out of the window: no longer in the index (removal may lag); replaced below
            prior, replace_id = None, prior.doc_id
        revisit = prior is not None and cfg.revisit != "drop"
        if revisit:
            verdict.kept_at = prior.time
            if self._unchanged(verdict, fp, prior):
                if prior.run != self.run and index.run_killed(txn, prior.run):
                    # filed by a crawl that was killed: it may never have reached storage, pass it on
                    verdict.resent = True
                    prior.run = self.run  # (once: if this run ends, the next crawl drops it)
                    txn.doc_put(prior.doc_id, prior.encode())
                    return verdict
                if cfg.revisit == "update" and cfg.unchanged == "drop" and not verdict.never_drop:
                    verdict.action = "flag" if cfg.dry_run else "drop"
                    if cfg.store_text and verdict.measure != "exact":
                        verdict.text = fp.text
                return verdict  # the index holds this text already
            replace_id = prior.doc_id
        # (a revisit is never a copy of its own URL: older records of it, if any, are no match)
        found = self._match(txn, verdict, fp, cutoff, exclude=replace_id, own_url=verdict.url if revisit else None)
        match, reason, distance, similarity, measure = found or (None, None, None, None, None)
        if match is not None:
            verdict.guard = None
        if match is not None and cfg.canonical and self._supersedes(verdict, fp, match, distance, similarity, measure):
            if cfg.dry_run:
                return verdict  # flagged only: the kept copy stays, this page is not filed
            replace_ids = [match.doc_id]
            match = None
        else:
            replace_ids = []
        if match is not None:
            if verdict.never_drop:
                verdict.skipped = "never_drop"
                return verdict
            if revisit:
                verdict.revisit = "copy"
                if cfg.revisit == "keep":
                    match = None  # never drops a revisit: an update, though it copies another page
        if (match is not None and prior is None and stage == "item" and match.stage == "response"
                and match.run == self.run and verdict.url and match.url == verdict.url):
            verdict.skipped = "checked_as_response"  # (DEDUP_REVISIT=drop: no URL lookup above)
            verdict.doc_id = match.doc_id
            return verdict
        if match is not None:
            flag_only = cfg.dry_run or (reason == "conceptual" and cfg.conceptual == "flag")
            verdict.action = "flag" if flag_only else "drop"
            verdict.reason, verdict.distance, verdict.similarity = reason, distance, round(similarity, 4)
            verdict.measure = measure
            verdict.duplicate_of, verdict.duplicate_of_title = match.url, match.title
            verdict.duplicate_of_fingerprint, verdict.doc_id = match.fingerprint, match.doc_id
            if cfg.store_text:
                verdict.text = fp.text
            if not (reason == "conceptual" and cfg.conceptual == "flag" and not cfg.dry_run):
                return verdict
            # a flagged conceptual duplicate is still a page of its own: it is kept and indexed
            if revisit:
                verdict.revisit = "updated"  # (and replaces the URL's entry)
        elif revisit:
            verdict.revisit = "updated"
        if replace_id is not None:
            replace_ids.append(replace_id)
        for doc_id in replace_ids:  # an update, a superseded page or a stale entry: out, in this transaction
            index.remove(txn, doc_id)
        record = DocRecord(url=verdict.url, fingerprint=fp.fingerprint, sketch=fp.sketch, tokens=fp.tokens,
                           time=self._now, shingles=fp.shingles, run=self.run, title=verdict.title, stage=stage,
                           extras=dict(fp.extras))  # a copy: a transaction run again starts from fp as prepared
        if cfg.store_text:
            record.set_text(fp.text)
        if not cfg.store_text and mask(fp.text) != fp.text:  # (with the text stored, compared from it)
            digest = churn_digest(fp.text)
            if digest != fp.digest:
                record.extras[CHURN] = digest
        if verdict.canonical and canonical_url(verdict.canonical) != canonical_url(verdict.url):
            record.extras[CANONICAL] = verdict.canonical.encode("utf-8", "surrogatepass")
        doc_id = index.add(txn, record, fp.digest, probes=cfg.sketch_probes, exact=not verdict.guard)
        if verdict.action == "keep":
            verdict.doc_id = doc_id
        if cutoff is not None:  # a few expired pages out per page in: the index stays flat
            index.expire(txn, cutoff, EXPIRE_BATCH)
        if fp.df_keys is not None:
            added = self.df.add(fp.df_keys)
            if self._df_added is not None:
                self._df_added.append(added)
            self.df.maybe_save(txn)
        if fp.terms is not None and self.lsi is None:
            self._train_lsi(txn, doc_id, fp)
        return verdict

    def _unchanged(self, verdict: Verdict, fp: Fingerprinted, prior: DocRecord) -> bool:
        """A revisit with the text kept for its URL: the same words, or the same but for churn
        (dates, times, counters: churn.py). Fills the verdict's `unchanged` fields when so."""
        same_words = prior.extras.get("dg") == fp.digest
        if not same_words:
            old = prior.text
            if old is not None:
                churn_only = same_but_churn(old, fp.text)
            else:  # no stored text: the digest with churn masked, kept when it differed
                churn_only = prior.extras.get(CHURN, prior.extras.get("dg")) == churn_digest(fp.text)
            if not churn_only:
                return False
        verdict.reason, verdict.revisit = "unchanged", "unchanged"
        verdict.measure = "exact" if same_words else "churn"
        verdict.similarity = 1.0 if same_words else round(self.verifier.score(fp, prior, self.config)[0], 4)
        verdict.distance = (prior.fingerprint ^ fp.fingerprint).bit_count()
        verdict.duplicate_of, verdict.duplicate_of_title = prior.url, prior.title
        verdict.duplicate_of_fingerprint, verdict.doc_id = prior.fingerprint, prior.doc_id
        return True

    def _supersedes(self, verdict: Verdict, fp: Fingerprinted, match: DocRecord, distance, similarity,
                    measure) -> bool:
        """The canonical rule: `match` names this page's URL as its rel=canonical (or og:url), so
        this page is the one to keep; `verdict.superseded` describes the page it replaces."""
        named = match.extras.get(CANONICAL)
        if not named or canonical_url(named.decode("utf-8", "surrogatepass")) != canonical_url(verdict.url):
            return False
        if verdict.canonical and canonical_url(verdict.canonical) == canonical_url(match.url):
            return False  # the two pages name each other: the one kept first stays (no swap on every crawl)
        verdict.superseded = {
            "url": match.url, "title": match.title, "fingerprint": match.fingerprint, "time": match.time,
            "distance": distance, "similarity": round(similarity, 4), "measure": measure,
            "text": match.text if self.config.store_text else None, "run": match.run,
        }
        return True

    def _match(self, txn, verdict: Verdict, fp: Fingerprinted, cutoff, exclude: int | None = None,
               own_url: str | None = None):
        """The kept page this one duplicates: (doc, reason, distance, similarity, measure), or None.
        `exclude`: a doc id never matched (the URL's own earlier page, on a revisit); `own_url`:
        no page at this URL is matched either."""
        index, cfg = self.index, self.config
        own = canonical_url(own_url) if own_url else None
        mine = lambda doc: doc.doc_id == exclude or (own is not None and canonical_url(doc.url) == own)  # noqa: E731
        match, reason, distance, similarity, measure = index.exact(txn, fp.digest), "exact", None, 1.0, "exact"
        if match is not None and mine(match):
            match = None
        if match is not None and cutoff is not None and match.time < cutoff:
            match = None  # out of the window: no longer matches, removal may lag
        if match is not None and self._guarded(verdict, fp, match, 1.0):
            match = None  # another page with these words may still match under its own title
        if match is not None:
            return match, reason, (match.fingerprint ^ fp.fingerprint).bit_count(), similarity, measure
        short = fp.tokens < SHORT_TOKENS
        threshold = max(cfg.threshold, SHORT_THRESHOLD) if short else cfg.threshold
        contain, contain_min = cfg.containment, cfg.min_resemblance
        if short and contain:
            contain, contain_min = max(contain, SHORT_CONTAINMENT), max(contain_min, SHORT_MIN_RESEMBLANCE)
        best = None
        candidates = [doc for doc in self._candidates(txn, fp) if not mine(doc)]
        if cutoff is not None:
            candidates = [doc for doc in candidates if doc.time >= cutoff]
        for doc in candidates:
            j, c = self.verifier.score(fp, doc, cfg)
            if j >= threshold:
                score, how = j, self.verifier.name
            elif contain and c >= contain and j >= contain_min:
                score, how = c, "containment"
            else:
                continue
            if self._guarded(verdict, fp, doc, j):
                continue
            dist = (doc.fingerprint ^ fp.fingerprint).bit_count()
            rank = (-score, dist, doc.doc_id)
            if best is None or rank < best[0]:
                best = (rank, doc, dist, score, how)
        if best is not None:
            _, match, distance, similarity, measure = best
            return match, "near", distance, similarity, measure
        if "lsi" in fp.extras:
            match, similarity = self._conceptual(fp, candidates)
            if match is not None:
                return match, "conceptual", (match.fingerprint ^ fp.fingerprint).bit_count(), similarity, "lsi"
        return None

    # -- conceptual duplicates (seed 000) ---------------------------------------------------
    def _conceptual(self, fp: Fingerprinted, candidates: list[DocRecord]):
        """The textually related candidate closest in LSI space, if within the threshold."""
        best, best_cos = None, self.config.conceptual_threshold
        for doc in candidates:
            if "lsi" in doc.extras:
                cos = cosine(fp.extras["lsi"], doc.extras["lsi"])
                if cos >= best_cos:
                    best, best_cos = doc, cos
        return best, best_cos

    def _train_lsi(self, txn, doc_id: int, fp: Fingerprinted) -> None:
        stored = txn.meta_get("lsi")
        if stored is not None:  # another process fitted it meanwhile
            self.lsi = LsiModel.from_bytes(stored)
            self._lsi_pending.clear()
            return
        self._lsi_pending.append((doc_id, fp.terms))
        if len(self._lsi_pending) < self.config.lsi_train:
            return
        self.lsi = LsiModel.fit([terms for _, terms in self._lsi_pending], self.config.lsi_dims)
        txn.meta_put("lsi", self.lsi.to_bytes())
        for pending_id, terms in self._lsi_pending:  # the training pages get their vectors now
            doc = self.index.doc(txn, pending_id)
            if doc is not None:
                doc.extras["lsi"] = self.lsi.project(*terms).tobytes()
                txn.doc_put(pending_id, doc.encode())
        self._lsi_pending.clear()

    def _candidates(self, txn, fp: Fingerprinted) -> list[DocRecord]:
        """Kept pages to verify: simhash neighbours within k (nearest first), then pages sharing
        one of the smallest shingle hashes (most shared first); at most MAX_VERIFIED."""
        index, seen, out = self.index, set(), []
        ids = [d for f, _ in index.candidates(txn, fp.fingerprint) for d in txn.fp_docs(f)]
        if self.config.sketch_probes:
            ids += index.sketch_candidates(txn, fp.sketch, self.config.sketch_probes)
        for doc_id in ids:
            if doc_id in seen:
                continue
            seen.add(doc_id)
            doc = index.doc(txn, doc_id)
            if doc is not None:
                out.append(doc)
            if len(out) >= MAX_VERIFIED:
                break
        return out

    def _failed(self, verdict: Verdict, where: str, exc: Exception) -> Verdict:
        verdict.error = where
        if where not in self._logged:  # once per kind, so a broken store cannot flood the log
            self._logged.add(where)
            logger.warning("dedup %s failed, keeping %s (further %s errors are only counted): %s",
                           where, verdict.url, where, exc, exc_info=not isinstance(exc, StoreError))
        return verdict
