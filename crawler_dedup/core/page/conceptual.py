"""Conceptual near-duplicates (seed 000): pages textually close but not near-duplicates whose
latent semantic (LSI) vectors point the same way, e.g. one story rewritten by two outlets.

The LSI model is fitted once, online, from the first `train` kept pages: their log-TF-IDF
vectors over 2^14 hashed word buckets, reduced by SVD to `dims` concepts. The model (the term
to concept matrix and the IDF of the buckets) is saved in the index's meta record; every later
page stores its unit concept vector (float16) for the check.
"""

from __future__ import annotations

import zlib

import numpy as np

from .features import token_hashes

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
