"""Feeds written without the pages superseded later in the same crawl.

A page kept early in a crawl can be replaced later in it by its rel=canonical URL or a cleaner
URL of it (recording.py `_superseded`: a `superseded` drop-log line, the page_superseded signal);
its item went to the feed already. `SupersededFilter` is a feed post-processing plugin the add-on
puts first in every feed's chain (addon.py), so it sees what the item exporter writes before any
compression plugin does: it keeps those bytes in a temporary file and, when Scrapy closes the
feed, writes them on to the rest of the chain without the records whose URL field
(`DEDUP_ITEM_URL_FIELD`) is a URL superseded during this crawl. JSON lines, JSON and CSV are
filtered; a feed where nothing was superseded (an empty one too) goes on byte for byte.

Scrapy builds a plugin with only `(file, feed_options)`: the add-on puts its crawler's token into
each feed's options, and `_CRAWLS` maps the token to that crawler's set, which the recorder fills
at decision time (`mark`) and which is dropped when the crawler's engine stops.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import logging
import shutil
import tempfile
import uuid
import weakref
from collections.abc import Iterator, Mapping
from typing import IO, Any, NamedTuple

from scrapy import signals
from scrapy.utils.misc import load_object

from . import stats as keys

logger = logging.getLogger(__name__)

PLUGIN = "crawler_dedup.feeds.SupersededFilter"  # the public path (crawler_dedup/feeds.py), as FEEDS names it
TOKEN = "dedup_crawl"  # feed option: the crawler whose superseded URLs the plugin leaves out
URI = "dedup_feed_uri"  # feed option: the feed's URI as FEEDS names it (for the log line)
FILTERED = {"jsonlines": "jsonlines", "jsonl": "jsonlines", "jl": "jsonlines", "json": "json", "csv": "csv"}
_ATTR = "_crawler_dedup_superseded"
_CHUNK = 1 << 20
# csv.writer's formatting parameters among a CSV feed's item_export_kwargs (the rest are the exporter's)
_CSV_FORMAT = ("dialect", "delimiter", "quotechar", "escapechar", "doublequote", "skipinitialspace", "quoting", "strict")


class Superseded:
    """One crawl's URLs superseded during it (in a dry run none), for its feeds."""

    def __init__(self, crawler, token: str):
        self.crawler, self.token = crawler, token
        self.urls: set[str] = set()
        self.batches: dict[str, int] = {}  # feed URI -> plugins made for it (its batch number)
        self.warned: set[str] = set()

    def forget(self) -> None:
        _CRAWLS.pop(self.token, None)

    def url_field(self) -> str:
        return str(self.crawler.settings.get("DEDUP_ITEM_URL_FIELD") or "url")


# token -> its crawl's set: weak, so a crawler that never ran its engine leaves nothing behind
_CRAWLS: weakref.WeakValueDictionary[str, Superseded] = weakref.WeakValueDictionary()


def register(crawler) -> str:
    """The crawler's token (made once), for its feeds' options."""
    crawl = getattr(crawler, _ATTR, None)
    if crawl is None:
        crawl = Superseded(crawler, uuid.uuid4().hex)
        setattr(crawler, _ATTR, crawl)  # (the crawler holds it; the registry only names it)
        _CRAWLS[crawl.token] = crawl
        crawler.signals.connect(crawl.forget, signal=signals.engine_stopped)
    return crawl.token


def mark(crawler, url: str, replaced_by: str) -> None:
    """`url` was superseded by `replaced_by` in this crawl (recording.py, at decision time)."""
    crawl = getattr(crawler, _ATTR, None)
    if crawl is not None:
        crawl.urls.add(url)
        crawl.urls.discard(replaced_by)  # kept from now on (as droplog.kept_now reads the log)


def crawl_of(token: Any) -> Superseded | None:
    return _CRAWLS.get(token) if isinstance(token, str) else None


class Piece(NamedTuple):
    """A run of a feed's text: a record (`url` its URL field, `sep` what stood before it) or
    the text around the records (`url` and `sep` None)."""

    raw: str
    url: str | None = None
    sep: str | None = None


class _Unreadable(Exception):
    """The feed is not what its format's exporter writes: it goes on as it is."""


