"""Stage 1, in the executors: each part of an input read by one task, each page extracted and
fingerprinted with the crawl's own code (tools/scan/extract.py), one row a record.

A row is what the one-machine scan files in its state file (pass1_read's entries) without the
extraction, plus the page's simhash, sketch, word digest and candidate keys: the buckets in which
two pages that the index could compare meet (candidates.py pairs them). The extraction and the
body digest (what only a decision reads: most pages are in no pair) go to a file of the task's
own, RESULTS/part-NNNNNN.parquet, read back for paired pages only (decide.fetch): text never
moves through a shuffle for a page that no decision needs. Ids are stable across runs: a
record's `seq` is its input's number and its byte offset (OFFSET_BITS), never an id Spark assigns.
"""

from __future__ import annotations

from typing import Any, Iterator

import xxhash

from ...config import DedupConfig
from ...core.page.site import canonical_url, holder_of, lines_of, title_key
from ...core.page.title import headline_keys
from ...core.index.tables import Plan, plan_for
from ...core.page.fingerprint import Fingerprinted, body_digest
from ...core.decide.policy import Page
from ...core.verdict import Step
from .. import files, sources
from ..scan.extract import scan_extract
from ..scan.pass1_read import _row
from ..sources import PAGE, Fields

OFFSET_BITS = 40  # a record's seq: its input's number above, its byte offset (< 1 TiB) below
TABLE_BLOCKS = 6  # the candidate join's tables: C(6, 6-k) keys a page (k=3: 20 of 32 bits), any plan finds all within k

COLUMNS = ("seq", "file_no", "offset", "kind", "url", "time", "score", "why", "record_id", "concurrent_to",
           "payload_digest", "body", "same_as", "words", "canonical", "refers_to", "result")
WIDE = ("body", "result")  # in the task's results file, not in the Spark table
RESULTS = "results"  # under the job's work folder


def schema():
    """The signatures' Spark schema: pass1's entries columns but the wide ones, the task's part,
    `fp`, `digest` (the words'), `sketch` (as ordered_long values), `shingles` and `keys`."""
    from pyspark.sql import types as T

    kinds = {"seq": T.LongType(), "file_no": T.IntegerType(), "offset": T.LongType(), "time": T.DoubleType(),
             "score": T.DoubleType(), "same_as": T.LongType(), "words": T.LongType()}
    fields = [T.StructField(c, kinds.get(c, T.StringType()), True) for c in COLUMNS if c not in WIDE]
    fields += [T.StructField("part", T.IntegerType(), True), T.StructField("digest", T.LongType(), True),
               T.StructField("sketch", T.ArrayType(T.LongType()), True),
               T.StructField("shingles", T.LongType(), True)]
    fields += [T.StructField("fp", T.LongType(), True), T.StructField("keys", T.ArrayType(T.LongType()), True),
               T.StructField("holder", T.LongType(), True), T.StructField("lines", T.ArrayType(T.LongType()), True),
               T.StructField("title_key", T.LongType(), True), T.StructField("state", T.StringType(), True),
               T.StructField("canonical_rank", T.IntegerType(), True)]
    return T.StructType(fields)


def as_long(key: bytes) -> int:
    """An 8-byte key (a site line's, a site's headline's) as Spark's signed long (and back: as_key)."""
    return int.from_bytes(key, "big", signed=True)


def as_key(value: int) -> bytes:
    return int(value).to_bytes(8, "big", signed=True)


def site_columns(url: str | None, text: str | None, title: str | None, config: DedupConfig) -> tuple:
    """(holder, line keys, site headline key) of a page, what the index files it under at its site
    (the sites stage counts them over the whole archive: sites.py); Nones without site lines."""
    if not (config.site_boilerplate and config.store_text) or not url or text is None:
        return None, None, None
    lines = lines_of(text, url, title)
    headline = title_key(url, title)
    return (holder_of(url) - (1 << 64) if holder_of(url) >= 1 << 63 else holder_of(url),
            [as_long(k) for k in lines.filed] if lines is not None else None,
            as_long(headline) if headline is not None else None)


def seq_of(file_no: int, offset: int) -> int:
    return (file_no << OFFSET_BITS) | max(offset, 0)


def ordered_long(value: int) -> int:
    """A 64-bit unsigned value as a signed long that sorts as the unsigned one (sketches: the
    candidate stage takes the smallest hashes of two pages' union in Spark SQL)."""
    return int(value) - (1 << 63)


def signed(fp: int) -> int:
    """A 64-bit simhash as Spark's signed long (and back: & (2**64 - 1))."""
    return fp - (1 << 64) if fp >= 1 << 63 else fp


def table_plan(k: int) -> Plan:
    return plan_for(k, max(k + 1, TABLE_BLOCKS))


