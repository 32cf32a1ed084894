"""`crawler-dedup scan`: deduplicate crawled data after the fact (JSON lines, WARC/ARC) and keep the
best copy of each group.

Three passes over a state file (OUT/.scan/state.sqlite), each continued by a later run:
1 read    every record of every input in order; pages extracted and fingerprinted (in worker
          processes), committed in input order, so a killed run continues after the last one.
2 decide  pages in the policy's order, best first, through the Deduplicator over OUT/index: the
          best page of a group comes first and is kept, the others are dropped against it, so
          the groups and the picks do not depend on the input's order. Each batch's decisions
          are committed after the index's commit; the one batch a kill can leave half done is
          decided again (its kept pages are known to the index as filed by a killed run).
3 write   every input copied record by record into OUT/kept/ and OUT/dropped/, the drop log, the
          clusters file and summary.json (done again whole when a run was stopped here).
"""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
import time
import zlib
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from ..config import DedupConfig
from ..core.dedup import Deduplicator
from ..core.extract import canonical_link
from ..core.fingerprint import Fingerprinted, body_digest, extract_and_fingerprint
from ..core.tokens import tokenize
from ..core.verdict import Action, Failure, Reason, Skip, Stage, Step, Verdict
from ..core.policy import DEFAULT_POLICY, Page, parse_policy, rank
from ..droplog import DropLog, iso_time, make_record, superseded_record
from . import sources
from .sources import DAMAGED, INFO, PAGE, RELATED, REVISIT, Entry, Fields

STATE_VERSION = 1
_END = "end"  # (an Entry marking the end of a file in the read pass)
BATCH = 64  # pages a decision transaction
COMMIT_ROWS, COMMIT_SECONDS = 256, 2.0  # read-pass commits: at most this much work is lost to a kill

def scores(page: Page) -> dict:
    """What the clusters file shows of a page: what the policies look at."""
    return {"words": page.words, "url_length": len(page.url), "https": page.url.lower().startswith("https:"),
            "time": iso_time(page.time) if page.time is not None else None, "score": page.score,
            "canonical": page.canonical, "position": page.seq}


def decide(dedup: Deduplicator, items: list[tuple[str, tuple, dict]]) -> list[Verdict]:
    """Steps 5-8 for pages extracted already, in order, in one transaction: `items` holds (url,
    (kind, value, title, ...) as extraction gave it, Deduplicator.prepare's other arguments)."""
    verdicts: list[Verdict | None] = [None] * len(items)
    pending, where = [], []
    for n, (url, result, page) in enumerate(items):
        kind, value, title = result[:3]
        if kind == Step.FINGERPRINT:
            verdict, p = dedup.prepare(url, fingerprinted=value, title=title, stage=Stage.RESPONSE, **page)
        elif kind == Step.TEXT:
            verdict, p = dedup.prepare(url, text=value, title=title, stage=Stage.RESPONSE, **page)
        elif kind == Step.SKIPPED:
            verdict, p = Verdict(url=url, skipped=Skip(value)), None
        else:  # kept, counted, logged once
            verdict, p = dedup.failed(Verdict(url=url), Failure.EXTRACT, value), None
        if p is None:
            verdicts[n] = verdict
        else:
            pending.append(p)
            where.append(n)
    for n, verdict in zip(where, dedup.decide_many(pending)):
        verdicts[n] = verdict
    return verdicts  # type: ignore[return-value]


# -- extraction (in a worker process) ----------------------------------------------------------

def scan_extract(html, url: str, config: DedupConfig) -> tuple:
    """Steps 1-4 and the rel=canonical link: (kind, value, title, canonical)."""
    kind, value, title = extract_and_fingerprint(html, url, config)
    canonical = None
    if config.canonical:
        try:
            canonical = canonical_link(html, url)
        except Exception:  # noqa: BLE001 - a page without a readable head has none
            canonical = None
    return kind, value, title, canonical


def words_of(kind, value) -> int:
    if kind == Step.FINGERPRINT and isinstance(value, Fingerprinted):
        return value.tokens
    if kind == Step.TEXT and isinstance(value, str):
        return len(tokenize(value))
    return 0


