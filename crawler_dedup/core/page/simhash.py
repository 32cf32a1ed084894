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
    if weights is None:
        return _majority(features)
    # (n, 64) matrix of bits, bit i of every feature in column i (little-endian bit order)
    bits = np.unpackbits(features.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    if features.dtype.byteorder == ">":
        bits = bits[:, ::-1]
    w = np.asarray(weights, dtype=np.float64)
    vote = 2 * (w @ bits) - w.sum()
    set_bits = (vote > 0).astype(np.uint8)
    return int(np.packbits(set_bits, bitorder="little").view("<u8")[0])


_BLOCK = 255  # rows summed in one byte lane before it could overflow


def _majority(features: np.ndarray) -> int:
    """The unweighted simhash: bit i set when more than half the features have bit i set.

    The (n, 64) bit matrix (rows back to back: bytes 0/1) is summed as uint64 words, eight bit
    positions at a time, one per byte: exact while no byte counts past 255. So the first 255*q
    rows are taken as 255 long rows of q feature rows each and summed down the 255 (q*8 words of
    counts), then those q*64 byte counts added up per bit position; the rest, fewer than 255 rows,
    are summed at once.
    """
    n = features.size
    lanes = np.unpackbits(features.astype("<u8", copy=False).view(np.uint8), bitorder="little").view(np.uint64)
    head = n - n % _BLOCK  # rows summed in blocks of 255, the rest (fewer than 255) at once
    ones = lanes[8 * head :].reshape(-1, 8).sum(axis=0, dtype=np.uint64).view(np.uint8)
    if head:
        part = lanes[: 8 * head].reshape(_BLOCK, -1).sum(axis=0, dtype=np.uint64)
        ones = part.view(np.uint8).reshape(-1, 64).sum(axis=0, dtype=np.int64) + ones
    # more than half: 2 * ones > n, i.e. ones > n // 2 (a tie stays 0)
    return int.from_bytes(np.packbits(ones > (n >> 1), bitorder="little").tobytes(), "little")


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


def hamming_many(fps: np.ndarray, fp: int) -> np.ndarray:
    return np.bitwise_count(fps ^ np.uint64(fp)).astype(np.int64)
