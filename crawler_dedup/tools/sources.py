"""Reading crawled data for `scan` and `index add`: Scrapy feed exports (JSON lines) and WARC/ARC
files (warcio). Each record becomes an Entry with its byte offset, so the tools can copy it
unchanged into the kept or dropped output and a later run can continue from where one stopped."""

from __future__ import annotations

import gzip
import json
import os
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Iterator

from ..exceptions import SourceError
from . import files

# what an Entry is; a page is decided, the others follow a page or are passed through
PAGE = "page"  # an HTML response (or a JSON line with html or text): decided
REVISIT = "revisit"  # a WARC revisit record: the same payload as an earlier record, which it follows
INFO = "info"  # warcinfo, an ARC file header: written to both outputs
RELATED = "related"  # request, metadata, ...: follows the record it is concurrent to
OTHER = "other"  # passed through to the kept output, counted under `why`
DAMAGED = "damaged"  # the file could not be read from here on; `why` says what warcio said

HTML_TYPES = ("text/html", "application/xhtml+xml")
WARC_SUFFIXES = (".warc", ".warc.gz", ".arc", ".arc.gz")
JSONL_SUFFIXES = (".jsonl", ".jl", ".ndjson", ".jsonl.gz", ".jl.gz", ".ndjson.gz")


@dataclass
class Fields:
    """Field names of a JSON-lines feed export (DEDUP_ITEM_*_FIELD by default)."""

    url: str = "url"
    html: str = "html"
    text: str = "text"
    time: str | None = None
    score: str | None = None


@dataclass
class Entry:
    offset: int
    kind: str
    url: str | None = None
    html: bytes | str | None = None
    text: str | None = None
    time: float | None = None
    score: float | None = None
    why: str | None = None  # a page passed through unchecked, or what damaged the file
    record_id: str | None = None
    concurrent_to: tuple[str, ...] = ()
    payload_digest: str | None = None  # a response's, or the original's for a revisit
    refers_to: str | None = None  # a revisit: the URL of its original (WARC-Refers-To-Target-URI)
    item: dict | None = field(default=None, repr=False)  # a JSON line's object (for the drop log)


def input_format(path: str) -> str:
    """'warc' or 'jsonl', by name and then by the first bytes; SourceError when neither. `path`:
    a file here, or a URL (files.py: s3://, hdfs://, ...)."""
    try:
        kind = files.info(path)[0]
    except SourceError:
        raise
    except Exception as exc:  # noqa: BLE001 - an object store that refuses: said in one line
        raise SourceError(f"{path}: cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})") from None
    if kind == "dir":
        raise SourceError(f"{path} is a folder: give the files in it (e.g. {path}/*.warc.gz)")
    if kind != "file":
        raise SourceError(f"{path}: no such file")
    if not files.is_url(path) and not os.access(files.local(path), os.R_OK):
        raise SourceError(f"{path}: permission denied")
    name = path.lower()
    if name.endswith(WARC_SUFFIXES):
        return "warc"
    with files.open_read(path) as fh:
        head = fh.read(4096)
    if head[:2] == b"\x1f\x8b":
        try:
            head = _gunzip_head(path)
        except OSError:
            raise SourceError(f"{path}: a gzip file that cannot be read") from None
    stripped = head.lstrip()
    if name.endswith(JSONL_SUFFIXES) or stripped[:1] == b"{":
        return "jsonl"
    if stripped[:1] == b"[":
        raise SourceError(f"{path} is a JSON array (Scrapy's `-o items.json`); scan reads JSON lines: export with "
                          f"`-o items.jsonl`, or convert with `python -c \"import json,sys; [print(json.dumps(i)) "
                          f"for i in json.load(sys.stdin)]\" < {path} > items.jsonl`")
    if head.startswith(b"WARC/") or head[:12].split(b" ")[0].startswith((b"filedesc:", b"http:", b"https:")):
        return "warc"
    raise SourceError(f"{path}: neither a WARC/ARC file nor JSON lines (name it .warc, .warc.gz, .arc or .jsonl)")


def _gunzip_head(path: str) -> bytes:
    with open_gzip(path) as fh:
        return fh.read(4096)


def open_gzip(path: str):
    """A gzip file (here or at a URL) read as its uncompressed bytes; closing it closes the file."""
    raw = files.open_read(path)
    gz = gzip.GzipFile(fileobj=raw, mode="rb")
    close = gz.close

    def closing() -> None:
        close()
        raw.close()
    gz.close = closing  # type: ignore[method-assign]
    return gz


