"""`crawler-dedup index verify` and `index rebuild`: is every entry of the index where the kept
records say it should be, and filing the kept records again into a new index when it is not.
What the index knows lives here; what the store's file is (LMDB's pages, its damage, swapping
the file) lives in the store, behind the `Repairable` methods of stores/base.py.

The kept records (table `docs`) are the index's truth: every other table is derived from them
(index.add), except the learned template lines (`tpl`), which are learned again by later crawls.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from ...exceptions import DedupError, StoreDamaged, StoreError, StoreFormat
from ...stores.base import FORMAT_VERSION, MIGRATABLE, from_u64, u64
from .migrate import unreadable_format
from .fetches import Fetch
from .neardup import NearDupIndex
from .txn import TABLES, IndexTxn, table_name
from .migrate import migrate
from .records import DocRecord, Extra, url_key
from ..page.site import canonical_url, lines_of
from .tables import Plan

LISTED = 20  # problems listed by name; the rest are counted


@dataclass
class Report:
    pages: int = 0
    entries: int = 0  # table entries checked
    problems: list[str] = field(default_factory=list)
    count: int = 0  # problems found (only the first LISTED are in `problems`)

    def add(self, what: str) -> None:
        self.count += 1
        if len(self.problems) < LISTED:
            self.problems.append(what)

    @property
    def ok(self) -> bool:
        return self.count == 0


def _rows(raw, table: str, batch: int = 20_000) -> Iterator[tuple[bytes, bytes]]:
    """Every (key, value) of a table in key order, a key's values never split across batches."""
    start = b""
    while True:
        rows = raw.scan(table, start, batch)
        if len(rows) < batch:
            yield from rows
            return
        last = rows[-1][0]
        whole = [r for r in rows if r[0] != last]
        if not whole:  # one key with more values than a batch
            batch *= 2
            continue
        yield from whole
        start = last


def verify(index: NearDupIndex, progress: Callable[[int, int], None] | None = None) -> Report:
    """Check both ways that each kept record's entries are there (URL, time, fingerprint, the
    permuted tables, response digest) and that each entry (exact digests too) points at a kept record
    (and the right fingerprint). One read transaction: a crawl may go on meanwhile."""
    report = Report()

    def check(raw) -> None:
        txn = IndexTxn(raw, len(index.plan.tables))
        total = txn.doc_count()
        fps: dict[int, int] = {}  # doc id -> fingerprint
        for number, (key, value) in enumerate(_rows(raw, "docs"), 1):
            doc_id = from_u64(key)
            try:
                doc = DocRecord.decode(value, doc_id)
            except Exception as exc:  # noqa: BLE001 - any undecodable record is the finding
                report.add(f"kept record {doc_id} cannot be read ({type(exc.__cause__ or exc).__name__})")
                continue
            report.pages += 1
            fps[doc_id] = doc.fingerprint
            _check_doc(index, txn, doc, report)
            if progress is not None and not number % 1000:
                progress(number, 2 * total)
        _check_entries(index, raw, fps, report)
        next_id = txn.next_doc_id_now()
        if fps and (next_id is None or next_id <= max(fps)):
            report.add(f"the next doc id ({'none' if next_id is None else next_id}) is not past the "
                       f"highest kept one ({max(fps)}): new pages would overwrite kept ones")
        if progress is not None:
            progress(2 * total, 2 * total)

    index.read(lambda txn: check(txn.raw))
    return report


