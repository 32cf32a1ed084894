"""What the index keeps per page: `DocRecord` (URL, fingerprint, sketch, counts, time, title,
extras) in a compact binary form, and the URL's canonical form and key."""

from __future__ import annotations

import functools
import struct
import zlib
from dataclasses import dataclass, field

import numpy as np
import xxhash
from w3lib.url import canonicalize_url

from ...exceptions import StoreDamaged

# fingerprint, time, tokens, shingles, run, sketch size, title bytes, stage, url bytes
_HEAD = struct.Struct(">QdIIIHHBI")
_EXTRA = struct.Struct(">BI")  # name bytes, data bytes
_STAGES = ("response", "item")
_COARSE = 0x80  # in the stage byte: the sketch is stored as its hashes' high 24 bits


class Extra:
    """Names of a record's extras (stored in the index: never renamed). The verifiers and the
    LSI check add their own (qg, qn, seq, lsi)."""

    DIGEST = "dg"  # the content digest (a revisit compares it)
    PROBES = "pr"  # how many sketch postings the page was filed under (remove() undoes them)
    TEXT = "tx"  # the zlib-compressed extracted text (DEDUP_STORE_TEXT)
    CHURN = "cd"  # the digest with churn masked, when no text is stored and it differs
    CANONICAL = "cu"  # the page's rel=canonical, when it names another URL
    BODY = "bd"  # the digest of the response's bytes (the fast path: the same bytes again need no extraction)
    VISIBLE = "vs"  # a sample of the 5-shingles of all the page's visible text (visible.py)
    CHROME = "ch"  # how much of its main text is its chrome, in hundredths (one byte)
    PROBE_LOW = "pl"  # a coarse record's posting hashes' low 40 bits (remove() needs the whole hashes)


RECORD_EXTRAS = frozenset((Extra.DIGEST, Extra.PROBES, Extra.TEXT, Extra.CHURN, Extra.CANONICAL, Extra.BODY,
                           Extra.VISIBLE, Extra.CHROME, Extra.PROBE_LOW))
_LOW40 = np.uint64((1 << 40) - 1)


def probe_low_bits(sketch: np.ndarray) -> bytes:
    """The low 40 bits of each hash, 5 bytes each: with a coarse sketch's high 24, the whole hash."""
    return (sketch & _LOW40).astype(">u8").view(np.uint8).reshape(-1, 8)[:, 3:].tobytes()


def probe_hashes(doc: "DocRecord", probes: int) -> np.ndarray:
    """The hashes a record was filed under in the sketch postings (whole, for a coarse record too)."""
    head = doc.sketch[:probes]
    low = doc.extras.get(Extra.PROBE_LOW)
    if not doc.coarse or low is None:
        return head
    five = np.frombuffer(low, dtype=np.uint8).reshape(-1, 5)[:len(head)]
    eight = np.zeros((len(five), 8), dtype=np.uint8)
    eight[:, 3:] = five
    return head | eight.view(">u8").reshape(-1).astype(np.uint64)