class Extractor:
    """Entries in, (entry, body digest, result or the seq of the same bytes) out, in input order:
    pages go to `jobs` worker processes (or this one with jobs=1), a few per worker in flight."""

    def __init__(self, config: DedupConfig, jobs: int):
        self.config, self.jobs = config, max(1, jobs)
        self.pool = None
        if self.jobs > 1:
            from ..workers import WorkerPool

            self.pool = WorkerPool(self.jobs)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None

    def run(self, items: Iterable[tuple[object, Entry]], seen: dict[bytes, object] | None,
            known: Callable[[bytes], object] | None = None) -> Iterator[tuple]:
        """`items`: (key, entry); yields (key, entry, digest, result, same) with `same` the key of
        an earlier page with the same bytes (`seen`: digest -> key), whose result stands for it.
        `known(digest)`: a result without extraction (the index's fast path), or None."""
        window: deque = deque()
        limit = 4 * self.jobs
        for key, entry in items:
            digest = result = same = None
            if entry.kind == PAGE and entry.html is not None:
                raw = entry.html.encode("utf-8", "surrogatepass") if isinstance(entry.html, str) else entry.html
                digest = body_digest(raw)
                same = seen.get(digest) if seen is not None else None
                fast = known(digest) if known is not None and len(raw) <= self.config.max_bytes else None
                if fast is not None:
                    result = fast
                elif same is None:
                    if seen is not None:
                        seen[digest] = key
                    result = self._submit(entry)
            elif entry.kind == PAGE:  # a JSON line with text only: fingerprinted here
                result = (Step.TEXT, entry.text, None, None)
            window.append((key, entry, digest, result, same))
            while window and (len(window) > limit or _ready(window[0][3])):
                yield _resolved(window.popleft())
        while window:
            yield _resolved(window.popleft())

    def _submit(self, entry: Entry):
        if self.pool is None:
            try:
                return scan_extract(entry.html, entry.url or "", self.config)
            except Exception as exc:  # noqa: BLE001 - the page is kept, counted
                return (Step.ERROR, f"{type(exc).__name__}: {exc}", None, None)
        return self.pool.submit(scan_extract, entry.html, entry.url or "", self.config)


def _ready(result) -> bool:
    return not hasattr(result, "done") or result.done()


def _resolved(item: tuple) -> tuple:
    key, entry, digest, result, same = item
    if hasattr(result, "result"):
        try:
            result = result.result()
        except Exception as exc:  # noqa: BLE001 - a worker died on this page: kept, counted
            result = (Step.ERROR, f"{type(exc).__name__}: {exc}", None, None)
    if result is not None and result[0] == Step.ERROR:
        result = (Step.ERROR, str(result[1]), None, None)  # (an exception may not pickle back)
    return key, entry, digest, result, same


# -- the state file --------------------------------------------------------------------------

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS files (file_no INTEGER PRIMARY KEY, path TEXT, format TEXT, size INTEGER,
    mtime REAL, output TEXT, last_offset INTEGER, done INTEGER DEFAULT 0, error TEXT);
CREATE TABLE IF NOT EXISTS entries (seq INTEGER PRIMARY KEY, file_no INTEGER, offset INTEGER, kind TEXT,
    url TEXT, time REAL, score REAL, why TEXT, record_id TEXT, concurrent_to TEXT, payload_digest TEXT,
    body BLOB, same_as INTEGER, words INTEGER, canonical TEXT, refers_to TEXT, result BLOB);
CREATE TABLE IF NOT EXISTS decisions (seq INTEGER PRIMARY KEY, step INTEGER, dropped INTEGER,
    flagged INTEGER, reason TEXT, leader INTEGER, note TEXT, record TEXT);