def _check_doc(index: NearDupIndex, txn: IndexTxn, doc: DocRecord, report: Report) -> None:
    raw, did = txn.raw, doc.doc_id
    assert did is not None
    name = f"kept page {did} ({doc.url or 'no URL'})"
    report.entries += 3 + len(index.plan.tables)
    if doc.url and index.version not in MIGRATABLE:  # (before format 4 no URL table: migration builds it)
        at = txn.url_get(url_key(doc.url))
        if at is None:
            report.add(f"{name}: its URL has no entry")
        elif at != did:  # another kept page of the same canonical URL may hold the entry (the newer one)
            other = txn.doc_get(at)
            if other is None or canonical_url(DocRecord.decode(other, at).url) != canonical_url(doc.url):
                report.add(f"{name}: its URL's entry leads to kept record {at}, a page of another URL")
    if index.ordered and u64(did) not in raw.values("times", u64(int(doc.time))):
        report.add(f"{name}: no time entry (DEDUP_WINDOW would never expire it)")
    if did not in txn.fp_docs(doc.fingerprint):
        report.add(f"{name}: its fingerprint does not lead to it")
    for table, key in enumerate(index.plan.keys(doc.fingerprint)):
        if u64(doc.fingerprint) not in raw.values(table_name(table), key):
            report.add(f"{name}: missing from permuted table {table}: lookups cannot find it")
    body = doc.extras.get(Extra.BODY)
    if body is not None:
        at = txn.body_get(body)
        other = None if at is None else txn.doc_get(at)
        if other is None or DocRecord.decode(other, at).extras.get(Extra.BODY) != body:
            report.add(f"{name}: its response digest does not lead to a kept page with those bytes "
                       f"(the same bytes again would be extracted, not decided at once)")
    # (no check that its content digest has an entry: a page the score kept beside its match has
    # none by design, and an entry pointing nowhere is caught from the table's side)


def _check_entries(index: NearDupIndex, raw, fps: dict[int, int], report: Report) -> None:
    """Each entry of the derived tables points at a kept record (and the right fingerprint)."""
    known_fps = set(fps.values())

    def doc_of(value: bytes, table: str) -> None:
        report.entries += 1
        if from_u64(value) not in fps:
            report.add(f"table {table}: an entry points at kept record {from_u64(value)}, which is not there")

    for table in ("urls", "exact", "bodies", "times", "mins", "titles", "heads"):
        if table == "urls" and index.version in MIGRATABLE:
            continue
        for _, value in _rows(raw, table):
            doc_of(value, table)
    _check_fetches(raw, fps, report)
    for key, value in _rows(raw, "fps"):
        report.entries += 1
        doc_id = from_u64(value)
        if fps.get(doc_id, from_u64(key)) != from_u64(key):
            report.add(f"table fps: fingerprint {from_u64(key):016x} leads to kept record {doc_id}, "
                       f"whose fingerprint is {fps[doc_id]:016x}")
        elif doc_id not in fps:
            report.add(f"table fps: an entry points at kept record {doc_id}, which is not there")
    for number in range(len(index.plan.tables)):
        for _, value in _rows(raw, table_name(number)):
            report.entries += 1
            if from_u64(value) not in known_fps:
                report.add(f"permuted table {number}: fingerprint {from_u64(value):016x} belongs to no kept page")


def _check_fetches(raw, fps: dict[int, int], report: Report) -> None:
    """Each URL's kept response (fetches.py) can be read and belongs to a kept record. A dropped
    copy's entry may outlive the page it duplicated (removed, expired): a later crawl asks again
    in full and files anew, so that is no damage."""
    seen = 0
    try:
        for _, value in _rows(raw, "fetches"):
            seen += 1
            report.entries += 1
            try:
                entry = Fetch.decode(value)
            except StoreDamaged:
                report.add("table fetches: an entry cannot be read")
                continue
            doc_id = entry.doc_id
            if doc_id not in fps and not entry.copy_of:
                report.add(f"table fetches: an entry points at kept record {doc_id}, which is not there")
    except StoreError:
        if seen:
            raise  # (none at all: an index from before conditional requests, opened read-only)


# -- rebuild -----------------------------------------------------------------------------------

@dataclass
class Rebuilt:
    pages: int = 0  # records filed again
    unreadable: int = 0  # records that could not be read
    lost_ranges: list[tuple[int, int]] = field(default_factory=list)  # doc ids a damaged part of the file hid
    scavenged: int = 0  # of `pages`, found on the file's leaf pages where the B-tree was damaged
    stale: int = 0  # records found there of a URL kept under a later id: older versions, not filed
    walked: bool = True  # the table of kept pages could be read as a B-tree (else: leaf pages only)
    damaged_copy: str = ""  # where the old data.mdb went


