"""The paper methods as plugins, selected by settings; the default path has none of them.

- Feature extractors (DEDUP_FEATURES, DEDUP_WEIGHTING): what the simhash is computed over.
  The default, word shingles unweighted, depends on the text alone. TF-IDF weighting (seed 000)
  and document images (seed 001) depend on the document frequencies of the pages kept before.
- The conceptual check (DEDUP_CONCEPTUAL, seed 000): an LSI model fitted on the first kept
  pages gives each page a concept vector; a page textually related to a candidate but under the
  thresholds is matched when their LSI cosine is high enough (decide/matching.conceptual_match).
- Verifiers (DEDUP_VERIFIER): decide/verify.py.

A plugin whose output depends on earlier pages is not `pure`: its pages are fingerprinted in
the crawler's process, in the order they are decided. Its state lives outside the store, so
it is told when a transaction of decisions starts, is run again, and ends (commit or abort).
"""

from __future__ import annotations

import zlib

import numpy as np

from .features import document_image, token_hashes


# -- document frequencies (seeds 000 and 001) ---------------------------------------------------
# Counts live in a fixed table of 2^20 hashed buckets (4 MiB, whatever the crawl's size), are
# updated by every kept page, and are saved in the index's meta record now and then and at close,
# so a later crawl on the same index starts from them. Processes sharing an index each keep their
# own counts and save the element-wise maximum: an approximation, as IDF is one anyway.

BITS = 20
SAVE_EVERY = 1000


class DocFrequencies:
    def __init__(self):
        self.counts = np.zeros(1 << BITS, dtype=np.uint32)
        self.docs = 0
        self._unsaved = 0

    def _buckets(self, hashes: np.ndarray) -> np.ndarray:
        return (np.asarray(hashes, dtype=np.uint64) >> np.uint64(64 - BITS)).astype(np.int64)

    def idf(self, hashes: np.ndarray) -> np.ndarray:
        """Smoothed log((N+1)/(df+1)) + 1: never zero, so an unseen feature still counts."""
        df = self.counts[self._buckets(hashes)].astype(np.float64)
        return np.log((self.docs + 1) / (df + 1)) + 1.0

    def add(self, distinct: np.ndarray) -> np.ndarray:
        """Count one more page; returns what undo() takes to take it back."""
        buckets = np.unique(self._buckets(distinct))
        self.counts[buckets] += 1
        self.docs += 1
        self._unsaved += 1
        return buckets

    def undo(self, buckets: np.ndarray) -> None:
        """Take back an add() whose transaction was aborted."""
        self.counts[buckets] -= 1
        self.docs -= 1
        self._unsaved = max(0, self._unsaved - 1)

    # -- persistence in the store's meta ------------------------------------------------------
    def load(self, txn) -> None:
        raw = txn.meta_get("df")
        if raw:
            data = np.frombuffer(zlib.decompress(raw), dtype="<u4")
            self.docs = int(data[0])
            self.counts = data[1:].astype(np.uint32).copy()

    def maybe_save(self, txn, force: bool = False) -> None:
        if not (force and self._unsaved) and self._unsaved < SAVE_EVERY:
            return
        stored = DocFrequencies()
        stored.load(txn)
        if stored.docs:
            np.maximum(self.counts, stored.counts, out=self.counts)
            self.docs = max(self.docs, stored.docs)
        blob = np.concatenate([[np.uint32(min(self.docs, 2**32 - 1))], self.counts]).astype("<u4")
        txn.meta_put("df", zlib.compress(blob.tobytes(), 1))
        self._unsaved = 0


# -- the LSI model (seed 000) -------------------------------------------------------------------
# Conceptual near-duplicates (seed 000): pages textually close but not near-duplicates whose
# latent semantic (LSI) vectors point the same way, e.g. one story rewritten by two outlets.
#
# The LSI model is fitted once, online, from the first `train` kept pages: their log-TF-IDF
# vectors over 2^14 hashed word buckets, reduced by SVD to `dims` concepts. The model (the term
# to concept matrix and the IDF of the buckets) is saved in the index's meta record; every later
# page stores its unit concept vector (float16) for the check.

BUCKET_BITS = 14