# a candidate key: its kind in the top bits (the limits differ by kind: candidates.LIMITS), 60 bits
# of a hash of the bucket below
TABLE, PROBE, HEAD, SITE_HEAD, URL = range(5)
KIND_SHIFT = 60
_LOW = (1 << KIND_SHIFT) - 1


def key_of(kind: int, data: bytes) -> int:
    """A candidate key as a (non-negative) Spark long."""
    return (kind << KIND_SHIFT) | (xxhash.xxh64_intdigest(data) & _LOW)


def candidate_keys(url: str | None, canonical: str | None, title: str | None, fp: Fingerprinted | None,
                   plan: Plan, probes: int) -> list[int]:
    """Every bucket the index would look a page up in: the simhash tables (TABLE: a pair in one
    needs the Hamming test), the smallest shingle hashes (PROBE), the URL and the rel=canonical
    target (URL), the headline's parts (HEAD) and the site's headline (SITE_HEAD)."""
    keys = []
    if fp is not None:
        keys += [key_of(TABLE, bytes([t]) + key) for t, key in enumerate(plan.keys(fp.fingerprint))]
        keys += [key_of(PROBE, int(v).to_bytes(8, "big")) for v in fp.sketch[:probes]]
        keys += [key_of(HEAD, k) for k in headline_keys(title)]
        site = title_key(url, title)
        if site is not None:
            keys.append(key_of(SITE_HEAD, site))
    for u in (url, canonical):
        if u:
            keys.append(key_of(URL, canonical_url(u).encode("utf-8", "surrogatepass")))
    return list(dict.fromkeys(keys))


SPLIT_BYTES = 64 * 1024**2  # a plain JSON-lines file is read in parts of this size, a task each


def splits(file_no: int, path: str, fmt: str, split_bytes: int = SPLIT_BYTES) -> list[tuple[int, str, str, int, int]]:
    """The tasks reading one input: (file_no, path, format, start, end); a plain JSON-lines file
    and a .warc.gz (one gzip member a record) one a part, read from the first line or member
    that starts in it; an ARC, a plain WARC or a gzip JSON-lines file one task (its records cannot
    be found from the middle)."""
    size = files.size(path)
    if size <= split_bytes:  # (one task: no need to ask the file what it is)
        return [(file_no, path, fmt, 0, -1)]
    cut = (fmt == "jsonl" and not sources.is_gzip(path)) or (
        fmt == "warc" and path.lower().endswith(".warc.gz") and sources.is_gzip(path))
    if not cut:
        return [(file_no, path, fmt, 0, -1)]
    return [(file_no, path, fmt, at, min(at + split_bytes, size)) for at in range(0, size, split_bytes)]


def _entries(path: str, fmt: str, start: int, end: int, fields: Fields, max_bytes: int):
    """The records that start in [start, end) (end -1: to the file's end): a part of a JSON-lines
    file begins at the first line that starts in it, of a .warc.gz at its first member."""
    if start > 0 and fmt == "warc":
        member = sources.next_member(path, start, end)
        if member is None:
            return
        start = member
    elif start > 0:
        with files.open_read(path) as fh:
            fh.seek(start - 1)
            start += len(fh.readline()) - 1  # (0 when `start` is a line's first byte)
    for entry in sources.entries(path, fmt, start, fields, max_bytes):
        if 0 <= end <= entry.offset:
            if entry.kind == sources.DAMAGED:  # (met reading on to the next record: cut there, job.py)
                yield entry
            return
        yield entry


