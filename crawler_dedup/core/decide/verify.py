"""Step 6: how similar a page is to a candidate kept page, from what the index keeps per page.

`DEDUP_VERIFIER` selects one:
- `resemblance` (default, seed 003): min-hash resemblance of the word-shingle sets, with
  containment for copies that carry extra boilerplate or are truncated.
- `qgram` (seed 004): character q-gram overlap |A∩B| / max(|A|, |B|), q = 4.
- `swlr` (seed 002): longest common subsequence of the shingle sequences / mean length, behind a
  bit-vector pre-filter.
"""

from __future__ import annotations

import functools

import numpy as np

from ..page.features import _mix
from ..page.sketch import kept_bits, resemblance, sketch

_QMULT = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                   0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x94D049BB133111EB, 0xBF58476D1CE4E5B9], dtype=np.uint64)


def coarsened(sketch: np.ndarray, bits: int = 24) -> np.ndarray:
    """A sketch as a coarse record keeps it (each hash's high `bits` bits), to compare with one."""
    return _distinct(sketch & kept_bits(bits))


def _distinct(ascending: np.ndarray) -> np.ndarray:
    """A sorted array without repeats (np.unique's hashing costs several times this on a sketch)."""
    if ascending.size < 2:
        return ascending
    return ascending[np.concatenate(([True], ascending[1:] != ascending[:-1]))]


def coarse_pair(fp, doc) -> tuple[np.ndarray, np.ndarray]:
    """The page's and a coarse record's sketches cut to the record's bits (two of a record's
    hashes may have become one): the page's once a precision, as a page meets ~30 candidates."""
    memo = getattr(fp, "measured", None)
    mine = memo.get(("coarsened", doc.bits)) if memo is not None else None
    if mine is None:
        mine = coarsened(fp.sketch, doc.bits)
        if memo is not None:
            memo[("coarsened", doc.bits)] = mine
    return mine, _distinct(doc.sketch)


def sketch_scores(a: np.ndarray, a_count: int, b: np.ndarray, b_count: int) -> tuple[float, float]:
    """(resemblance, containment of A in B) of two pages' shingle sets, from their sketches.

    Resemblance |A∩B|/|A∪B| (seed 003). Containment |A∩B|/|A|: how much of the new page A the
    kept page B already holds — high for a truncated copy or one that lost some boilerplate, low
    for a page that quotes B and adds its own text. |A∩B| = J(|A|+|B|)/(1+J).
    """
    j = resemblance(a, b)
    if not a_count or not b_count:
        return j, j
    inter = j * (a_count + b_count) / (1 + j)
    return j, min(1.0, inter / a_count)


# -- q-grams (seed 004) ------------------------------------------------------------------

