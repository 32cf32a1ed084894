"""The paper methods as plugins, selected by settings; the default path has none of them.

- Feature extractors (DEDUP_FEATURES, DEDUP_WEIGHTING): what the simhash is computed over.
  The default, word shingles unweighted, depends on the text alone. TF-IDF weighting (seed 000)
  and document images (seed 001) depend on the document frequencies of the pages kept before.
- The conceptual check (DEDUP_CONCEPTUAL, seed 000): an LSI model fitted on the first kept
  pages; a page textually related to a candidate but under the thresholds is matched when
  their LSI cosine is high enough.
- Verifiers (DEDUP_VERIFIER): verify.py.

A plugin whose output depends on earlier pages is not `pure`: its pages are fingerprinted in
the crawler's process, in the order they are decided. Its state lives outside the store, so
it is told when a transaction of decisions starts, is run again, and ends (commit or abort).
"""

from __future__ import annotations

import numpy as np

from ..page.conceptual import LsiModel, term_vector
from ..decide.matching import Match, conceptual_match
from ..page.features import document_image, token_hashes
from ..page.weights import DocFrequencies


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

    def match(self, fp, candidates) -> Match | None:
        return None


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

    def match(self, fp, candidates) -> Match | None:
        return conceptual_match(fp, candidates, self.config.conceptual_threshold)

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
