"""Document frequencies of features, for TF-IDF weighting (seeds 000 and 001).

Counts live in a fixed table of 2^20 hashed buckets (4 MiB, whatever the crawl's size), are
updated by every kept page, and are saved in the index's meta record now and then and at close,
so a later crawl on the same index starts from them. Processes sharing an index each keep their
own counts and save the element-wise maximum: an approximation, as IDF is one anyway.
"""

from __future__ import annotations

import zlib

import numpy as np

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
