"""Pass 3, write, and the scan's outputs: every input copied record by record into OUT/kept/
and OUT/dropped/ (a related record or a revisit goes where its page went), the drop log, the
clusters file and summary.json. Done again whole when a run was stopped here: it reads only the
state file and the inputs.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterable, Iterator

from ...config import DedupConfig
from ...core.decide.policy import Page
from ...droplog import DropLog, dumps, iso_time
from .. import files, sources
from ..sources import DAMAGED, INFO, PAGE, RELATED, REVISIT
from .options import Progress
from .state import State


def scores(page: Page) -> dict:
    """What the clusters file shows of a page: what the policies look at."""
    return {"words": page.words, "url_length": len(page.url), "https": page.url.lower().startswith("https:"),
            "time": iso_time(page.time) if page.time is not None else None, "score": page.score,
            "canonical": page.canonical, "position": page.seq}


class Writer:
    """The write pass over one scan's state file: run(state) writes the outputs, gives the summary."""

    def __init__(self, out: str, config: DedupConfig, keys: tuple[str, ...], shared: bool, progress: Progress):
        self.out, self.config, self.keys, self.shared, self.progress = out, config, keys, shared, progress

    def run(self, state: State) -> dict:
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
        kept_path, dropped_path = (os.path.join(self.out, sub, output) for sub in ("kept", "dropped"))
        kinds = {seq: kind for seq, _, kind, _, _ in rows}

        def routed() -> Iterator[tuple]:
            for row, raw, item in records(path, fmt, size, rows):
                seq, _, kind, _, _ = row
                route = None
                if kind not in (DAMAGED, REVISIT):
                    route = Route(self._destination(seq, kind, decisions, follows, by_payload, db, kinds),
                                  decisions.get(seq) if kind == PAGE else None)
                elif kind == REVISIT:
                    original = self._original(seq, db, by_payload)
                    route = Route("kept", revisit=None if original is None else (
                        decisions.get(original), self._source(db, original)))
                yield row, raw, item, route

        return copy_file(path, fmt, kept_path, dropped_path, routed(), droplog.write, counts,
                         self.config.droplog_items)

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
                fh.write(dumps(line) + "\n")
        os.replace(path + ".tmp", path)


def save_summary(out: str, summary: dict) -> None:
    path = files.join(out, "summary.json")
    data = json.dumps(summary, indent=1, ensure_ascii=False).encode("utf-8")
    if files.is_url(out):  # (an object is stored whole when closed)
        with files.open_write(path) as fh:
            fh.write(data)
        return
    with open(path + ".tmp", "wb") as fh:
        fh.write(data)
    os.replace(path + ".tmp", path)


def load_summary(out: str) -> dict:
    with files.open_read(files.join(out, "summary.json")) as fh:
        return json.loads(fh.read().decode("utf-8"))


@dataclass(frozen=True)
class Route:
    """Where a record goes and what the drop log says of it, as the decisions have it: `dest`
    ('kept', 'dropped' or 'both'); a page's decision (dropped, flagged, drop-log record as JSON,
    reason, note); a revisit's original page (its decision, its source) or None: no original."""

    dest: str
    decision: tuple | None = None
    revisit: tuple | None = None


def copy_file(path: str, fmt: str, kept_path: str, dropped_path: str, routed: Iterable[tuple], write_line,
              counts: dict, droplog_items: bool) -> dict:
    """One input copied record by record into its kept and dropped outputs (`routed`: (row, the
    record's bytes, a JSON line's object, Route) in input order), the drop-log lines written with
    `write_line`, `counts` added to; the input's own counts (both engines' write step)."""
    per = {"records": 0, "pages": 0, "kept": 0, "dropped": 0}
    gz = fmt == "jsonl" and sources.is_gzip(path)
    with _output(kept_path, gz) as kept_fh, _output(dropped_path, gz) as dropped_fh:
        outs = {"kept": (kept_fh,), "dropped": (dropped_fh,), "both": (kept_fh, dropped_fh)}
        for (seq, offset, kind, url, why), raw, line_item, route in routed:
            if kind == DAMAGED:
                continue
            per["records"] += 1
            counts["records"] += 1
            dest, record = route.dest, None
            if kind == PAGE:
                per["pages"] += 1
                counts["pages"] += 1
                d = route.decision
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
                if route.revisit is None:
                    counts["revisits"]["no_original"] += 1
                else:
                    d, source = route.revisit
                    if d is not None and d[0]:
                        dest = "dropped"
                        record = json.loads(d[2]) if d[2] else None
                        if record is not None:
                            record["url"] = url or record["url"]
                            record["revisit_of"] = source
                    counts["revisits"]["dropped" if dest == "dropped" else "kept"] += 1
            else:
                label = why or kind
                counts["passed"][label] = counts["passed"].get(label, 0) + 1
            for fh in outs[dest]:
                fh.write(raw)
            if record is not None:
                record = {"time": iso_time(), **record, "source": {"file": path, "offset": offset}}
                if line_item is not None and droplog_items:
                    record["item"] = line_item
                write_line(record)
    return per


@contextmanager
def _output(path: str, gz: bool):
    """An output file (here or at a URL: files.py), gzip-compressed when its input was."""
    import gzip

    with files.open_write(path) as raw:
        if not gz:
            yield raw
            return
        with gzip.GzipFile(fileobj=raw, mode="wb", filename=path.rstrip("/").rsplit("/", 1)[-1]) as fh:
            yield fh


def records(path: str, fmt: str, size: int, rows) -> Iterator[tuple]:
    """(row, the record's bytes, a JSON line's object or None) for each entry, in order; `rows`:
    (seq, offset, kind, url, why) in input order, the input's first record on."""
    if fmt == "jsonl":
        with sources.open_jsonl(path) as fh:
            for row in rows:
                if row[2] == DAMAGED:  # (the file cannot be read past it: nothing of it is copied)
                    yield row, b"", None
                    continue
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
    with files.open_read(path) as fh:
        for row, end in _with_ends(iter(rows), size):  # (a record ends where the next begins)
            if row[2] == DAMAGED:
                yield row, b"", None
                continue
            fh.seek(row[1])
            yield row, fh.read(max(0, end - row[1])), None


def _with_ends(rows: Iterator[tuple], size: int) -> Iterator[tuple[tuple, int]]:
    row = next(rows, None)
    while row is not None:
        following = next(rows, None)
        yield row, following[1] if following is not None else size
        row = following