@dataclass
class DocRecord:
    url: str
    fingerprint: int
    sketch: np.ndarray
    tokens: int
    time: float
    shingles: int = 0  # distinct shingles: with the sketch, gives intersection and containment
    run: int = 0
    title: str | None = None
    doc_id: int | None = None
    stage: str = "response"
    extras: dict[str, bytes] = field(default_factory=dict)  # what a verifier keeps per page
    coarse: bool = False  # the sketch keeps each hash's high 24 bits (a store that counts bytes: Redis spread)

    TEXT = Extra.TEXT

    def set_text(self, text: str) -> None:
        self.extras[self.TEXT] = zlib.compress(text.encode("utf-8", "surrogatepass"), 1)  # 1: a third the time of 6, 9% larger

    @property
    def text(self) -> str | None:
        """The stored extracted text; None when the page was kept without it (setting off, older index)."""
        data = self.extras.get(self.TEXT)
        if data is None:
            return None
        try:
            return zlib.decompress(data).decode("utf-8", "replace")
        except zlib.error:
            return None

    def encode(self) -> bytes:
        # cut on a character boundary; surrogatepass: a URL with a lone surrogate still round-trips
        title = (self.title or "")[:1000].encode("utf-8", "surrogatepass")[:4000].decode("utf-8", "ignore").encode()
        stage = _STAGES.index(self.stage) if self.stage in _STAGES else 0
        url = self.url.encode("utf-8", "surrogatepass")
        head = _HEAD.pack(self.fingerprint, self.time, self.tokens, self.shingles, self.run, self.sketch.size,
                          len(title), stage | (_COARSE if self.coarse else 0), len(url))
        if self.coarse:  # each hash's high 24 bits: 3 bytes, not 8
            sketch = (self.sketch >> np.uint64(40)).astype(">u4").view(np.uint8).reshape(-1, 4)[:, 1:].tobytes()
        else:
            sketch = self.sketch.astype(">u8").tobytes()
        parts = [head, sketch, title, url]
        for name, data in sorted(self.extras.items()):
            parts += [_EXTRA.pack(len(name), len(data)), name.encode(), bytes(data)]
        return b"".join(parts)

    @classmethod
    def decode(cls, data: bytes, doc_id: int | None = None) -> "DocRecord":
        """A stored record; StoreDamaged for bytes that are not one (bit rot, a zeroed page): a
        DedupError, so a crawl keeps and counts the page instead of losing its request."""
        try:
            return cls._decode(bytes(data), doc_id)
        except (struct.error, ValueError, IndexError, TypeError) as exc:  # (UnicodeDecodeError is a ValueError)
            which = f"kept record {doc_id}" if doc_id is not None else "a kept record"
            raise StoreDamaged(f"{which} cannot be read ({type(exc).__name__}): the index is damaged; "
                               "run `crawler-dedup index verify`, then `crawler-dedup index rebuild`") from exc

    @classmethod
    def _decode(cls, data: bytes, doc_id: int | None) -> "DocRecord":
        fp, t, tokens, shingles, run, n, tl, stage, ul = _HEAD.unpack_from(data)
        pos = _HEAD.size
        if _HEAD.size + (3 if stage & _COARSE else 8) * n + tl + ul > len(data):
            raise ValueError("lengths past the record's end")
        if not any(data):
            raise ValueError("a zeroed record")
        coarse = bool(stage & _COARSE)
        stage &= ~_COARSE
        if coarse:
            three = np.frombuffer(data, dtype=np.uint8, count=3 * n, offset=pos).reshape(-1, 3).astype(np.uint64)
            sketch = (three[:, 0] << np.uint64(56)) | (three[:, 1] << np.uint64(48)) | (three[:, 2] << np.uint64(40))
            pos += 3 * n
        else:
            sketch = np.frombuffer(data, dtype=">u8", count=n, offset=pos).astype(np.uint64)
            pos += 8 * n
        title = data[pos : pos + tl].decode("utf-8", "replace") or None
        pos += tl
        url = data[pos : pos + ul].decode("utf-8", "surrogatepass")
        pos += ul
        extras = {}
        while pos < len(data):
            nl, dl = _EXTRA.unpack_from(data, pos)
            pos += _EXTRA.size
            name = data[pos : pos + nl].decode()
            extras[name] = data[pos + nl : pos + nl + dl]
            pos += nl + dl
        if pos != len(data):
            raise ValueError("an extra past the record's end")
        return cls(url=url, fingerprint=fp, sketch=sketch, tokens=tokens, time=t, shingles=shingles, run=run,
                   title=title, doc_id=doc_id, stage=_STAGES[stage] if stage < len(_STAGES) else "response",
                   extras=extras, coarse=coarse)


@functools.lru_cache(maxsize=4096)  # a page's URL is looked up, then filed: canonicalized once (~25 us)
def canonical_url(url: str) -> str:
    """The URL as Scrapy's request fingerprint sees it: query sorted, fragment dropped, escapes
    normalized. Two URLs with the same canonical form are one page."""
    try:
        return canonicalize_url(url, keep_fragments=False)
    except (ValueError, UnicodeError, TypeError):  # a URL w3lib cannot parse stays as it is
        return url


def url_key(url: str) -> bytes:
    """The URL table's key: 16 bytes of the canonical URL (LMDB keys stop at 511 bytes)."""
    return xxhash.xxh3_128_digest(canonical_url(url).encode("utf-8", "surrogatepass"))
