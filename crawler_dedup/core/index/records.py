"""What the index keeps per page: `DocRecord` (URL, fingerprint, sketch, counts, time, title,
extras) in a compact binary form, and the URL's canonical form and key."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

import numpy as np
import xxhash

from ...exceptions import StoreDamaged
from ..page.site import canonical_url

# fingerprint, time, tokens, shingles, run, sketch size, title bytes, stage, url bytes
_HEAD = struct.Struct(">QdIIIHHBI")
_EXTRA = struct.Struct(">BI")  # name bytes, data bytes (a short record: two varints)
_STAGES = ("response", "item")
_COARSE = 0x80  # in the stage byte: the sketch is stored as its hashes' high 24 bits (records before the next)
_SHIFTED = 0x40  # in the stage byte: a byte z, then each hash's 16 bits below its z leading zeros (all of
# a bottom-k sketch's hashes are small: the smallest of a page's, they share their leading zeros)


class Extra:
    """Names of a record's extras (stored in the index: never renamed). The verifiers and the
    LSI check add their own (qg, qn, seq, lsi)."""

    DIGEST = "dg"  # the content digest (a revisit compares it)
    PROBES = "pr"  # how many sketch postings the page was filed under (remove() undoes them)
    TEXT = "tx"  # the zlib-compressed extracted text (DEDUP_STORE_TEXT)
    CHURN = "cd"  # the digest with churn masked, when no text is stored and it differs
    CANONICAL = "cu"  # the page's rel=canonical, when it names another URL (records.canonical_key)
    BODY = "bd"  # the digest of the response's bytes (the fast path: the same bytes again need no extraction)
    VISIBLE = "vs"  # a sample of the 5-shingles of all the page's visible text (visible.py)
    CHROME = "ch"  # how much of its main text is its chrome, in hundredths (one byte)
    PROBE_LOW = "pl"  # a coarse record's posting hashes' low 40 bits, or 48 (remove() needs the whole hashes)
    # without a stored text (DEDUP_STORE_TEXT=False) the visible-text rule reads a thin view (visible.py):
    VISIBLE_THIN = "vt"  # a thin sample of the visible text's 5-shingles
    MAIN_THIN = "mt"  # a thin sample of the main text's 5-shingles
    MAIN_SHINGLES = "mc"  # how many 5-shingles the main text has (two bytes, at most 65535)
    HEADLINE = "hc"  # how much of its title's headline the main text names, in hundredths (255: no headline)
    HELD = "sh"  # the page it superseded (and what that one replaced in this run) (JSON): told again if the run is killed


RECORD_EXTRAS = frozenset((Extra.DIGEST, Extra.PROBES, Extra.TEXT, Extra.CHURN, Extra.CANONICAL, Extra.BODY,
                           Extra.VISIBLE, Extra.CHROME, Extra.PROBE_LOW, Extra.VISIBLE_THIN, Extra.MAIN_THIN,
                           Extra.MAIN_SHINGLES, Extra.HEADLINE, Extra.HELD))
_LOW48 = np.uint64((1 << 48) - 1)


def probe_low_bits(sketch: np.ndarray) -> bytes:
    """The low 48 bits of each hash, 6 bytes each: with a coarse sketch's high bits (16 or more:
    DocRecord.bits), the whole hash."""
    return (sketch & _LOW48).astype(">u8").view(np.uint8).reshape(-1, 8)[:, 2:].tobytes()


def probe_hashes(doc: "DocRecord", probes: int) -> np.ndarray:
    """The hashes a record was filed under in the sketch postings (whole, for a coarse record too)."""
    head = doc.sketch[:probes]
    low = doc.extras.get(Extra.PROBE_LOW)
    if not doc.coarse or low is None:
        return head
    width = 5 if doc.bits == 24 else 6  # (a 24-bit record kept the low 40 bits)
    part = np.frombuffer(low, dtype=np.uint8).reshape(-1, width)[:len(head)]
    eight = np.zeros((len(part), 8), dtype=np.uint8)
    eight[:, 8 - width:] = part
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
    coarse: bool = False  # the sketch is kept short (a store that counts bytes: Redis spread): 2 bytes a hash
    bits: int = 64  # the high bits of each hash a record keeps (a coarse one: 24, or 16 past the leading zeros)

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
                          len(title), stage | (_SHIFTED if self.coarse else 0), len(url))
        if self.coarse:  # the 16 bits of each hash below the sketch's common leading zeros: 2 bytes, not 8
            top = int(self.sketch.max()) if self.sketch.size else 0
            z = min(48, 64 - top.bit_length())
            sketch = bytes([z]) + (self.sketch >> np.uint64(48 - z)).astype(">u2").tobytes()
        else:
            sketch = self.sketch.astype(">u8").tobytes()
        parts = [head, sketch, title, url]
        for name, data in sorted(self.extras.items()):
            if self.coarse:  # (a short record: each length a varint, names of 1-127 bytes)
                parts += [_varint(len(name)), _varint(len(data)), name.encode(), bytes(data)]
            else:
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
        width = 3 if stage & _COARSE else (2 if stage & _SHIFTED else 8)
        if _HEAD.size + width * n + (width == 2) + tl + ul > len(data):
            raise ValueError("lengths past the record's end")
        if not any(data):
            raise ValueError("a zeroed record")
        coarse, bits = bool(stage & (_COARSE | _SHIFTED)), 64
        stage &= ~(_COARSE | _SHIFTED)
        if width == 3:
            three = np.frombuffer(data, dtype=np.uint8, count=3 * n, offset=pos).reshape(-1, 3).astype(np.uint64)
            sketch = (three[:, 0] << np.uint64(56)) | (three[:, 1] << np.uint64(48)) | (three[:, 2] << np.uint64(40))
            pos, bits = pos + 3 * n, 24
        elif width == 2:
            z = data[pos]
            if z > 48:
                raise ValueError("a sketch's leading zeros past 48")
            sketch = np.frombuffer(data, dtype=">u2", count=n, offset=pos + 1).astype(np.uint64) << np.uint64(48 - z)
            pos, bits = pos + 1 + 2 * n, 16 + z
        else:
            sketch = np.frombuffer(data, dtype=">u8", count=n, offset=pos).astype(np.uint64)
            pos += 8 * n
        title = data[pos : pos + tl].decode("utf-8", "replace") or None
        pos += tl
        url = data[pos : pos + ul].decode("utf-8", "surrogatepass")
        pos += ul
        extras = {}
        while pos < len(data):
            if width == 2:  # (a name's length is one byte; a length under 128 too: most of them)
                nl, dl = data[pos], data[pos + 1]
                if nl < 0x80 and dl < 0x80:
                    pos += 2
                else:
                    nl, pos = _read_varint(data, pos)
                    dl, pos = _read_varint(data, pos)
            else:
                nl, dl = _EXTRA.unpack_from(data, pos)
                pos += _EXTRA.size
            name = data[pos : pos + nl].decode()
            extras[name] = data[pos + nl : pos + nl + dl]
            pos += nl + dl
        if pos != len(data):
            raise ValueError("an extra past the record's end")
        return cls(url=url, fingerprint=fp, sketch=sketch, tokens=tokens, time=t, shingles=shingles, run=run,
                   title=title, doc_id=doc_id, stage=_STAGES[stage] if stage < len(_STAGES) else "response",
                   extras=extras, coarse=coarse, bits=bits)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 35:
            raise ValueError("a length past 2^35")


def canonical_key(url: str) -> bytes:
    """What a record keeps of the URL its page names as canonical (Extra.CANONICAL): a mark byte and
    8 bytes of its URL key, not the URL (records written before this keep the URL itself)."""
    return b"\x00" + url_key(url)[:8]


def names_as_canonical(named: bytes, url: str) -> bool:
    """A record's Extra.CANONICAL names `url` (either form)."""
    if named[:1] == b"\x00":
        return named[1:] == url_key(url)[:8]
    return canonical_url(named.decode("utf-8", "surrogatepass")) == canonical_url(url)


def url_key(url: str) -> bytes:
    """The URL table's key: 16 bytes of the canonical URL (LMDB keys stop at 511 bytes)."""
    return xxhash.xxh3_128_digest(canonical_url(url).encode("utf-8", "surrogatepass"))