"""


class ScanError(Exception):
    """What stops a scan before it starts (a message for the user)."""


class State:
    def __init__(self, out: str):
        os.makedirs(os.path.join(out, ".scan"), exist_ok=True)
        self.path = os.path.join(out, ".scan", "state.sqlite")
        self.db = sqlite3.connect(self.path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)

    def get(self, key: str, default=None):
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return default if row is None else json.loads(row[0])

    def put(self, key: str, value) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def close(self) -> None:
        self.db.close()


# -- the scan ----------------------------------------------------------------------------------

@dataclass
class Options:
    inputs: list[str]
    out: str
    policy: str = DEFAULT_POLICY
    jobs: int = 1
    fields: Fields = field(default_factory=Fields)
    settings: dict = field(default_factory=dict)  # DEDUP_* (from -s and the project)
    restart: bool = False


Progress = Callable[[str, int, int, int], None]  # (pass, done, total, pages)


def _quiet(phase: str, done: int, total: int, pages: int) -> None:
    pass


class Scan:
    def __init__(self, opts: Options, progress: Progress | None = None):
        self.opts = opts
        self.progress = progress or _quiet
        self.keys = parse_policy(opts.policy)
        self.out = os.path.abspath(opts.out)
        settings = dict(opts.settings)
        if str(settings.get("DEDUP_BACKEND", "lmdb")) == "lmdb":
            settings["DEDUP_DIR"] = os.path.join(self.out, "index")
        self.shared = str(settings.get("DEDUP_BACKEND", "lmdb")) not in ("lmdb", "memory")
        self.config = DedupConfig.from_settings(settings)

    # -- setting up ----------------------------------------------------------------------------
    def open(self) -> State:
        formats = []
        for path in self.opts.inputs:
            try:
                formats.append(sources.input_format(path))
            except sources.SourceError as exc:
                raise ScanError(str(exc)) from None
        if os.path.exists(self.out) and not os.path.isdir(self.out):
            raise ScanError(f"--out {self.opts.out} is a file: give a folder (it is made if missing)")
        state_file = os.path.join(self.out, ".scan", "state.sqlite")
        if self.opts.restart:
            self._clear()
        elif not os.path.exists(state_file) and os.path.isdir(self.out) and os.listdir(self.out):
            raise ScanError(f"--out {self.opts.out} holds other files: give an empty "
                            f"or new folder (scan writes kept/, dropped/, index/ and the logs there)")
        state = State(self.out)
        described = self._described(formats)
        recorded = state.get("scan")
        if recorded is None:
            state.put("scan", described)
            for no, (path, fmt) in enumerate(zip(self.opts.inputs, formats)):
                st = os.stat(path)
                state.db.execute("INSERT INTO files (file_no, path, format, size, mtime, output, last_offset) "
                                 "VALUES (?, ?, ?, ?, ?, ?, -1)",
                                 (no, os.path.abspath(path), fmt, st.st_size, st.st_mtime, self._output_name(no)))
        elif recorded != described and {**recorded, "policy": None} == {**described, "policy": None}:
            # another policy over the same pages: decided again, without extracting them again
            if self.shared:
                state.close()
                raise ScanError("this scan filed its pages into a shared index (DEDUP_BACKEND); another --policy "
                                "needs another --out, or --restart")
            self._undecide(state)
            state.put("scan", described)
        elif recorded != described:
            state.close()
            what = [k for k in described if described[k] != recorded.get(k)]
            raise ScanError(f"{self.opts.out} holds a scan with other {', '.join(what)}: give the same inputs, "
                            f"--policy and settings to continue it, --restart to start it again, or another --out")
        else:
            for no, path, size, mtime in state.db.execute("SELECT file_no, path, size, mtime FROM files"):
                st = os.stat(path)
                if (st.st_size, st.st_mtime) != (size, mtime):
                    state.close()
                    raise ScanError(f"{path} changed since this scan read it: --restart to scan it again")
        return state

    def _undecide(self, state: State) -> None:
        import shutil

        state.db.execute("DELETE FROM decisions")
        for key in ("decided", "written", "pending"):
            state.put(key, None)
        shutil.rmtree(os.path.join(self.out, "index"), ignore_errors=True)

    def _described(self, formats: list[str]) -> dict:
        f = self.opts.fields
        return {"version": STATE_VERSION, "inputs": [os.path.abspath(p) for p in self.opts.inputs],
                "policy": list(self.keys), "settings": {k: str(v) for k, v in sorted(self.opts.settings.items())},
                "fields": [f.url, f.html, f.text, f.time, f.score]}

    def _output_name(self, no: int) -> str:
        names = [os.path.basename(p) for p in self.opts.inputs]
        name = names[no]
        return name if names.count(name) == 1 else f"{no + 1:03d}-{name}"

    def _clear(self) -> None:
        import shutil

        for name in (".scan", "index", "kept", "dropped"):
            shutil.rmtree(os.path.join(self.out, name), ignore_errors=True)
        for name in ("droplog.jsonl", "clusters.jsonl", "summary.json"):
            try:
                os.remove(os.path.join(self.out, name))
            except FileNotFoundError:
                pass

    # -- the passes ----------------------------------------------------------------------------
    def run(self) -> dict:
        state = self.open()
        try:
            if state.get("written"):
                summary = self._load_summary()
                summary["already_done"] = True
                return summary
            t0 = time.monotonic()
            self.read_pass(state)
            t1 = time.monotonic()
            self.decide_pass(state)
            t2 = time.monotonic()
            summary = self.write_pass(state)
            t3 = time.monotonic()
            summary["seconds"] = {"read": round(t1 - t0, 2), "decide": round(t2 - t1, 2), "write": round(t3 - t2, 2)}
            self._save_summary(summary)
            state.put("written", True)
            return summary
        finally:
            state.close()

    def read_pass(self, state: State) -> None:
        db = state.db
        files = db.execute("SELECT file_no, path, format, size, last_offset FROM files WHERE done=0 ORDER BY file_no").fetchall()
        if not files:
            return
        total = sum(r[0] for r in db.execute("SELECT size FROM files"))
        before = sum(r[0] for r in db.execute("SELECT size FROM files WHERE done=1"))
        pages = db.execute("SELECT count(*) FROM entries WHERE kind=?", (PAGE,)).fetchone()[0]
        seq = db.execute("SELECT coalesce(max(seq), -1) + 1 FROM entries").fetchone()[0]
        seen: dict[bytes, object] = {bytes(b): s for b, s in db.execute(
            "SELECT body, seq FROM entries WHERE body IS NOT NULL AND same_as IS NULL")}
        extractor = Extractor(self.config, self.opts.jobs)
        counter = iter(range(seq, 1 << 62))

        def items():
            for no, path, fmt, size, last in files:
                start = max(last, 0)
                for entry in sources.entries(path, fmt, start, self.opts.fields, self.config.max_bytes):
                    if entry.offset <= last:  # the last record the run before committed
                        continue
                    yield (next(counter), no, size), entry
                yield (None, no, size), Entry(-1, _END)  # the file's end

        pending: list[tuple] = []
        last_commit = time.monotonic()
        done_bytes = before
        db.execute("BEGIN")
        try:
            for key, entry, digest, result, same in extractor.run(items(), seen):
                s, no, size = key
                if entry.kind == _END:
                    db.execute("UPDATE files SET done=1 WHERE file_no=?", (no,))
                    done_bytes += size
                    continue
                if entry.kind == DAMAGED:
                    db.execute("UPDATE files SET error=? WHERE file_no=?", (entry.why, no))
                pending.append(self._row(s, no, entry, digest, result, same))
                pages += entry.kind == PAGE
                db.execute("UPDATE files SET last_offset=? WHERE file_no=?", (entry.offset, no))
                if len(pending) >= COMMIT_ROWS or time.monotonic() - last_commit > COMMIT_SECONDS:
                    self._insert(db, pending)
                    db.execute("COMMIT")
                    db.execute("BEGIN")
                    pending, last_commit = [], time.monotonic()
                    self.progress("read", done_bytes + min(entry.offset, size), total, pages)
            self._insert(db, pending)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        finally:
            extractor.close()
        self.progress("read", total, total, pages)

    @staticmethod
    def _row(seq: int, no: int, e: Entry, digest, result, same) -> tuple:
        words, canonical, blob = 0, None, None
        if result is not None:
            kind, value, title, canonical = result
            words = words_of(kind, value)
            blob = zlib.compress(pickle.dumps((kind, value, title), protocol=pickle.HIGHEST_PROTOCOL), 1)
        same_seq = same[0] if isinstance(same, tuple) else same
        return (seq, no, e.offset, e.kind, e.url, e.time, e.score, e.why, e.record_id,
                json.dumps(list(e.concurrent_to)) if e.concurrent_to else None, e.payload_digest,
                digest, same_seq, words, canonical, e.refers_to, blob)

    @staticmethod
    def _insert(db, rows: list[tuple]) -> None:
        if rows:
            db.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)

    # -- pass 2 --------------------------------------------------------------------------------
    def decide_pass(self, state: State) -> None:
        db = state.db
        if state.get("decided"):
            return
        pages = [Page(seq, url, words or 0, t, score, canonical, no) for seq, url, words, t, score, canonical, no in db.execute(
            "SELECT e.seq, e.url, coalesce(s.words, e.words), e.time, e.score, coalesce(e.canonical, s.canonical), "
            "e.file_no FROM entries e LEFT JOIN entries s ON s.seq = e.same_as WHERE e.kind=?", (PAGE,))]
        jsonl = {no for no, fmt in db.execute("SELECT file_no, format FROM files") if fmt == "jsonl"}
        order = rank(pages, self.keys)
        step = db.execute("SELECT count(*) FROM decisions").fetchone()[0]
        again = set(state.get("pending") or ())  # the batch a kill may have left half done
        kept_url: dict[str, int] = {}  # URL -> the seq of the page kept under it last
        for url, seq in db.execute("SELECT e.url, d.seq FROM decisions d JOIN entries e USING (seq) "
                                   "WHERE d.dropped=0 AND d.reason IS NOT 'skipped' ORDER BY d.step"):
            kept_url[url] = seq
        dedup = Deduplicator(self.config)
        try:
            dedup.open()
        except Exception as exc:
            raise ScanError(f"the scan's index could not be opened: {exc}") from None
        try:
            for start in range(step, len(order), BATCH):
                batch = order[start:start + BATCH]
                state.put("pending", [p.seq for p in batch])
                verdicts = self._decide_batch(db, dedup, batch)
                db.execute("BEGIN")
                for n, (page, verdict) in enumerate(zip(batch, verdicts)):
                    self._file_decision(db, page, verdict, start + n, kept_url, page.seq in again,
                                        "item" if page.source in jsonl else "response")
                state.put("pending", None)
                db.execute("COMMIT")
                again = set()
                self.progress("decide", start + len(batch), len(order), start + len(batch))
        finally:
            dedup.close()
        state.put("decided", True)
        self.progress("decide", len(order), len(order), len(order))

    def _decide_batch(self, db, dedup: Deduplicator, batch: list[Page]) -> list[Verdict]:
        items = []
        for page in batch:
            blob, body, when = db.execute("SELECT coalesce(s.result, e.result), e.body, e.time FROM entries e "
                                          "LEFT JOIN entries s ON s.seq = e.same_as WHERE e.seq=?", (page.seq,)).fetchone()
            result = pickle.loads(zlib.decompress(blob)) if blob is not None else (Step.SKIPPED, Skip.BAD_INPUT, None)
            items.append((page.url, result, dict(canonical=page.canonical, now=when,
                                                 body=bytes(body) if body else None)))
        return decide(dedup, items)

    def _file_decision(self, db, page: Page, verdict: Verdict, step: int, kept_url: dict[str, int],
                       again: bool, stage: str) -> None:
        if verdict.resent:
            # unchanged against a record a killed run filed: this page's own, from the batch
            # that run left half done, unless this scan kept the URL before
            if page.url in kept_url and kept_url[page.url] != page.seq:
                verdict = verdict.but(action=Action.FLAG if self.config.dry_run else Action.DROP)
            else:
                verdict = verdict.but(action=Action.KEEP, reason=None, duplicate_of=None, resent=False)
        elif again and verdict.reason == Reason.UNCHANGED and kept_url.get(page.url) is None:
            verdict = verdict.but(action=Action.KEEP, reason=None, duplicate_of=None)
        if verdict.skipped or verdict.error:
            db.execute("INSERT OR REPLACE INTO decisions VALUES (?, ?, 0, 0, 'skipped', NULL, ?, NULL)",
                       (page.seq, step, str(verdict.skipped or f"error:{verdict.error}")))
            return
        if verdict.action in (Action.DROP, Action.FLAG):
            record = make_record(verdict, stage, "scan")
            record.pop("time", None)
            leader = kept_url.get(verdict.duplicate_of or "")
            db.execute("INSERT OR REPLACE INTO decisions VALUES (?, ?, ?, ?, ?, ?, NULL, ?)",
                       (page.seq, step, int(verdict.action == Action.DROP), int(verdict.action == Action.FLAG),
                        str(verdict.reason), leader, json.dumps(record, ensure_ascii=False)))
            return
        db.execute("INSERT OR REPLACE INTO decisions VALUES (?, ?, 0, 0, NULL, NULL, ?, NULL)",
                   (page.seq, step, str(verdict.revisit) if verdict.revisit else None))
        if verdict.superseded:
            old = kept_url.get(verdict.superseded.get("url", ""))
            if old is not None:
                record = superseded_record(verdict, stage, "scan", dry_run=self.config.dry_run)
                record.pop("time", None)
                db.execute("UPDATE decisions SET dropped=?, flagged=?, reason='superseded', leader=?, record=? "
                           "WHERE seq=?", (int(not self.config.dry_run), int(self.config.dry_run), page.seq,
                                           json.dumps(record, ensure_ascii=False), old))
                db.execute("UPDATE decisions SET leader=? WHERE leader=?", (page.seq, old))
        kept_url[page.url] = page.seq

    # -- pass 3 --------------------------------------------------------------------------------
    def write_pass(self, state: State) -> dict:
        db = state.db
        for sub in ("kept", "dropped"):
            os.makedirs(os.path.join(self.out, sub), exist_ok=True)
        decisions = {seq: (dropped, flagged, record, reason, note) for seq, dropped, flagged, record, reason, note in
                     db.execute("SELECT seq, dropped, flagged, record, reason, note FROM decisions")}
        by_id: dict[str, int] = {}
        by_payload: dict[object, int] = {}
        for seq, kind, rid, digest, url in db.execute("SELECT seq, kind, record_id, payload_digest, url FROM entries "
                                                      "WHERE record_id IS NOT NULL OR payload_digest IS NOT NULL"):
            if rid:
                by_id.setdefault(rid, seq)
            if digest and kind == PAGE:  # a revisit's original: the capture of its URL with that payload
                by_payload.setdefault((digest, url), seq)
                by_payload.setdefault(digest, seq)
        follows: dict[int, int] = {}  # a related record's seq -> the page it goes with
        for seq, kind, links in db.execute("SELECT seq, kind, concurrent_to FROM entries WHERE concurrent_to IS NOT NULL"):
            for rid in json.loads(links):
                other = by_id.get(rid)
                if other is None:
                    continue
                if kind in (PAGE, REVISIT):
                    follows.setdefault(other, seq)
                else:
                    follows.setdefault(seq, other)

        droplog_path = os.path.join(self.out, "droplog.jsonl")
        if os.path.exists(droplog_path):
            os.remove(droplog_path)  # written whole again
        counts: dict = {"records": 0, "pages": 0, "kept": 0, "dropped": 0, "flagged": 0, "passed": {},
                        "revisits": {"kept": 0, "dropped": 0, "no_original": 0}, "by_reason": {},
                        "unchecked": {}, "updated": 0}
        files_out = []
        total = sum(r[0] for r in db.execute("SELECT size FROM files"))
        done = 0
        with DropLog(droplog_path) as droplog:
            for no, path, fmt, size, output, error in db.execute(
                    "SELECT file_no, path, format, size, output, error FROM files ORDER BY file_no").fetchall():
                rows = db.execute("SELECT seq, offset, kind, url, why FROM entries WHERE file_no=? ORDER BY seq",
                                  (no,)).fetchall()
                per = self._write_file(db, path, fmt, size, output, rows, decisions, follows, by_payload,
                                       droplog, counts)
                per.update({"input": path, "format": fmt, "kept_output": os.path.join("kept", output),
                            "dropped_output": os.path.join("dropped", output)})
                if error:
                    per["damaged"] = error
                files_out.append(per)
                done += size
                self.progress("write", done, total, counts["pages"])
        self._write_clusters(db)
        return {"out": self.out, "policy": list(self.keys), "inputs": files_out, **counts,
                "droplog": droplog_path, "clusters": os.path.join(self.out, "clusters.jsonl"),
                "index": self.config.dir if not self.shared else None}

    def _destination(self, seq: int, kind: str, decisions, follows, by_payload, db, cache: dict) -> str:
        """'kept', 'dropped' or 'both' for one record."""
        if kind == INFO:
            return "both"
        if kind == PAGE:
            d = decisions.get(seq)
            return "dropped" if d is not None and d[0] else "kept"
        if kind == RELATED and seq in follows:
            other = follows[seq]
            okind = cache.get(other) or db.execute("SELECT kind FROM entries WHERE seq=?", (other,)).fetchone()[0]
            return self._destination(other, okind, decisions, follows, by_payload, db, cache) if okind != RELATED else "kept"
        return "kept"

    def _write_file(self, db, path, fmt, size, output, rows, decisions, follows, by_payload, droplog, counts) -> dict:
        import gzip

        per = {"records": 0, "pages": 0, "kept": 0, "dropped": 0}
        kept_path, dropped_path = (os.path.join(self.out, sub, output) for sub in ("kept", "dropped"))
        gz = fmt == "jsonl" and sources.is_gzip(path)
        opener = (lambda p: gzip.open(p, "wb")) if gz else (lambda p: open(p, "wb"))
        kinds = {seq: kind for seq, _, kind, _, _ in rows}
        with opener(kept_path) as kept_fh, opener(dropped_path) as dropped_fh:
            outs = {"kept": (kept_fh,), "dropped": (dropped_fh,), "both": (kept_fh, dropped_fh)}
            for (seq, offset, kind, url, why), raw, line_item in self._records(path, fmt, size, rows):
                if kind == DAMAGED:
                    continue
                per["records"] += 1
                counts["records"] += 1
                dest = self._destination(seq, kind, decisions, follows, by_payload, db, kinds)
                record = None
                if kind == PAGE:
                    per["pages"] += 1
                    counts["pages"] += 1
                    d = decisions.get(seq)
                    if d is not None and d[2] is not None:
                        record = json.loads(d[2])
                        reason = record.get("reason", "?")
                        counts["by_reason"][reason] = counts["by_reason"].get(reason, 0) + 1
                    if d is not None and d[0]:
                        per["dropped"] += 1
                        counts["dropped"] += 1
                    else:
                        per["kept"] += 1
                        counts["kept"] += 1
                        counts["flagged"] += bool(d is not None and d[1])
                    if d is None or d[3] == "skipped":  # kept without a check: too short, no text, ...
                        note = "no_decision" if d is None else str(d[4])
                        counts["unchecked"][note] = counts["unchecked"].get(note, 0) + 1
                    elif d[4] == "updated":
                        counts["updated"] += 1
                elif kind == REVISIT:
                    original = self._original(seq, db, by_payload)
                    if original is None:
                        counts["revisits"]["no_original"] += 1
                    else:
                        d = decisions.get(original)
                        if d is not None and d[0]:
                            dest = "dropped"
                            record = json.loads(d[2]) if d[2] else None
                            if record is not None:
                                record["url"] = url or record["url"]
                                record["revisit_of"] = self._source(db, original)
                    counts["revisits"]["dropped" if dest == "dropped" else "kept"] += original is not None
                else:
                    label = why or kind
                    counts["passed"][label] = counts["passed"].get(label, 0) + 1
                for fh in outs[dest]:
                    fh.write(raw)
                if record is not None:
                    record = {"time": iso_time(), **record, "source": {"file": path, "offset": offset}}
                    if line_item is not None and self.config.droplog_items:
                        record["item"] = line_item
                    droplog.write(record)
        return per

    def _original(self, seq: int, db, by_payload) -> int | None:
        digest, url = db.execute("SELECT payload_digest, refers_to FROM entries WHERE seq=?", (seq,)).fetchone()
        if not digest:
            return None
        return by_payload.get((digest, url), by_payload.get(digest))

    @staticmethod
    def _source(db, seq: int) -> dict:
        path, offset = db.execute("SELECT f.path, e.offset FROM entries e JOIN files f USING (file_no) WHERE e.seq=?",
                                  (seq,)).fetchone()
        return {"file": path, "offset": offset}

    @staticmethod
    def _records(path: str, fmt: str, size: int, rows) -> Iterator[tuple]:
        """(row, the record's bytes, a JSON line's object or None) for each entry, in order."""
        if fmt == "jsonl":
            with sources.open_jsonl(path) as fh:
                for row in rows:
                    fh.seek(row[1])
                    line = fh.readline()
                    item = None
                    if row[2] == PAGE:
                        try:
                            item = json.loads(line)
                        except ValueError:
                            item = None
                    if line and not line.endswith(b"\n"):
                        line += b"\n"
                    yield row, line, item
            return
        ends = [r[1] for r in rows[1:]] + [size]
        with open(path, "rb") as fh:
            for row, end in zip(rows, ends):
                if row[2] == DAMAGED:
                    yield row, b"", None
                    continue
                fh.seek(row[1])
                yield row, fh.read(max(0, end - row[1])), None

    def _write_clusters(self, db) -> None:
        path = os.path.join(self.out, "clusters.jsonl")
        pages = {seq: (url, words, t, score, canonical, fpath, offset) for seq, url, words, t, score, canonical, fpath, offset in db.execute(
            "SELECT e.seq, e.url, coalesce(s.words, e.words), e.time, e.score, coalesce(e.canonical, s.canonical), f.path, e.offset "
            "FROM entries e JOIN files f USING (file_no) LEFT JOIN entries s ON s.seq = e.same_as WHERE e.kind=?", (PAGE,))}

        def member(seq: int, extra: dict | None = None) -> dict:
            url, words, t, score, canonical, fpath, offset = pages[seq]
            out = {"url": url, "source": {"file": fpath, "offset": offset},
                   "scores": scores(Page(seq, url, words or 0, t, score, canonical))}
            out.update(extra or {})
            return out

        groups: dict = {}
        for seq, leader, record in db.execute("SELECT seq, leader, record FROM decisions WHERE record IS NOT NULL "
                                              "ORDER BY leader, seq"):
            rec = json.loads(record)
            # (a page kept outside this scan: by another machine into a shared index)
            key = (0, leader, "") if leader is not None else (1, 0, str(rec.get("duplicate_of")))
            groups.setdefault(key, []).append(member(seq, {k: rec.get(k) for k in (
                "reason", "action", "similarity", "distance", "measure")}))
        with open(path + ".tmp", "w", encoding="utf-8") as fh:
            for key in sorted(groups):
                kept = (member(key[1]) if key[0] == 0 else
                        {"url": key[2], "outside": "kept outside this scan (another scan into the shared index)"})
                line = {"kept": kept, "dropped": groups[key], "size": 1 + len(groups[key]),
                        "policy": list(self.keys)}
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        os.replace(path + ".tmp", path)

    def _save_summary(self, summary: dict) -> None:
        path = os.path.join(self.out, "summary.json")
        with open(path + ".tmp", "w", encoding="utf-8") as fh:
            json.dump(summary, fh, indent=1, ensure_ascii=False)
        os.replace(path + ".tmp", path)

    def _load_summary(self) -> dict:
        with open(os.path.join(self.out, "summary.json"), encoding="utf-8") as fh:
            return json.load(fh)
