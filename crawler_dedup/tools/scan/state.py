"""The state file (OUT/.scan/state.sqlite): what every pass has done so far, so a killed or
stopped scan goes on where it was. The passes read and write its tables; this opens it.

- meta: the scan as described when it started (inputs, policy, settings), and the passes done;
- files: each input, how far the read pass got in it, whether it is damaged;
- entries: every record read (pages with their extraction, zlib-compressed pickles);
- decisions: each page's decision, in the decide pass's order.
"""

from __future__ import annotations

import json
import os
import sqlite3

STATE_VERSION = 1

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
