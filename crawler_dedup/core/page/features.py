"""Step 3: tokens -> hashed word w-shingles (uint64 numpy array), and the exact-content hash; a
main text as pair measurements read it (its tokens, lines and shingles: `Text`), and where the
words two texts share sit (`placement`: a quote of another text's opening ends inside a line, as
a quote cut at a word count does; a copy's extraction stops at a block's end)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xxhash

from .tokens import tokenize

# Odd 64-bit multipliers (golden-ratio family) give each shingle position its own weight,
# so word order matters: "a b c" and "c b a" hash differently.
_POSITION_MULT = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
     0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x94D049BB133111EB, 0xBF58476D1CE4E5B9,
     0x2545F4914F6CDD1D, 0x9FB21C651E98DF25, 0xE7037ED1A0B428DB, 0x8EBC6AF09C88C6E3,
     0x589965CC75374CC3, 0x1D8E4E27C47D124F, 0xA0761D6478BD642F, 0xE7037ED1A0B428DB ^ 2],
    dtype=np.uint64,
)


_hash = xxhash.xxh3_64_intdigest
# splitmix64 constants, as numpy scalars once (not on every call)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def token_hashes(tokens: list[str]) -> np.ndarray:
    """xxh3-64 of each token's UTF-8 bytes. Hashed every time, no word -> hash cache: a cached
    lookup is no faster than xxh3 of a short word, and far slower when the CPU caches are cold
    (right after extraction) or the cache is large."""
    return np.fromiter(map(_hash, map(str.encode, tokens)), dtype=np.uint64, count=len(tokens))


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer, vectorized: spreads every input bit over all 64 output bits.
    A new array; `x` is left alone."""
    x = np.array(x, dtype=np.uint64)
    return _mix_inplace(x, np.empty_like(x))


def _mix_inplace(x: np.ndarray, tmp: np.ndarray) -> np.ndarray:
    """_mix(x) computed in x itself, `tmp` a scratch array of x's size. (Integer array arithmetic
    wraps around mod 2**64; numpy checks overflow only for scalars.)"""
    x ^= np.right_shift(x, _S30, out=tmp)
    x *= _M1
    x ^= np.right_shift(x, _S27, out=tmp)
    x *= _M2
    x ^= np.right_shift(x, _S31, out=tmp)
    return x


def shingles(tokens: list[str], w: int = 3) -> np.ndarray:
    """Hashes of the contiguous w-word shingles, in text order (a text shorter than w is one shingle)."""
    if not tokens:
        return np.empty(0, dtype=np.uint64)
    th = token_hashes(tokens)
    width = min(w, len(th))
    count = len(th) - width + 1
    if width < 1:
        acc = np.zeros(count, dtype=np.uint64)
    else:  # sum over i of th[i + j] * mult[i], w vector ops, not a loop per shingle
        acc = np.multiply(th[:count], _POSITION_MULT[0])
    tmp = np.empty_like(acc)
    for i in range(1, width):
        acc += np.multiply(th[i : i + count], _POSITION_MULT[i], out=tmp)
    return _mix_inplace(acc, tmp)


def content_hash(tokens: list[str]) -> bytes:
    """128-bit hash of the normalized token stream: equal for pages with the same words."""
    return xxhash.xxh3_128_digest("\x1f".join(tokens).encode("utf-8"))


def document_image(tokens: list[str], idf, chunk: int = 100, top: int = 30) -> np.ndarray:
    """Seed 001's document image: the `top` words of highest TF-IDF in every `chunk`-word part
    of the text, as distinct word hashes. tf weight 1 + log10(tf) within the part."""
    hashes = token_hashes(tokens)
    picked = []
    for start in range(0, len(hashes), chunk):
        part = hashes[start : start + chunk]
        words, counts = np.unique(part, return_counts=True)
        weight = (1.0 + np.log10(counts)) * idf(words)
        order = np.lexsort((words, -weight))  # ties broken by hash: deterministic
        picked.append(words[order[:top]])
    return np.unique(np.concatenate(picked)) if picked else np.empty(0, np.uint64)


