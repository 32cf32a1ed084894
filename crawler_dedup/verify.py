"""Step 6: similarity of a page to a candidate kept page, from what the index stores per page."""

from __future__ import annotations

import numpy as np

from .sketch import resemblance


def sketch_resemblance(a: np.ndarray, b: np.ndarray) -> float:
    """Estimated Jaccard resemblance of the two pages' shingle sets (seed 003's verifier)."""
    return resemblance(a, b)