def salvage(store, stop: int, progress: Callable[[int, int], None] | None = None,
            into: Callable[[list[DocRecord]], None] | None = None) -> Rebuilt:
    """Read every kept record that can be read, in doc id order, past damaged parts of the file
    (a read that fails skips ahead to where reading works again); `into` gets them in batches."""
    out, after, step = Rebuilt(), 0, 1000

    def read(after: int, n: int):
        return store.read(lambda raw: IndexTxn(raw).doc_scan(after, n))

    while after < stop:
        try:
            rows = read(after, step)
        except (DedupError, OSError):
            # skip ahead until reading works again
            skip = 1
            while after + skip < stop:
                try:
                    rows = read(after + skip, 1)
                    break
                except (DedupError, OSError):
                    skip *= 2
            else:
                out.lost_ranges.append((after + 1, stop))
                break
            out.lost_ranges.append((after + 1, after + skip))
            after += skip
            continue
        batch = []
        for doc_id, value in rows:
            try:
                batch.append(DocRecord.decode(value, doc_id))
            except Exception:  # noqa: BLE001 - a record damaged in place
                out.unreadable += 1
        if into is not None and batch:
            into(batch)
        out.pages += len(batch)
        if not rows:
            break
        after = rows[-1][0]
        if progress is not None:
            progress(min(after, stop), stop)
    return out


def _plausible(value: bytes, doc_id: int) -> DocRecord | None:
    """A kept record, if `value` is one: it decodes and encodes back to the same bytes."""
    try:
        doc = DocRecord.decode(value, doc_id)
        return doc if doc.encode() == value else None
    except Exception:  # noqa: BLE001 - not a record
        return None


COUNTERS = (b"next_id", b"runs")  # meta entries that only grow: the highest copy found is the latest


def scavenge(rows: Iterable[tuple[bytes, bytes]]) -> tuple[dict[bytes, bytes], dict[int, DocRecord]]:
    """The settings (meta) and kept records among rows found on a damaged file's pages (the
    store's `salvage_source`): a record is an 8-byte key whose value decodes and encodes back."""
    meta: dict[bytes, bytes] = {}
    docs: dict[int, DocRecord] = {}
    for key, value in rows:
        if key in (b"format", b"plan", b"params"):
            meta.setdefault(key, value)
        elif key in COUNTERS and len(value) == 8:
            if key not in meta or from_u64(value) > from_u64(meta[key]):
                meta[key] = value
        elif len(key) == 8 and len(value) > 40:
            doc_id = from_u64(key)
            if doc_id not in docs:
                doc = _plausible(value, doc_id)
                if doc is not None:
                    docs[doc_id] = doc
    return meta, docs


def rebuild(store, site_lines: bool = True, progress: Callable[[int, int], None] | None = None) -> Rebuilt:
    """File the readable kept records of `store` into a new index, then put it in place and keep
    the old file beside it. `store` is unopened and Repairable (stores/base.py; the LMDB store):
    it knows its file, this knows the index. No crawl may use the index."""
    with store.exclusive("rebuild"), store.workspace("rebuild") as work:
        source, rows = store.salvage_source(work)
        found_meta, found_docs = scavenge(rows)
        try:
            meta, readable = _settings(source, found_meta) if source is not None else (dict(found_meta), False)
            _refuse_format(store, meta)
            if b"plan" not in meta:
                where = os.path.join(store.location, "data.mdb")
                raise StoreError(f"cannot rebuild {where}: no crawler-dedup settings record (its plan) can be read "
                                 f"from it{' nor any kept page' if not found_docs else ''}; nothing to rebuild from: "
                                 f"move {store.location} away and start a new DEDUP_DIR")
            target = store.fresh(os.path.join(work, "new"))
            try:
                got = _refile(source if readable else None, target, meta, found_docs, site_lines, progress)
            finally:
                target.close()
        finally:
            if source is not None:
                source.close()
        # a whole file of an older format is no damaged file: it is named for what it is
        whole = not (got.unreadable or got.lost_ranges) and got.walked
        older = meta.get(b"format") in {str(v).encode() for v in MIGRATABLE}
        got.damaged_copy = store.replace_with(target, "old" if whole and older else "damaged")
    return got


