"""Step 6: similarity of a page to a candidate kept page, from what the index stores per page."""

from __future__ import annotations

import numpy as np

from .sketch import resemblance


def sketch_scores(a: np.ndarray, a_count: int, b: np.ndarray, b_count: int) -> tuple[float, float]:
    """(resemblance, containment) of two pages' shingle sets, estimated from their sketches.

    Resemblance |A∩B|/|A∪B| (seed 003). Containment |A∩B|/min(|A|,|B|): high when one copy is
    the other plus boilerplate, or a truncated copy of it. |A∩B| = J(|A|+|B|)/(1+J).
    """
    j = resemblance(a, b)
    if not a_count or not b_count:
        return j, j
    inter = j * (a_count + b_count) / (1 + j)
    return j, min(1.0, inter / min(a_count, b_count))
