"""What the index keeps of a kept page's response for the next crawl's conditional request: its
validators (ETag, Last-Modified), when it was fetched, and (DEDUP_CONDITIONAL_COPY) a compressed
copy of its body, so that a 304 can still be handed to the spider. No Scrapy here: headers come
in as plain strings.

The rules a careful crawler follows (docs/recrawls.md, Conditional requests):
- a validator is sent back exactly as received; one that could smuggle a header (CR, LF, NUL) or
  is overlong is not kept;
- a weak ETag (`W/"..."`) is sent too: If-None-Match compares weakly (RFC 9110 13.1.2), and a 304
  for it means the page is equivalent, which is what "unchanged" means here;
- a Last-Modified that is not an HTTP date, or later than the response's own Date, is not kept
  (a server clock that lies would turn every later change into a 304);
- a response marked `Cache-Control: no-store` is not copied;
- a 304 is the server's word; a page is fetched in full again once its last full fetch is older
  than DEDUP_CONDITIONAL_MAX_AGE, so a server whose 304 lies is caught within that time.
"""

from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass, replace
from datetime import timezone
from email.utils import formatdate, parsedate_to_datetime
from typing import Mapping

from ...exceptions import StoreDamaged

# doc id, fetched (seconds), kept (the record's time, seconds), run, body length, 8 bytes of its
# digest, the ETag's and the Last-Modified's lengths (_AS_TIME: 4 bytes of seconds that format
# back to the very string); then, with a copy: status, the content type's length, the content
# type, the zlib copy. About 64 bytes without a copy: a Redis index pays that per kept page with
# validators
_HEAD = struct.Struct(">QIIIIQBB")
_COPY = struct.Struct(">HB")
_TIME = struct.Struct(">I")
_AS_TIME = 255
_COPY_OF = 1 << 31  # the run field's top bit: the entry is a dropped copy's (its doc id names the page it copies)
_NEAR = 1 << 30  # and the next: that copy was a near one (else exact)
_NAMED = 1 << 29  # and the next: that copy named the page it copies as its rel=canonical
_MAX_VALIDATOR = 250  # bytes: longer is no validator a careful server sends
_SKEW = 60.0  # seconds a Last-Modified may lie after the response's Date (clocks drift)

# the three forms of an HTTP date (RFC 9110 5.6.7): IMF-fixdate, RFC 850, asctime
_HTTP_DATE = re.compile(r"[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT"
                        r"|[A-Z][a-z]{5,8}, \d{2}-[A-Z][a-z]{2}-\d{2} \d{2}:\d{2}:\d{2} GMT"
                        r"|[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}")

IF_HEADERS = ("If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range", "Range")