def read_file(file_no: int, path: str, fmt: str, config: DedupConfig, fields: Fields,
              start: int = 0, end: int = -1, part: int = 0, results: str | None = None) -> Iterator[tuple]:
    """The rows of one input's records that start in [start, end), in record order (a task's
    work); their extractions to `results` (a folder: the part's file, `Results`)."""
    plan = table_plan(config.k)
    wide = Results(results, part) if results else None
    for entry in _entries(path, fmt, start, end, fields, config.max_bytes):
        digest = result = None
        if entry.kind == PAGE and entry.html is not None:
            raw = entry.html.encode("utf-8", "surrogatepass") if isinstance(entry.html, str) else entry.html
            digest = body_digest(raw)
            try:
                result = scan_extract(entry.html, entry.url or "", config)
            except Exception as exc:  # noqa: BLE001 - the page is kept, counted (as the scan does)
                result = (Step.ERROR, f"{type(exc).__name__}: {exc}", None, None)
            if result[0] == Step.ERROR:
                result = (Step.ERROR, str(result[1]), None, None)
        elif entry.kind == PAGE:  # a JSON line with text only: fingerprinted in the decide stage
            result = (Step.TEXT, entry.text, None, None)
        seq = seq_of(file_no, entry.offset)
        row = _row(seq, file_no, entry, digest, result, None)
        fp = result[1] if result is not None and result[0] == Step.FINGERPRINT else None
        if entry.kind == PAGE and result is not None and result[0] == Step.TEXT and fp is None:
            fp = _text_fingerprint(str(result[1] or ""), config)  # (for its keys: the row keeps the text)
        keys, site, state = None, (None, None, None), None
        if entry.kind == PAGE and result is not None:
            keys = candidate_keys(entry.url, result[3], result[2], fp if isinstance(fp, Fingerprinted) else None,
                                  plan, config.sketch_probes)
            if isinstance(fp, Fingerprinted):
                site = site_columns(entry.url, fp.text, result[2], config)
            state = page_state(entry.url or "", result, fp, config)
        canonical = result[3] if entry.kind == PAGE and result is not None else None
        narrow = tuple(v for c, v in zip(COLUMNS, row) if c not in WIDE)
        if wide is not None and entry.kind == PAGE:
            wide.add(seq, *(v for c, v in zip(COLUMNS, row) if c in WIDE))
        sure = fp if isinstance(fp, Fingerprinted) else None
        yield (*narrow, part, as_long(sure.digest[:8]) if sure else None,
               [ordered_long(v) for v in sure.sketch] if sure else None, int(sure.shingles) if sure else None,
               signed(sure.fingerprint) if sure else None, keys, *site, state,
               Page(0, entry.url or "", 0, canonical=canonical).value("canonical") if entry.kind == PAGE else None)
    if wide is not None:
        wide.close()


def results_file(results: str, part: int) -> str:
    return files.join(results, f"part-{part:06d}.parquet")


class Results:
    """One task's extractions (seq, body, result) as a Parquet file of its own, written in row
    groups as the task reads (a retried task writes it again whole: the name is the part's)."""

    ROWS = 512

    def __init__(self, folder: str, part: int):
        self.path = results_file(folder, part)
        self.rows: list[tuple] = []
        self.writer: Any = None
        self.fh: Any = None
        files.makedirs(folder)

    def add(self, seq: int, body, result) -> None:
        self.rows.append((seq, body, result))
        if len(self.rows) >= self.ROWS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table({"seq": pa.array([r[0] for r in self.rows], pa.int64()),
                          "body": pa.array([r[1] for r in self.rows], pa.binary()),
                          "result": pa.array([r[2] for r in self.rows], pa.binary())})
        if self.writer is None:
            self.fh = files.open_write(self.path + ".tmp" if not files.is_url(self.path) else self.path)
            self.writer = pq.ParquetWriter(self.fh, table.schema)
        self.writer.write_table(table)
        self.rows = []

    def close(self) -> None:
        if self.rows or self.writer is None:
            self._flush()
        self.writer.close()
        self.fh.close()
        if not files.is_url(self.path):  # (an object is stored whole when closed)
            files.replace(self.path + ".tmp", self.path)


def read_results(results: str, part: int, seqs: set[int]) -> dict[int, tuple]:
    """seq -> (body, result) of the pages `seqs` of one part's results file."""
    import pyarrow.parquet as pq

    import pyarrow as pa
    import pyarrow.compute as pc

    with files.open_read(results_file(results, part)) as fh:
        table = pq.read_table(fh)
    table = table.filter(pc.is_in(table.column("seq"), value_set=pa.array(sorted(seqs), pa.int64())))
    return dict(zip(table.column("seq").to_pylist(), zip(table.column("body").to_pylist(),
                                                         table.column("result").to_pylist())))


def page_state(url: str, result: tuple, fp, config: DedupConfig) -> str:
    """What the decide stage would make of a page alone (in no pair: no match is possible): `fp`
    kept, `skip:<why>` kept unchecked (Deduplicator.prepare's order: the allow list first), or
    `text`: to be decided by the Deduplicator (never with the features Spark allows)."""
    if any(p.search(url) for p in config.allow):
        return "skip:allowed"
    kind = result[0]
    if kind == Step.SKIPPED:
        return f"skip:{result[1]}"
    if kind == Step.ERROR:
        return "skip:error:extract"
    if isinstance(fp, Fingerprinted):
        return "fp"
    return f"skip:{fp}" if isinstance(fp, str) else "text"


def _text_fingerprint(text: str, config: DedupConfig):
    """The text's steps 2-4 (a Fingerprinted, or the Skip saying why not; None: not here)."""
    from ...core.decide.verify import make_verifier
    from ...core.page.plugins import feature_plugin, is_pure
    from ...core.page.fingerprint import fingerprint

    if not is_pure(config):  # features learned from the pages kept (IDF): the decide stage makes them
        return None
    return fingerprint(text, config, feature_plugin(config), make_verifier(config.verifier))
