"""`crawler-dedup scan`: deduplicate crawled data after the fact (JSON lines, WARC/ARC) and keep the
best copy of each group.

Three passes over a state file (OUT/.scan/state.sqlite, state.py), each continued by a later run:
1 read    every record of every input in order; pages extracted and fingerprinted (in worker
          processes), committed in input order, so a killed run continues after the last one.
          (pass1_read.py; the extraction, shared with `index add`, in extract.py)
2 decide  pages in the policy's order, best first, through the Deduplicator over OUT/index: the
          best page of a group comes first and is kept, the others are dropped against it, so
          the groups and the picks do not depend on the input's order. Each batch's decisions
          are committed after the index's commit; the one batch a kill can leave half done is
          decided again (its kept pages are known to the index as filed by a killed run).
          (pass2_decide.py)
3 write   every input copied record by record into OUT/kept/ and OUT/dropped/, the drop log, the
          clusters file and summary.json (done again whole when a run was stopped here).
          (pass3_write.py)

This module holds Scan: checking the inputs and OUT, starting or continuing the state file, and
running the passes in turn. What a scan is given and answers (Options, Progress, ScanError) is in
options.py. BATCH is read here when a scan runs, so setting `crawler_dedup.tools.scan.BATCH`
changes the decide pass's transactions.
"""

from __future__ import annotations

import json
import os
import time

from ...config import DedupConfig
from ...core.decide.policy import parse_policy
from . import pass1_read, pass2_decide, pass3_write
from .extract import Extractor, scan_extract, words_of
from .options import Options, Progress, ScanError, _quiet, checked_inputs
from .pass1_read import COMMIT_ROWS, COMMIT_SECONDS
from .pass2_decide import BATCH, decide
from .pass3_write import scores
from .state import SCHEMA, STATE_VERSION, State

__all__ = ["BATCH", "COMMIT_ROWS", "COMMIT_SECONDS", "SCHEMA", "STATE_VERSION", "Extractor", "Options",
           "Progress", "Scan", "ScanError", "State", "decide", "scan_extract", "scores", "words_of"]