class SupersededFilter:
    """A FEEDS "postprocessing" plugin: the feed without the pages superseded later in the crawl."""

    def __init__(self, file: IO[bytes], feed_options: dict[str, Any]) -> None:
        self.file, self.feed_options = file, feed_options
        self.crawl = crawl_of(feed_options.get(TOKEN))
        self.uri = str(feed_options.get(URI) or "?")
        self.format = FILTERED.get(str(feed_options.get("format") or "").lower())
        self.buffer: IO[bytes] | None = None
        if self.crawl is None:
            logger.warning("Dedup: feed %s is not filtered (%s is in its postprocessing without the add-on's "
                           "crawl token): pages superseded later in the crawl may remain in it", self.uri, PLUGIN)
        elif self.format is None:
            self._warn_once(f"Dedup: feed {self.uri} is written as {feed_options.get('format')!r}, which is passed "
                            "on unchanged: pages superseded later in the crawl may remain in it (JSON lines, JSON "
                            "and CSV feeds are filtered)")
        else:
            self.crawl.batches[self.uri] = self.batch = self.crawl.batches.get(self.uri, 0) + 1
            tempdir = self.crawl.crawler.settings.get("FEED_TEMPDIR") or None
            self.buffer = tempfile.TemporaryFile(prefix="dedup-feed-", dir=tempdir)

    def write(self, data: bytes) -> int:
        if self.buffer is None:
            return self.file.write(data)
        self.buffer.write(data)
        return len(data)

    def close(self) -> None:
        try:
            if self.buffer is not None:
                self._filter(self.buffer)
        finally:
            if self.buffer is not None:
                self.buffer.close()
                self.buffer = None
            self._close_wrapped()

    # -- at close -------------------------------------------------------------------------------
    def _filter(self, buffer: IO[bytes]) -> None:
        assert self.crawl is not None and self.format is not None
        urls = frozenset(self.crawl.urls)
        drop: set[int] = set()
        if urls:
            try:
                drop = {n for n, p in enumerate(r for r in self._pieces(buffer) if r.sep is not None)
                        if p.url in urls}
            except (_Unreadable, ValueError, UnicodeError, LookupError, csv.Error) as exc:
                logger.warning("Dedup: feed %s could not be read as %s (%s): passed on unchanged, pages superseded "
                               "later in the crawl may remain in it", self._name(), self.format, exc)
                drop = set()
        buffer.seek(0)
        if drop:
            self._write_without(buffer, drop)
            keys.counted(self.crawl.crawler.stats, keys.FEED_SUPERSEDED_REMOVED, len(drop))
        else:  # nothing to take out: the exporter's bytes as they are
            shutil.copyfileobj(buffer, self.file, _CHUNK)
        logger.info("Dedup: removed %d superseded pages from feed %s", len(drop), self._name())

    def _write_without(self, buffer: IO[bytes], drop: set[int]) -> None:
        encoding = self._encoding()
        first, n = True, -1
        for piece in self._pieces(buffer):
            if piece.sep is None:
                self.file.write(piece.raw.encode(encoding, "surrogateescape"))
                continue
            n += 1
            if n in drop:
                continue
            # (the separator before a record goes with it: none before the first one written)
            text = piece.raw if first else piece.sep + piece.raw
            self.file.write(text.encode(encoding, "surrogateescape"))
            first = False

    def _pieces(self, buffer: IO[bytes]) -> Iterator[Piece]:
        assert self.crawl is not None
        field = self.crawl.url_field()
        buffer.seek(0)
        text = io.TextIOWrapper(buffer, encoding=self._encoding(), errors="surrogateescape", newline="")
        try:
            if self.format == "jsonlines":
                yield from _jsonlines(text, field)
            elif self.format == "json":
                yield from _json(text, field)
            else:
                yield from self._csv(text, field)
        finally:
            text.detach()  # (the buffer stays open)

    def _csv(self, text: IO[str], field: str) -> Iterator[Piece]:
        """The header line (CsvItemExporter's, in its dialect) and a record a row; the URL column
        found by the header, or by the feed's fields when it has none."""
        options = self.feed_options.get("item_export_kwargs") or {}
        fmt = {k: v for k, v in options.items() if k in _CSV_FORMAT}
        if fmt.get("quoting", csv.QUOTE_MINIMAL) != csv.QUOTE_NONE:
            fmt["quoting"] = csv.QUOTE_MINIMAL  # (read as text: a number stays the string it was written as)
        lines = _Lines(text)
        rows = csv.reader(lines, **fmt)
        fields = self.feed_options.get("fields")
        column = None
        if options.get("include_headers_line", True):
            header = next(rows, None)
            if header is None:
                return  # an empty feed
            yield Piece(lines.take())
            name = fields.get(field, field) if isinstance(fields, Mapping) else field
            if name not in header:
                raise _Unreadable(f"no {name!r} column in its header")
            column = header.index(name)
        elif fields and field in list(fields):
            column = list(fields).index(field)
        else:
            raise _Unreadable(f"no header line and no {field!r} in its fields (FEED_EXPORT_FIELDS)")
        for row in rows:
            raw = lines.take()
            yield Piece(raw, row[column] if column < len(row) else None, "")
        if lines.taken:  # (text csv.reader did not return as a row)
            yield Piece(lines.take())

    # -- helpers --------------------------------------------------------------------------------
    def _encoding(self) -> str:
        encoding = self.feed_options.get("encoding") or "utf-8"
        codecs.lookup(encoding)
        if "[,\n".encode(encoding) != b"[,\n":  # (the exporters write their brackets and commas as ASCII bytes)
            raise _Unreadable(f"its encoding {encoding} is not one ASCII bytes read as themselves in")
        return encoding

    def _name(self) -> str:
        return f"{self.uri} (batch {self.batch})" if "%(" in self.uri else self.uri

    def _warn_once(self, message: str) -> None:
        assert self.crawl is not None
        if self.uri not in self.crawl.warned:
            self.crawl.warned.add(self.uri)
            logger.warning(message)

    def _close_wrapped(self) -> None:
        """The next plugin of the chain is closed (a compressor writes its end then); the
        storage's own file is not: Scrapy stores it after the chain (an S3 or FTP storage reads
        its temporary file again)."""
        chain = self.feed_options.get("postprocessing") or []
        plugins = []
        for entry in chain:
            try:
                plugin = load_object(entry)
            except (ImportError, NameError, ValueError, TypeError):
                continue
            if isinstance(plugin, type) and plugin is not SupersededFilter:
                plugins.append(plugin)
        if plugins and isinstance(self.file, tuple(plugins)):
            self.file.close()
        elif hasattr(self.file, "flush"):
            self.file.flush()