def term_vector(tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(bucket ids, 1 + log tf) of the page's words."""
    buckets = (token_hashes(tokens) >> np.uint64(64 - BUCKET_BITS)).astype(np.int64)
    ids, counts = np.unique(buckets, return_counts=True)
    return ids, 1.0 + np.log(counts)


class LsiModel:
    def __init__(self, terms_to_concepts: np.ndarray, idf: np.ndarray):
        self.v = terms_to_concepts.astype(np.float32)  # (buckets, dims)
        self.idf = idf.astype(np.float32)

    @classmethod
    def fit(cls, vectors: list[tuple[np.ndarray, np.ndarray]], dims: int) -> "LsiModel":
        n, width = len(vectors), 1 << BUCKET_BITS
        df = np.zeros(width, dtype=np.float64)
        for ids, _ in vectors:
            df[ids] += 1
        idf = np.log((n + 1) / (df + 1)) + 1.0
        x = np.zeros((n, width), dtype=np.float32)
        for row, (ids, tf) in enumerate(vectors):
            x[row, ids] = tf * idf[ids]
        x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        # SVD through the n x n Gram matrix: n (pages) is far smaller than the bucket count
        values, u = np.linalg.eigh(x @ x.T)
        order = np.argsort(values)[::-1][:dims]
        values, u = np.clip(values[order], 1e-9, None), u[:, order]
        v = (x.T @ u) / np.sqrt(values)  # (buckets, dims): right singular vectors
        return cls(v, idf)

    def project(self, ids: np.ndarray, tf: np.ndarray) -> np.ndarray:
        """Unit concept vector of a page."""
        vec = (tf * self.idf[ids]) @ self.v[ids]
        norm = np.linalg.norm(vec)
        return (vec / norm if norm > 0 else vec).astype(np.float16)

    def to_bytes(self) -> bytes:
        dims = np.array([self.v.shape[1]], dtype="<u4").tobytes()
        return zlib.compress(dims + self.idf.astype("<f4").tobytes() + self.v.astype("<f2").tobytes(), 1)

    @classmethod
    def from_bytes(cls, blob: bytes) -> "LsiModel":
        raw = zlib.decompress(blob)
        dims = int(np.frombuffer(raw[:4], dtype="<u4")[0])
        width = 1 << BUCKET_BITS
        idf = np.frombuffer(raw, dtype="<f4", count=width, offset=4)
        v = np.frombuffer(raw, dtype="<f2", offset=4 + 4 * width).reshape(width, dims)
        return cls(v.astype(np.float32), idf)


def cosine(a: bytes, b: bytes) -> float:
    va, vb = np.frombuffer(a, dtype=np.float16).astype(np.float32), np.frombuffer(b, dtype=np.float16).astype(np.float32)
    return float(np.clip(va @ vb, -1.0, 1.0))


# -- the plugins ---------------------------------------------------------------------------------




class Plugin:
    """No-op hooks: a plugin overrides the ones it needs."""

    pure = True  # the fingerprint depends on the page's text alone

    def load(self, txn) -> None:
        """The index was opened: read saved state (meta)."""

    def start(self) -> None:
        """A write transaction of decisions is about to run."""

    def attempt(self) -> None:
        """It runs (again: the store may re-run it): forget what an earlier attempt did."""

    def end(self, committed: bool) -> None:
        """It committed, or was aborted (undo what it did outside the store)."""

    def kept(self, index, txn, doc_id: int, fp) -> None:
        """A page was filed in this transaction."""

    def unsaved(self) -> bool:
        return False

    def save(self, txn) -> None:
        """Write state to be kept (on close)."""


class Shingles(Plugin):
    """Word w-shingles, unweighted: the default (seed 003)."""

    def features(self, tokens: list[str], word_shingles: np.ndarray):
        """(features, weights or None, what a kept page adds to the document frequencies or None)."""
        return word_shingles, None, None


class _Frequencies(Shingles):
    pure = False

    def __init__(self):
        self.df = DocFrequencies()
        self._added: list | None = None  # df.add()s of the transaction running, to undo on abort
        self._unsaved = 0  # pages not yet saved when it started (a save inside it may be undone)

    def load(self, txn) -> None:
        self.df.load(txn)

    def start(self) -> None:
        self._added, self._unsaved = [], self.df._unsaved

    def attempt(self) -> None:
        self._undo()
        self._added = []

    def end(self, committed: bool) -> None:
        if not committed:
            self._undo()
        self._added = None

    def _undo(self) -> None:
        for buckets in reversed(self._added or ()):
            self.df.undo(buckets)
        if self._added is not None:  # a save in the aborted attempt did not land: still unsaved
            self.df._unsaved = self._unsaved

    def kept(self, index, txn, doc_id, fp) -> None:
        if fp.df_keys is None:
            return
        added = self.df.add(fp.df_keys)
        if self._added is not None:
            self._added.append(added)
        self.df.maybe_save(txn)

    def unsaved(self) -> bool:
        return bool(self.df.docs)

    def save(self, txn) -> None:
        self.df.maybe_save(txn, force=True)


class TfIdfShingles(_Frequencies):
    """Shingles weighted by TF-IDF in the simhash (seed 000)."""

    def features(self, tokens, word_shingles):
        return word_shingles, self.df.idf(word_shingles), np.unique(word_shingles)


class DocumentImage(_Frequencies):
    """The top TF-IDF words of each 100-word part stand for the page (seed 001)."""

    def features(self, tokens, word_shingles):
        return document_image(tokens, self.df.idf), None, np.unique(token_hashes(tokens))


def feature_plugin(config) -> Shingles:
    if config.features == "docimage":
        return DocumentImage()
    return TfIdfShingles() if config.weighting == "tfidf" else Shingles()


class NoConceptual(Plugin):
    """DEDUP_CONCEPTUAL=off: no terms, no LSI vector, never a conceptual match."""

    def describe(self, tokens: list[str], fp) -> None:
        pass


class Conceptual(NoConceptual):
    """LSI conceptual duplicates (seed 000): fitted once on the first DEDUP_LSI_TRAIN kept pages."""

    pure = False

    def __init__(self, config):
        self.config = config
        self.lsi: LsiModel | None = None
        self._pending: list = []  # (doc id, terms) of kept pages waiting for the model
        self._snapshot: tuple | None = None

    def load(self, txn) -> None:
        blob = txn.meta_get("lsi")
        self.lsi = LsiModel.from_bytes(blob) if blob else None

    def describe(self, tokens: list[str], fp) -> None:
        """Fingerprinting: the page's terms, and its LSI vector once there is a model."""
        fp.terms = term_vector(tokens)
        if self.lsi is not None:
            fp.extras["lsi"] = self.lsi.project(*fp.terms).tobytes()

    def start(self) -> None:
        self._snapshot = (self.lsi, list(self._pending))

    def attempt(self) -> None:
        if self._snapshot is not None:
            self.lsi, self._pending = self._snapshot[0], list(self._snapshot[1])

    def end(self, committed: bool) -> None:
        if not committed:
            self.attempt()
        self._snapshot = None

    def kept(self, index, txn, doc_id, fp) -> None:
        if fp.terms is None or self.lsi is not None:
            return
        stored = txn.meta_get("lsi")
        if stored is not None:  # another process fitted it meanwhile
            self.lsi = LsiModel.from_bytes(stored)
            self._pending.clear()
            return
        self._pending.append((doc_id, fp.terms))
        if len(self._pending) < self.config.lsi_train:
            return
        self.lsi = LsiModel.fit([terms for _, terms in self._pending], self.config.lsi_dims)
        txn.meta_put("lsi", self.lsi.to_bytes())
        for pending_id, terms in self._pending:  # the training pages get their vectors now
            doc = index.doc(txn, pending_id)
            if doc is not None:
                doc.extras["lsi"] = self.lsi.project(*terms).tobytes()
                txn.doc_put(pending_id, doc.encode())
        self._pending.clear()


def conceptual_plugin(config) -> NoConceptual:
    return NoConceptual() if config.conceptual == "off" else Conceptual(config)


def is_pure(config) -> bool:
    """Pages can be fingerprinted anywhere (a worker process), before the pages ahead of them
    are decided: no plugin that learns from kept pages."""
    return feature_plugin(config).pure and config.conceptual == "off"