def entries(path: str, fmt: str, start: int = 0, fields: Fields | None = None,
            max_bytes: int = 5 * 1024**2) -> Iterator[Entry]:
    """The records of `path` from byte `start` on (a record boundary an earlier run reached)."""
    if fmt == "jsonl":
        return _jsonl(path, start, fields or Fields())
    return _warc(path, start, max_bytes)


# -- JSON lines ------------------------------------------------------------------------------

def _jsonl(path: str, start: int, fields: Fields) -> Iterator[Entry]:
    with open_jsonl(path) as fh:
        offset = start
        while True:
            try:
                if offset == start and start:
                    fh.seek(start)
                line = fh.readline()
            except (EOFError, OSError, zlib.error) as exc:  # a gzip file cut short or corrupt: read to there
                yield Entry(offset, DAMAGED, why=_gzip_damage(path, exc))
                return
            if not line:
                return
            at, offset = offset, offset + len(line)
            if not line.strip():
                yield Entry(at, OTHER, why="blank_line")
                continue
            yield _json_entry(at, line, fields)


def _gzip_damage(path: str, exc: Exception) -> str:
    message = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, EOFError):
        return f"{path} ends in the middle of its gzip stream (cut short: {message[:160]})"
    return f"{path}: {type(exc).__name__}: {message[:200]}"


def is_gzip(path: str) -> bool:
    with files.open_read(path) as fh:
        return fh.read(2) == b"\x1f\x8b"


def open_jsonl(path: str):
    """A JSON-lines file for reading bytes, gzip or not (offsets are in the uncompressed lines)."""
    return open_gzip(path) if is_gzip(path) else files.open_read(path)


def _json_entry(at: int, line: bytes, fields: Fields) -> Entry:
    try:
        obj = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return Entry(at, OTHER, why="bad_json")
    if not isinstance(obj, dict):
        return Entry(at, OTHER, why="bad_json")
    url = obj.get(fields.url)
    if not isinstance(url, str) or not url:
        return Entry(at, OTHER, why="no_url", item=obj)
    html, text = obj.get(fields.html), obj.get(fields.text)
    entry = Entry(at, PAGE, url=url, item=obj, time=_when(obj.get(fields.time)) if fields.time else None)
    if fields.score:
        try:
            entry.score = float(obj.get(fields.score))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            entry.score = None
    if isinstance(html, str) and html.strip():
        entry.html = html
    elif isinstance(text, str) and text.strip():
        entry.text = text
    else:
        entry.kind, entry.why = OTHER, "no_content"
    return entry


