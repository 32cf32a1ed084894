"""Step 3: tokens -> hashed word w-shingles (uint64 numpy array), and the exact-content hash."""

from __future__ import annotations

import numpy as np
import xxhash

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