class _Lines:
    """The lines csv.reader asks for, kept until taken: a row's text as it was written."""

    def __init__(self, text: IO[str]):
        self.text = text
        self.taken: list[str] = []

    def __iter__(self) -> "_Lines":
        return self

    def __next__(self) -> str:
        line = self.text.readline()
        if not line:
            raise StopIteration
        self.taken.append(line)
        return line

    def take(self) -> str:
        raw = "".join(self.taken)
        self.taken = []
        return raw


def _url(record: Any, field: str) -> str | None:
    value = record.get(field) if isinstance(record, dict) else None
    return value if isinstance(value, str) else None


def _jsonlines(text: IO[str], field: str) -> Iterator[Piece]:
    """One record a line (JsonLinesItemExporter); a line that is not JSON is kept."""
    for line in iter(text.readline, ""):
        try:
            url = _url(json.loads(line), field) if line.strip() else None
        except ValueError:
            url = None
        yield Piece(line, url, "")


def _json(text: IO[str], field: str) -> Iterator[Piece]:
    """JsonItemExporter's array ("[", records between "," and newlines when indented, "]"), read
    a record at a time."""
    decoder = json.JSONDecoder()
    window, pos, eof, size = "", 0, False, _CHUNK

    def more() -> bool:
        nonlocal window, pos, eof
        if eof:
            return False
        chunk = text.read(size)
        if not chunk:
            eof = True
            return False
        window, pos = window[pos:] + chunk, 0
        return True

    def at() -> str:
        """The character at pos ("" at the end)."""
        return window[pos] if pos < len(window) or more() else ""

    def blank() -> str:
        """The whitespace at pos, taken."""
        nonlocal pos
        out = ""
        while at() in (" ", "\t", "\r", "\n"):
            out += window[pos]
            pos += 1
        return out

    def rest() -> str:
        nonlocal pos
        out = window[pos:]
        pos = len(window)
        while more():
            out += window[pos:]
            pos = len(window)
        return out

    head = blank()
    if at() == "" and not head:
        return  # an empty file (nothing exported)
    if at() != "[":
        raise _Unreadable("it does not start with '['")
    pos += 1
    head += "[" + blank()
    yield Piece(head)
    sep, gap = "", ""
    if at() != "]":
        while True:
            while True:  # one record, reading on until it is whole
                try:
                    record, end = decoder.raw_decode(window, pos)
                except json.JSONDecodeError:
                    record, end = None, -1
                if end >= 0 and (end < len(window) or eof):
                    break
                if more():
                    size = min(size * 2, 1 << 26)  # (a long record: larger reads)
                elif end < 0:
                    raise _Unreadable("a record does not end")
            raw, pos = window[pos:end], end
            yield Piece(raw, _url(record, field), sep)
            gap = blank()
            if at() == "]":
                break
            if at() != ",":
                raise _Unreadable(f"{at()!r} between records")
            pos += 1
            sep = gap + "," + blank()
    end_ = rest()  # "]" and what follows it
    if end_[:1] != "]" or end_[1:].strip():
        raise _Unreadable("text after the array")
    yield Piece(gap + end_)
