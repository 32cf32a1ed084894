"""Step 4b: a bottom-k min-hash sketch of the shingle set, and resemblance from two sketches.

The shingle hashes are already uniform 64-bit values, so the k smallest distinct ones are a
min-hash sketch (Broder's bottom-k) with no further hashing.
"""

from __future__ import annotations

import numpy as np

SKETCH_SIZE = 128


def sketch(features: np.ndarray, size: int = SKETCH_SIZE) -> np.ndarray:
    distinct = np.unique(features)  # sorted ascending
    return distinct[:size].astype(np.uint64, copy=False)


def resemblance(a: np.ndarray, b: np.ndarray, size: int = SKETCH_SIZE) -> float:
    """Estimated Jaccard |A∩B|/|A∪B| of the shingle sets behind two bottom-k sketches.

    Among the `size` smallest hashes of A∪B (computable from the two sketches), the fraction
    present in both is an unbiased estimate; exact when A∪B fits in `size`.
    `a`, `b`: sorted and distinct, as sketch() makes them (and records keep them).
    """
    if a.size == 0 or b.size == 0:
        return 1.0 if a.size == b.size else 0.0
    # the `size` smallest of A∪B: each one in A is among A's smallest, so in A's sketch. In the
    # merged sketches a value of both comes twice in a row; rank: its place among the distinct
    # values (one sort, no set operations: 6x faster than union1d and isin, the same numbers)
    merged = np.concatenate((a, b))
    merged.sort()
    twice = merged[1:] == merged[:-1]
    rank = np.cumsum(~twice)
    return int(np.count_nonzero(twice & (rank < size))) / min(size, int(rank[-1]) + 1)


def kept_bits(bits: int) -> np.uint64:
    """The mask of the high `bits` bits of a hash (a coarse record's precision: records.py)."""
    return np.uint64(((1 << 64) - 1) ^ ((1 << (64 - bits)) - 1))