def qgram_hashes(tokens: list[str], q: int = 4) -> np.ndarray:
    """Distinct hashes of the character q-grams of the normalized text (words joined by a space)."""
    codes = np.frombuffer(" ".join(tokens).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    if codes.size < q:
        return np.unique(_mix(codes[:1] * _QMULT[0])) if codes.size else np.empty(0, np.uint64)
    n = codes.size - q + 1
    acc = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i in range(q):
            acc += codes[i : i + n] * _QMULT[i]
        return np.unique(_mix(acc))


def qgram_overlap(a: np.ndarray, a_count: int, b: np.ndarray, b_count: int) -> float:
    """|A∩B| / max(|A|,|B|) from bottom-k sketches of the q-gram sets and their sizes."""
    if not a_count or not b_count:
        return 0.0
    j = resemblance(a, b)
    return min(1.0, j * (a_count + b_count) / (1 + j) / max(a_count, b_count))


# -- SWLR: LCS over shingle sequences (seed 002) -------------------------------------------

def lcs_length(a, b) -> int:
    """Length of the longest common subsequence, bit-parallel (Allison-Dix / Hyyrö):
    one big-integer step per element of b instead of a len(a) x len(b) table."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return 0
    masks: dict[int, int] = {}
    for i, x in enumerate(a):
        masks[x] = masks.get(x, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for y in b:
        u = v & masks.get(y, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


def bitvector(seq: np.ndarray, bits: int = 1024) -> int:
    """Seed 002's pre-filter: each element sets bit (hash mod bits)."""
    out = 0
    for b in set((seq % np.uint64(bits)).tolist()):
        out |= 1 << b
    return out


def swlr(a: np.ndarray, b: np.ndarray) -> float:
    """|LCS| / mean(|A|, |B|) of two shingle sequences (Eq. 6 of seed 002)."""
    if not len(a) or not len(b):
        return 0.0
    return lcs_length(a.tolist(), b.tolist()) / ((len(a) + len(b)) / 2)


def swlr_prefilter(a: np.ndarray, b: np.ndarray, threshold: float, bits: int = 1024) -> bool:
    """False only when the two sequences cannot reach `threshold`. Seed 002's bit vectors first:
    no common bit, no common element, LCS 0. Then a valid bound: the LCS is at most the size of
    the multiset intersection, sum over elements of min(count in a, count in b)."""
    if not len(a) or not len(b):
        return threshold <= 0
    if not bitvector(a, bits) & bitvector(b, bits):
        return threshold <= 0
    ua, ca = np.unique(a, return_counts=True)
    ub, cb = np.unique(b, return_counts=True)
    _, ia, ib = np.intersect1d(ua, ub, assume_unique=True, return_indices=True)
    bound = int(np.minimum(ca[ia], cb[ib]).sum())
    return bound / ((len(a) + len(b)) / 2) >= threshold


# -- the verifiers ---------------------------------------------------------------------------

class Verifier:
    """Score a page against a kept page. `keep` says what a page stores for this (doc extras)."""

    name = "resemblance"

    def keep(self, tokens: list[str], features: np.ndarray) -> dict[str, bytes]:
        return {}

    def score(self, fp, doc, config) -> tuple[float, float]:
        """(score for DEDUP_THRESHOLD, containment or 0)."""
        if doc.coarse:
            mine, theirs = coarse_pair(fp, doc)
            return sketch_scores(mine, fp.shingles, theirs, doc.shingles)
        return sketch_scores(fp.sketch, fp.shingles, doc.sketch, doc.shingles)


class QGramVerifier(Verifier):
    name = "qgram"
    q = 4

    def keep(self, tokens, features):
        grams = qgram_hashes(tokens, self.q)
        return {"qg": sketch(grams).astype(">u8").tobytes(), "qn": int(grams.size).to_bytes(4, "big")}

    def score(self, fp, doc, config):
        if "qg" not in doc.extras:
            return 0.0, 0.0
        mine = np.frombuffer(fp.extras["qg"], dtype=">u8").astype(np.uint64)
        theirs = np.frombuffer(doc.extras["qg"], dtype=">u8").astype(np.uint64)
        return qgram_overlap(mine, int.from_bytes(fp.extras["qn"], "big"),
                             theirs, int.from_bytes(doc.extras["qn"], "big")), 0.0


class SwlrVerifier(Verifier):
    name = "swlr"

    def keep(self, tokens, features):
        # the shingle sequence, 32 bits an element: enough to tell shingles of two pages apart
        return {"seq": (features >> np.uint64(32)).astype(">u4").tobytes()}

    def score(self, fp, doc, config):
        if "seq" not in doc.extras:
            return 0.0, 0.0
        mine = np.frombuffer(fp.extras["seq"], dtype=">u4").astype(np.uint64)
        theirs = np.frombuffer(doc.extras["seq"], dtype=">u4").astype(np.uint64)
        if not swlr_prefilter(mine, theirs, config.threshold):
            return 0.0, 0.0
        return swlr(mine, theirs), 0.0


VERIFIERS = {v.name: v for v in (Verifier(), QGramVerifier(), SwlrVerifier())}


@functools.lru_cache(maxsize=16)  # one instance per name and process (workers ask per page)
def make_verifier(name: str) -> Verifier:
    """A built-in verifier, or an instance of the class at a dotted path (DEDUP_VERIFIER): a new
    verifier is one file with a Verifier subclass (`name`, `keep`, `score`)."""
    if name in VERIFIERS:
        return VERIFIERS[name]
    import importlib

    from ...exceptions import ConfigError

    module, _, attr = name.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError("DEDUP_VERIFIER", name, f"resemblance, qgram, swlr or an importable Verifier class ({exc})") from None
    verifier = cls()
    if not all(callable(getattr(verifier, m, None)) for m in ("keep", "score")) or not isinstance(getattr(verifier, "name", None), str):
        raise ConfigError("DEDUP_VERIFIER", name, "a class with a `name` and the `keep` and `score` methods of Verifier")
    if verifier.name in VERIFIERS or verifier.name in ("exact", "churn", "containment", "lsi"):
        # the drop log's `measure` would call its scores another method's
        raise ConfigError("DEDUP_VERIFIER", name, f"a Verifier class with a `name` of its own, not {verifier.name!r}")
    return verifier