@dataclass
class Fetch:
    """A response as the index keeps it for the URL's next request."""

    etag: str | None = None
    last_modified: str | None = None
    fetched: float = 0.0  # the last full download (DEDUP_CONDITIONAL_MAX_AGE counts from it)
    kept: float = 0.0  # when the URL's kept page was kept (DEDUP_WINDOW counts from it)
    status: int = 200
    length: int = 0  # the body's bytes (what a 304 saves downloading)
    digest: bytes = b"\x00" * 16  # fingerprint.body_digest of the body (its first 8 bytes stored)
    content_type: str | None = None
    copy: bytes | None = None  # zlib of the body (DEDUP_CONDITIONAL_COPY), else None
    doc_id: int = 0  # the URL's kept record, or the kept page a dropped copy duplicated (`copy_of`)
    run: int = 0  # the run that fetched it
    copy_of: bool = False  # a dropped copy's entry: a 304 drops it again against doc_id's page
    near: bool = False  # that copy was a near duplicate (else an exact one)
    named: bool = False  # that copy named the page it duplicates as its rel=canonical
    body: bytes | None = None  # the body itself, before filing (never stored as it is)
    keep_copy: bool = False  # before filing: store a copy of `body`
    asked: bool = False  # before filing: a copy's entry as read for its 304 (filed only when its page is another record now)

    @property
    def validators(self) -> bool:
        return bool(self.etag or self.last_modified)

    def headers(self) -> dict[str, str]:
        """The conditional request's headers."""
        out = {}
        if self.etag:
            out["If-None-Match"] = self.etag
        if self.last_modified:
            out["If-Modified-Since"] = self.last_modified
        return out

    def page(self) -> bytes | None:
        """The copied body; None when there is none or it cannot be read."""
        if self.copy is None:
            return None
        try:
            return zlib.decompress(self.copy)
        except zlib.error:
            return None

    def renewed(self, headers: Mapping[str, str | None]) -> "Fetch | None":
        """This entry with the validators a 304 carried, when they are new (a 304 updates what is
        stored, RFC 9111 4.3.4); None when it carried none or the same (a copy's entry `asked`:
        re-pointed when the page it copies is filed under another record since). The time of the last full
        download stays (DEDUP_CONDITIONAL_MAX_AGE counts from it)."""
        get = {k.lower(): v for k, v in headers.items()}.get
        etag = _clean(get("etag")) or self.etag
        last_modified = _clean(get("last-modified"))
        if last_modified is None or _http_time(last_modified) is None:
            last_modified = self.last_modified
        if (etag, last_modified) == (self.etag, self.last_modified):
            return replace(self, body=None, keep_copy=False, asked=True) if self.copy_of else None
        return replace(self, etag=etag, last_modified=last_modified, body=None, keep_copy=self.copy is not None)

    def same_as(self, other: "Fetch") -> bool:
        """The same validators and bytes (nothing to write again but the time)."""
        return (self.etag, self.last_modified, self.digest[:8], self.status) == (
            other.etag, other.last_modified, other.digest[:8], other.status)

    def encode(self) -> bytes:
        if self.copy is None and self.keep_copy and self.body is not None:
            self.copy = zlib.compress(self.body, 3)  # 3: half the time of 6 (1 ms for 100 KB), 10% larger
        etag = (self.etag or "").encode("latin-1")
        lm = (self.last_modified or "").encode("latin-1")
        when = _http_time(self.last_modified)
        if when is not None and 0 <= when < 2**32 and formatdate(when, usegmt=True) == self.last_modified:
            lm, lm_len = _TIME.pack(int(when)), _AS_TIME
        else:
            lm_len = len(lm)
        parts = [_HEAD.pack(self.doc_id, int(self.fetched), int(self.kept), self.run | (_COPY_OF if self.copy_of else 0) | (_NEAR if self.near else 0)
                            | (_NAMED if self.named else 0),
                            self.length,
                            int.from_bytes(self.digest[:8].ljust(8, b"\x00"), "big"), len(etag), lm_len), etag, lm]
        if self.copy is not None:
            ct = (self.content_type or "").encode("latin-1")[:255]
            parts += [_COPY.pack(self.status, len(ct)), ct, self.copy]
        return b"".join(parts)

    @classmethod
    def decode(cls, data: bytes) -> "Fetch":
        try:
            data = bytes(data)
            doc_id, fetched, kept, run, length, digest, le, ll = _HEAD.unpack_from(data)
            pos = _HEAD.size
            etag, pos = data[pos:pos + le].decode("latin-1"), pos + le
            if ll == _AS_TIME:
                lm, pos = formatdate(_TIME.unpack_from(data, pos)[0], usegmt=True), pos + _TIME.size
            else:
                lm, pos = data[pos:pos + ll].decode("latin-1"), pos + ll
            status, ct, copy = 200, "", None
            if pos < len(data):
                status, lc = _COPY.unpack_from(data, pos)
                pos += _COPY.size
                ct, copy = data[pos:pos + lc].decode("latin-1"), data[pos + lc:]
                pos += lc
            if pos > len(data) or not any(data[:_HEAD.size]):
                raise ValueError("lengths past the entry's end, or a zeroed entry")
        except (struct.error, ValueError) as exc:
            raise StoreDamaged(f"a fetch entry cannot be read ({type(exc).__name__}): the index is damaged; "
                               "run `crawler-dedup index verify`") from exc
        return cls(etag=etag or None, last_modified=lm or None, fetched=float(fetched), kept=float(kept), status=status,
                   length=length, digest=digest.to_bytes(8, "big"), content_type=ct or None, copy=copy, doc_id=doc_id,
                   run=run & ~(_COPY_OF | _NEAR | _NAMED), copy_of=bool(run & _COPY_OF), near=bool(run & _NEAR),
                   named=bool(run & _NAMED))


def doc_of(data: bytes) -> int:
    """The kept record an entry belongs to, without reading the rest."""
    return int.from_bytes(bytes(data[:8]), "big")


def is_copy_entry(data: bytes) -> bool:
    """A dropped copy's entry (its record is another URL's page), without reading the rest."""
    return len(data) >= 20 and bool(int.from_bytes(bytes(data[16:20]), "big") & _COPY_OF)


def _clean(value: str | None) -> str | None:
    """A header value fit to be sent back as it came, else None."""
    if value is None:
        return None
    value = value.strip()
    if not value or len(value) > _MAX_VALIDATOR or any(c in value for c in "\r\n\x00"):
        return None
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return None
    return value


def _http_time(value: str | None) -> float | None:
    """An HTTP date's time; None for anything else (a date with more after it, another zone)."""
    if not value or not _HTTP_DATE.fullmatch(value):
        return None
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:  # (asctime: GMT, unsaid)
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.timestamp()


def from_response(headers: Mapping[str, str | None], status: int, body: bytes, digest: bytes, now: float,
                  copy: bool) -> Fetch:
    """What to keep of a response (`headers`: names as sent, any case; values decoded as latin-1).
    `copy`: keep a copy of the body, unless the response forbids storing it."""
    get = {k.lower(): v for k, v in headers.items()}.get
    etag = _clean(get("etag"))
    last_modified = _clean(get("last-modified"))
    modified = _http_time(last_modified)
    date = _http_time(get("date"))
    if modified is None or modified > (date if date is not None else now) + _SKEW:
        last_modified = None
    no_store = "no-store" in (get("cache-control") or "").lower()
    return Fetch(etag=etag, last_modified=last_modified, fetched=now, status=status, length=len(body),
                 digest=digest, content_type=_clean(get("content-type")), body=body,
                 keep_copy=copy and not no_store and bool(etag or last_modified))