def _when(value) -> float | None:
    """A time field: seconds since 1970, or ISO 8601 (a WARC-Date, Scrapy's datetime as text)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value:
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        return when.timestamp()
    return None


# -- WARC and ARC ----------------------------------------------------------------------------

def _warc(path: str, start: int, max_bytes: int) -> Iterator[Entry]:
    from warcio.archiveiterator import ArchiveIterator

    with files.open_read(path) as fh:
        if start:
            fh.seek(start)
        records = ArchiveIterator(fh, arc2warc=True)
        end = start
        last: Entry | None = None  # held back until the next one: the file may end inside it
        try:
            for record in records:
                entry = _warc_entry(0, record, max_bytes)  # (its payload first: the offset reads to the end)
                at = entry.offset = records.get_record_offset()
                end = max(end, at + records.get_record_length())
                if last is not None:
                    yield last
                last = entry
        except Exception as exc:  # noqa: BLE001 - warcio's errors have no common base
            if last is not None:
                yield last
            yield Entry(end, DAMAGED, why=_damage(path, exc))
            return
    if last is not None:
        cut = _cut_short(path, last.offset, end)
        yield Entry(last.offset, DAMAGED, why=cut) if cut else last
        if not cut and (rest := _after(path, end)):
            yield Entry(end, DAMAGED, why=rest)


def next_member(path: str, start: int, end: int = -1) -> int | None:
    """The byte offset of the first gzip member in [start, end) (end -1: to the file's end) that
    holds a WARC record's start (a .warc.gz is one member a record: a task may begin reading
    there), None when there is none."""
    magic = b"\x1f\x8b\x08"
    with files.open_read(path) as fh, files.open_read(path) as probe:
        fh.seek(start)
        base, carry = start, b""
        while (end < 0 or base < end) and (chunk := fh.read(1 << 20)):
            data = carry + chunk
            i = data.find(magic)
            while i != -1 and (end < 0 or base + i < end):
                probe.seek(base + i)
                try:
                    head = zlib.decompressobj(wbits=31).decompress(probe.read(1 << 14), 64)
                except zlib.error:
                    head = b""
                if head.startswith(b"WARC/"):
                    return base + i
                i = data.find(magic, i + 1)
            carry = data[-(len(magic) - 1):]
            base += len(data) - len(carry)
    return None


def _after(path: str, end: int) -> str | None:
    """Bytes after the last record that warcio read no record from: a record cut in its headers."""
    with files.open_read(path) as fh:
        fh.seek(end)
        tail = fh.read(1 << 16)
    if tail.strip(b"\r\n\x00 "):
        return f"{path} ends inside a record (at byte {end}): the file was cut short; that record is left out"
    return None


def _cut_short(path: str, at: int, end: int) -> str | None:
    """What is wrong with a file's last record when the file ends inside it (warcio reads a cut
    record as a shorter one): its gzip member unfinished, or fewer bytes than its Content-Length."""
    with files.open_read(path) as fh:
        fh.seek(at)
        raw = fh.read(end - at)
    if raw[:2] == b"\x1f\x8b":
        member = zlib.decompressobj(wbits=31)
        try:
            raw = member.decompress(raw)
        except zlib.error as exc:
            return f"{path}: its last record (at byte {at}) is damaged ({exc})"
        if not member.eof:
            return f"{path} ends inside its last record (at byte {at}): the file was cut short; that record is left out"
    head, sep, body = raw.partition(b"\r\n\r\n")
    length = next((line.split(b":", 1)[1].strip() for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), None)
    if sep and length is not None and length.isdigit() and len(body) < int(length):
        return f"{path} ends inside its last record (at byte {at}): the file was cut short; that record is left out"
    return None


def _damage(path: str, exc: Exception) -> str:
    message = " ".join(str(exc).split())
    if "beyond single record" in message or "multi-member" in message:
        return (f"{path} is one gzip stream, not one gzip member a record, so its records cannot be copied "
                f"one by one; `warcio recompress {path} FIXED.warc.gz` rewrites it")
    return f"{type(exc).__name__}: {message[:200]}"


def _warc_entry(at: int, record, max_bytes: int) -> Entry:
    headers = record.rec_headers
    kind = record.rec_type
    entry = Entry(at, OTHER, url=headers.get_header("WARC-Target-URI"), record_id=headers.get_header("WARC-Record-ID"),
                  time=_when(headers.get_header("WARC-Date")), payload_digest=headers.get_header("WARC-Payload-Digest"))
    entry.concurrent_to = tuple(v for k, v in headers.headers if k.lower() == "warc-concurrent-to")
    if kind in ("warcinfo",):
        entry.kind = INFO
        return entry
    if kind == "revisit":
        entry.kind = REVISIT
        entry.refers_to = headers.get_header("WARC-Refers-To-Target-URI") or entry.url
        return entry
    if kind not in ("response", "resource"):
        entry.kind = RELATED
        return entry
    if not entry.url:
        entry.why = "no_url"
        return entry
    http = record.http_headers
    if kind == "response" and http is not None:
        status = http.get_statuscode()
        if not (status or "").startswith("2"):
            entry.why = "not_ok_status"
            return entry
        ctype = http.get_header("Content-Type")
    else:
        ctype = headers.get_header("Content-Type")
    body = _read_upto(record.content_stream(), max_bytes + 1)
    if not _is_html(ctype, body):
        entry.why = "not_html"
        return entry
    if len(body) > max_bytes:
        entry.why = "too_large"
        return entry
    if not body.strip():
        entry.why = "empty"
        return entry
    entry.kind, entry.html = PAGE, body
    return entry


def _read_upto(stream, limit: int) -> bytes:
    """Up to `limit` bytes (warcio's decoding readers return a block at a time)."""
    parts, left = [], limit
    while left > 0:
        chunk = stream.read(min(left, 1 << 16))
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _is_html(ctype: str | None, body: bytes) -> bool:
    if ctype:
        return ctype.split(";")[0].strip().lower() in HTML_TYPES
    head = body[:1024].lstrip().lower()  # no Content-Type: by the first bytes, as a browser would
    return head.startswith((b"<!doctype html", b"<html")) or b"<html" in head