# -- a main text as the pair measurements read it ------------------------------------------------

SPAN = 0.95  # the shared span ends where this share of the shared words (in runs of RUN) has come
RUN = 5  # shared words in a row that are one passage (fewer: a common phrase)
EDGE = 5  # words from a line's end past which a cut is inside the line


@dataclass
class Text:
    """A main text as the measures read it: its tokens, its lines' lengths, its shingles."""

    tokens: list[str]
    lines: np.ndarray  # the word count of each line
    sequence: np.ndarray  # word w-shingles in text order
    distinct: np.ndarray  # the same, sorted and distinct
    words: frozenset[str]
    main: np.ndarray | None = None  # its distinct 5-shingles, once measures.py compares it with visible texts

    @classmethod
    def of(cls, text: str, w: int) -> "Text":
        counts, tokens = [], []
        for line in text.splitlines():
            toks = tokenize(line)
            if toks:
                counts.append(len(toks))
                tokens.extend(toks)
        seq = shingles(tokens, w)
        return cls(tokens, np.array(counts, dtype=np.int64), seq, np.unique(seq), frozenset(tokens))


def placement(a: Text, b: Text) -> tuple[float, float, float, float, float | None]:
    """Where the words two texts share sit: (lead, tail) of each (the share of the text before its
    first shared word and after its last run of RUN shared words), and how far inside a line the
    shared span stops in the text it stops earlier in (0: at a line's start or end, where a copy's
    extraction stops at a block; 1: EDGE or more words inside one, where a quote is cut at a
    word count; None for a text of one line, whose lines are not known)."""
    lead_a, tail_a, cut_a = _span(_shared_words(a, b), a.lines)
    lead_b, tail_b, cut_b = _span(_shared_words(b, a), b.lines)
    lines = a.lines if tail_a >= tail_b else b.lines
    return lead_a, tail_a, lead_b, tail_b, (cut_a if tail_a >= tail_b else cut_b) if lines.size > 1 else None


def _shared_words(a: Text, b: Text) -> np.ndarray:
    """Which words of `a` sit in a w-shingle that `b` has too."""
    n = len(a.tokens)
    out = np.zeros(n, dtype=bool)
    if not n or not a.sequence.size:
        return out
    hit = members(a.sequence, b.distinct)
    width = n - a.sequence.size + 1
    for k in range(width):
        out[k:k + hit.size] |= hit
    return out


def members(values: np.ndarray, distinct: np.ndarray) -> np.ndarray:
    """Which of `values` are in `distinct` (sorted, distinct): np.isin's answer by binary search,
    without its sort of both arrays (the measures ask it for every candidate of every page)."""
    if not distinct.size:
        return np.zeros(values.shape, dtype=bool)
    at = np.searchsorted(distinct, values)
    at[at == distinct.size] = 0
    return distinct[at] == values


def _span(shared: np.ndarray, lines: np.ndarray) -> tuple[float, float, float]:
    """(lead, tail, how far inside a line the span ends) of the shared words in one text. The span
    ends with the run of RUN+ shared words that brings in SPAN of them: a phrase the text repeats
    after a quote of its opening (its subject's name, a set phrase) does not stretch the span."""
    n = shared.size
    if not n or not shared.any():
        return 1.0, 1.0, 0.0
    start = int(np.argmax(shared))
    padded = np.concatenate(([0], shared.astype(np.int8), [0]))
    edges = np.flatnonzero(np.diff(padded))
    starts, ends = edges[::2], edges[1::2]
    long_runs = (ends - starts) >= RUN
    if long_runs.any():
        starts, ends = starts[long_runs], ends[long_runs]
    held = np.cumsum(ends - starts)
    end = int(ends[int(np.searchsorted(held, SPAN * held[-1]))])
    bounds = np.concatenate(([0], np.cumsum(lines)))
    return start / n, (n - end) / n, _inside(end, bounds)


def _inside(at: int, bounds: np.ndarray) -> float:
    """How far position `at` is from the nearest line boundary, in EDGE words (capped at 1)."""
    return min(int(np.abs(bounds - at).min()), EDGE) / EDGE