class Scan:
    def __init__(self, opts: Options, progress: Progress | None = None):
        self.opts = opts
        self.progress = progress or _quiet
        self.keys = parse_policy(opts.policy)
        from .. import files

        # an --out on a store: the scan's state and index live in this machine's cache, the
        # outputs are copied there when written (a scan is continued from the cache)
        self.remote = opts.out.rstrip("/") if files.is_url(opts.out) else None
        self.out = staging(self.remote) if self.remote else os.path.abspath(opts.out)
        settings = dict(opts.settings)
        if str(settings.get("DEDUP_BACKEND", "lmdb")) == "lmdb":
            settings["DEDUP_DIR"] = os.path.join(self.out, "index")
        self.shared = str(settings.get("DEDUP_BACKEND", "lmdb")) not in ("lmdb", "memory")
        self.config = DedupConfig.from_settings(settings)

    # -- setting up ----------------------------------------------------------------------------
    def open(self) -> State:
        from .. import files

        state_file = os.path.join(self.out, ".scan", "state.sqlite")
        if self.remote:
            why = files.writable(self.remote)
            if why is not None:  # (before any work)
                raise ScanError(f"--out {self.remote} cannot be written: {why}")
            there = files.listdir(self.remote) if files.info(self.remote)[0] == "dir" else []
            if self.opts.restart:
                for name in ("kept", "dropped", "droplog.jsonl", "clusters.jsonl", "summary.json"):
                    files.remove(files.join(self.remote, name))
            elif there and not os.path.exists(state_file):
                raise ScanError(f"--out {self.remote} holds other files: give an empty or new folder (scan writes "
                                "kept/, dropped/ and the logs there)")
            os.makedirs(self.out, exist_ok=True)
        formats = checked_inputs(self.opts)
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
                _, size, mtime = files.info(path)
                state.db.execute("INSERT INTO files (file_no, path, format, size, mtime, output, last_offset) "
                                 "VALUES (?, ?, ?, ?, ?, ?, -1)",
                                 (no, absolute(path), fmt, size, mtime, self._output_name(no)))
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
                if tuple(files.info(path)[1:]) != (size, mtime):
                    state.close()
                    raise ScanError(f"{path} changed since this scan read it: --restart to scan it again")
        return state

    def _upload(self, summary: dict) -> dict:
        """The outputs copied to --out on its store (the state and the index stay in the cache)."""
        from .. import files

        remote = str(self.remote)
        for root, _, names in os.walk(self.out):
            rel = os.path.relpath(root, self.out)
            if rel.split(os.sep)[0] in (".scan", "index"):
                continue
            target = remote if rel == "." else files.join(remote, *rel.split(os.sep))
            files.makedirs(target)
            for name in names:
                with open(os.path.join(root, name), "rb") as src, files.open_write(files.join(target, name)) as dst:
                    while chunk := src.read(1 << 20):
                        dst.write(chunk)
                if rel != ".":  # (kept/ and dropped/ are the archive's size: not kept twice here)
                    os.remove(os.path.join(root, name))
        summary = {**summary, "out": remote, "droplog": files.join(remote, "droplog.jsonl"),
                   "clusters": files.join(remote, "clusters.jsonl"), "staged": self.out}
        with files.open_write(files.join(remote, "summary.json")) as fh:
            fh.write(json.dumps(summary, indent=1, default=str).encode("utf-8"))
        return summary

    def _undecide(self, state: State) -> None:
        import shutil

        state.db.execute("DELETE FROM decisions")
        for key in ("decided", "written", "pending"):
            state.put(key, None)
        shutil.rmtree(os.path.join(self.out, "index"), ignore_errors=True)

    def _described(self, formats: list[str]) -> dict:
        f = self.opts.fields
        return {"version": STATE_VERSION, "inputs": [absolute(p) for p in self.opts.inputs],
                "policy": list(self.keys), "settings": {k: str(v) for k, v in sorted(self.opts.settings.items())},
                "fields": [f.url, f.html, f.text, f.time, f.score]}

    def _output_name(self, no: int) -> str:
        names = [p.rstrip("/").rsplit("/", 1)[-1] for p in self.opts.inputs]
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
                summary = pass3_write.load_summary(self.out)
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
            if self.remote:
                summary = self._upload(summary)
            pass3_write.save_summary(self.out, summary)
            state.put("written", True)
            return summary
        finally:
            state.close()

    def read_pass(self, state: State) -> None:
        pass1_read.read_pass(state, self.config, self.opts.fields, self.opts.jobs, self.progress)

    def decide_pass(self, state: State) -> None:
        pass2_decide.decide_pass(state, self.config, self.keys, self.progress, BATCH)

    def write_pass(self, state: State) -> dict:
        return pass3_write.Writer(self.out, self.config, self.keys, self.shared, self.progress).run(state)

    def stopped(self) -> str:
        """The line for a scan stopped (Ctrl-C) mid-way, from what its state file holds: the pages
        committed by the read pass and the decide pass stay there, and the same command goes on
        after them (a read batch not yet committed, at most COMMIT_ROWS records or COMMIT_SECONDS,
        is read again; the write pass is done again whole)."""
        import contextlib
        import sqlite3

        from ..sources import PAGE

        read = decided = 0
        path = os.path.join(self.out, ".scan", "state.sqlite")
        if os.path.exists(path):
            try:
                with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)) as db:
                    read = db.execute("SELECT count(*) FROM entries WHERE kind=?", (PAGE,)).fetchone()[0]
                    decided = db.execute("SELECT count(*) FROM decisions").fetchone()[0]
            except sqlite3.Error:
                pass
        where = f" on this machine (its state is in {self.out})" if self.remote else ""
        if not read:
            return f"scan stopped before a page was read: run the same command again to start it{where}"
        so_far = f"the {read} page{'' if read == 1 else 's'} already read" + (f" and {decided} decided" if decided else "")
        return (f"scan stopped: run the same command again to continue from {so_far}{where} "
                "(or add --restart to start over)")


def absolute(path: str) -> str:
    from .. import files

    return path if files.is_url(path) else os.path.abspath(path)


def staging(out: str) -> str:
    """This machine's folder for a scan into `out` on a store (its state, index and outputs)."""
    import hashlib

    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "crawler-dedup", "scan", hashlib.sha1(out.encode()).hexdigest()[:12])
