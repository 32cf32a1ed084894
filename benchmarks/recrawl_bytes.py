"""benchmarks/recrawl.py's rows, and its second table: what crawl 2 downloaded with conditional
requests (DEDUP_CONDITIONAL) and without, its time, and what the index keeps of the responses."""

from __future__ import annotations

import os

# row -> the server's validators (crawler_dedup.demo.server), the crawl's extra -s settings, and
# whether its requests are leaves (the pages spider's) or not (recrawl_spider.py: copies kept)
ROWS: dict[str, dict] = {
    "update": {"server": "none", "settings": []},
    "drop": {"server": "none", "settings": ["DEDUP_REVISIT=drop"]},
    "conditional": {"server": "honour", "settings": []},
    "unconditional": {"server": "honour", "settings": ["DEDUP_CONDITIONAL=False"]},
    "copies": {"server": "honour", "settings": [], "not_leaves": True},
    "ignored": {"server": "ignore", "settings": []},
}
_WHAT = {"update": "no validators", "drop": "no validators, DEDUP_REVISIT=drop",
         "conditional": "honoured, leaves (pages spider)", "unconditional": "honoured, DEDUP_CONDITIONAL=False",
         "copies": "honoured, not leaves: copies kept", "ignored": "sent, never a 304"}


def index_bytes(path: str) -> dict:
    """The LMDB index's pages, and its bytes a kept page: all, and the responses' (fetches)."""
    from crawler_dedup.core.index.neardup import NearDupIndex
    from crawler_dedup.stores.lmdb.store import LmdbStore

    if not os.path.exists(os.path.join(path, "data.mdb")):
        return {}
    store = LmdbStore(path, readonly=True)
    try:
        NearDupIndex.open(store)  # (opens every table the index has)
        sizes, disk = store.table_stats(), store.disk_bytes()
    except Exception as exc:  # (a figure missing, not a failed benchmark)
        return {"error": str(exc)}
    finally:
        store.close()
    pages = sizes.get("docs", (0, 0))[0]
    fetches = sizes.get("fetches", (0, 0))
    return {"pages": pages, "bytes_per_page": round(disk / pages) if pages else None,
            "responses": fetches[0], "response_bytes_per_page": round(fetches[1] / pages) if pages else None}


def bytes_table(crawls: dict) -> str:
    """One line a row: crawl 2's seconds and bytes downloaded (with the ratio to the row without
    validators, `update`, in the same process), its 304s, and the index's bytes a kept page."""
    base = crawls.get("update", {}).get(2)
    head = ["row", "server's validators", "crawl 2 s", "x", "downloaded MB", "x", "304s", "index B/page",
            "of it responses"]
    lines = [head]
    for name, runs in crawls.items():
        c = runs.get(2)
        if c is None or c.error:
            continue
        ratio = (lambda a, b: f"{a / b:.2f}" if b else "-")
        idx = c.index or {}
        lines.append([name, _WHAT.get(name, ""), f"{c.seconds:.1f}", ratio(c.seconds, base.seconds if base else 0),
                      f"{c.downloaded / 1e6:.2f}", ratio(c.downloaded, base.downloaded if base else 0),
                      str(c.stats.get("dedup/not_modified", 0)), str(idx.get("bytes_per_page", "-")),
                      str(idx.get("response_bytes_per_page", "-"))])
    widths = [max(len(r[i]) for r in lines) for i in range(len(head))]
    return "\n".join("  ".join(f"{v:<{w}}" if i < 2 else f"{v:>{w}}" for i, (v, w) in enumerate(zip(r, widths))).rstrip()
                     for r in lines)
