"""How far two scans of the same inputs agree: each drop as (page, the page it duplicates), the
measure of `scan --engine spark` against the one-machine scan (tests, benchmarks/spark_scan.py)."""

from __future__ import annotations

import os

from ...droplog import read_droplog


def drops_of(out: str) -> dict[str, str | None]:
    """A scan's drops: dropped URL -> the URL kept in its place (superseded pages included)."""
    got: dict[str, str | None] = {}
    path = os.path.join(out, "droplog.jsonl")
    for rec in read_droplog(path if os.path.isfile(path) else os.path.join(out, "droplog")):
        if rec.get("url"):
            got[rec["url"]] = rec.get("duplicate_of")
    return got


def agreement(a: str, b: str) -> dict:
    """Drops of scan `a` and scan `b`: how many each has, how many differ (in one only, or
    against another page), and that as a share of the larger count."""
    da, db = drops_of(a), drops_of(b)
    only_a = sorted(set(da) - set(db))
    only_b = sorted(set(db) - set(da))
    other = sorted(u for u in set(da) & set(db) if da[u] != db[u])
    differ = len(only_a) + len(only_b) + len(other)
    return {"drops_a": len(da), "drops_b": len(db), "only_a": only_a, "only_b": only_b, "other_kept": other,
            "differ": differ, "differ_share": differ / max(1, len(da), len(db))}