def _refuse_format(store, meta: dict[bytes, bytes]) -> None:
    """A format this version can neither read nor migrate cannot be rebuilt into one it opens:
    refused before anything is written (it would report success on an index nothing opens)."""
    try:
        version = int(meta.get(b"format") or FORMAT_VERSION)
    except ValueError:
        return  # (a damaged format entry: the records decide what can be filed)
    if version != FORMAT_VERSION and version not in MIGRATABLE:
        raise StoreFormat(f"cannot rebuild, nothing was changed: {unreadable_format(store.location, version)}")


def _settings(source, found: dict[bytes, bytes]) -> tuple[dict[bytes, bytes], bool]:
    """The meta table as it is, or as found on the file's pages; whether the tables can be read."""
    try:
        source.ensure({"meta": TABLES["meta"], "docs": TABLES["docs"]})
        return source.read(lambda raw: dict(_rows(raw, "meta"))), True
    except DedupError:
        return dict(found), False


def _refile(source, target, meta: dict[bytes, bytes], found_docs: dict[int, DocRecord], site_lines: bool,
            progress) -> Rebuilt:
    """Every meta entry as it was (format, plan, params, counters, open runs: a killed run's
    pages are still passed on again), then the records read through the tables, then those found
    on the file's pages where the tables could not reach."""
    stop = from_u64(meta[b"next_id"]) if b"next_id" in meta else 2**62
    plan = Plan.from_json(meta[b"plan"])
    index = NearDupIndex.open(target, k=plan.k, make_plan=lambda: plan)
    target.write(lambda raw: [raw.put("meta", k, v) for k, v in meta.items()])
    highest = [0]

    def file(batch: list[DocRecord]) -> None:
        def write(raw):
            txn = IndexTxn(raw, len(plan.tables))
            for doc in batch:
                digest = doc.extras.get(Extra.DIGEST)
                exact = digest is not None and txn.exact_get(digest) is None
                probes = doc.extras.get(Extra.PROBES, b"\x00")[0]
                text = doc.text if site_lines else None
                lines = lines_of(text, doc.url, doc.title) if text is not None else None
                index.add(txn, doc, digest, probes=probes, exact=exact,
                          site_keys=lines.filed if lines is not None and lines.keys else None,
                          body=doc.extras.get(Extra.BODY), doc_id=doc.doc_id)
                highest[0] = max(highest[0], doc.doc_id or 0)
        target.write(write)

    got = salvage(source, stop, progress, into=file) if source is not None else Rebuilt(lost_ranges=[(1, stop)],
                                                                                        walked=False)
    # records on leaf pages the tables could not reach (only in what they lost: elsewhere a
    # stale copy may be a page removed since); and not one whose URL was kept under a later doc
    # id (ids only grow): it is an older version an update replaced, its record freed but not yet
    # overwritten, and filing it would take the URL back from the update
    lost = [doc for doc_id, doc in sorted(found_docs.items()) if any(lo <= doc_id <= hi for lo, hi in got.lost_ranges)]
    newest: dict[bytes, int] = {}
    for doc in lost:
        if doc.url:
            newest[url_key(doc.url)] = max(newest.get(url_key(doc.url), 0), doc.doc_id or 0)
    if newest:
        keys = list(newest)
        kept = target.read(lambda raw: [IndexTxn(raw).url_get(k) for k in keys])
        newest = {k: max(at, held or 0) for (k, at), held in zip(newest.items(), kept)}
    stale = [doc for doc in lost if doc.url and (doc.doc_id or 0) < newest[url_key(doc.url)]]
    lost = [doc for doc in lost if not (doc.url and (doc.doc_id or 0) < newest[url_key(doc.url)])]
    got.stale = len(stale)
    for i in range(0, len(lost), 1000):
        file(lost[i:i + 1000])
    got.pages += len(lost)
    got.scavenged = len(lost)
    if b"next_id" not in meta or from_u64(meta[b"next_id"]) <= highest[0]:
        target.write(lambda raw: raw.put("meta", b"next_id", u64(highest[0] + 1)))
    version = int(meta.get(b"format") or FORMAT_VERSION)
    if version in MIGRATABLE:  # (the old format's meta was copied as it was: bring it up now)
        migrate(index, version)
    return got
