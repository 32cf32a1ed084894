"""Pass 1, read: every record of every input in order into the state file's `entries`, pages
extracted and fingerprinted (extract.py), committed in input order every few hundred records or
seconds, so a killed run goes on after the last record committed.
"""

from __future__ import annotations

import json
import pickle
import time
import zlib

from ...config import DedupConfig
from .. import sources
from ..sources import DAMAGED, PAGE, Entry, Fields
from .extract import Extractor, words_of
from .options import Progress
from .state import State

_END = "end"  # (an Entry marking the end of a file in the read pass)
COMMIT_ROWS, COMMIT_SECONDS = 256, 2.0  # read-pass commits: at most this much work is lost to a kill


def read_pass(state: State, config: DedupConfig, fields: Fields, jobs: int, progress: Progress) -> None:
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
    extractor = Extractor(config, jobs)
    counter = iter(range(seq, 1 << 62))

    def items():
        for no, path, fmt, size, last in files:
            start = max(last, 0)
            for entry in sources.entries(path, fmt, start, fields, config.max_bytes):
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
            pending.append(_row(s, no, entry, digest, result, same))
            pages += entry.kind == PAGE
            db.execute("UPDATE files SET last_offset=? WHERE file_no=?", (entry.offset, no))
            if len(pending) >= COMMIT_ROWS or time.monotonic() - last_commit > COMMIT_SECONDS:
                _insert(db, pending)
                db.execute("COMMIT")
                db.execute("BEGIN")
                pending, last_commit = [], time.monotonic()
                progress("read", done_bytes + min(entry.offset, size), total, pages)
        _insert(db, pending)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    finally:
        extractor.close()
    progress("read", total, total, pages)


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


def _insert(db, rows: list[tuple]) -> None:
    if rows:
        db.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
