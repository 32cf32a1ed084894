"""Step 4a: features -> 64-bit simhash (Charikar), vectorized with numpy."""

from __future__ import annotations

import numpy as np


def simhash(features: np.ndarray, weights: np.ndarray | None = None) -> int:
    """Bit i is set when the (weighted) features with bit i set outweigh those without.

    Ties go to 0. An empty feature set has fingerprint 0.
    """
    features = np.ascontiguousarray(features, dtype=np.uint64)
    if features.size == 0:
        return 0
    # (n, 64) matrix of bits, bit i of every feature in column i (little-endian bit order)
    bits = np.unpackbits(features.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    if features.dtype.byteorder == ">":
        bits = bits[:, ::-1]
    if weights is None:
        ones = bits.sum(axis=0, dtype=np.int64)
        vote = 2 * ones - features.size
    else:
        w = np.asarray(weights, dtype=np.float64)
        vote = 2 * (w @ bits) - w.sum()
    set_bits = (vote > 0).astype(np.uint8)
    return int(np.packbits(set_bits, bitorder="little").view("<u8")[0])


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


def hamming_many(fps: np.ndarray, fp: int) -> np.ndarray:
    return np.bitwise_count(fps ^ np.uint64(fp)).astype(np.int64)
