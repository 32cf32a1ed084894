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
    """
    if a.size == 0 or b.size == 0:
        return 1.0 if a.size == b.size else 0.0
    # the `size` smallest of A∪B: each one in A is among A's smallest, so in A's sketch
    union = np.union1d(a, b)[:size]
    both = np.isin(union, a, assume_unique=True) & np.isin(union, b, assume_unique=True)
    return float(both.sum() / union.size)
