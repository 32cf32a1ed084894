"""Older index formats brought up to the current one in place (NearDupIndex.open runs it)."""

from __future__ import annotations

import logging

from ...exceptions import StoreFormat
from ...stores.base import FORMAT_VERSION, MIGRATABLE
from .records import DocRecord, url_key

logger = logging.getLogger(__name__)

MIGRATE_BATCH = 10_000


def migrate(index, version: int) -> int:
    """Bring an index of an older format up to FORMAT_VERSION in place; how many records were
    read. 3 -> 4: the URL table, filled from the kept records. Format 3 could keep several
    records for one URL (a page that changed a lot was kept again): the newest is the URL's page,
    the older ones are removed, as an update removes them now, so that no revisit matches its own
    URL's old text. In batches of write transactions; the format is bumped by the last, so an
    interrupted migration starts again on the next open."""
    store = index.store
    if version != 3:
        raise StoreFormat(f"the index at {store.location} has format version {version}: cannot migrate it")
    logger.info("crawler-dedup: migrating the index at %s from format %d to %d (adding the URL table)",
                store.location, version, FORMAT_VERSION)
    after, seen, older = 0, 0, []
    while True:
        def batch(txn, after=after):
            rows, replaced = txn.doc_scan(after, MIGRATE_BATCH), []
            for doc_id, raw in rows:  # in id order: a URL's newest record comes last
                url = DocRecord.decode(raw, doc_id).url
                if not url:  # (an item without a URL: no URL entry, as add() files it)
                    continue
                key = url_key(url)
                previous = txn.url_get(key)
                if previous is None or previous < doc_id:
                    txn.url_put(key, doc_id)
                    if previous is not None:
                        replaced.append(previous)
                elif previous > doc_id:  # a migration run before and cut short filed the newer one
                    replaced.append(doc_id)
            return (rows[-1][0] if rows else after), len(rows), replaced
        after, count, replaced = index.write(batch)
        seen += count
        older += replaced
        if count < MIGRATE_BATCH:
            break
    for start in range(0, len(older) + 1, MIGRATE_BATCH):
        def remove(txn, ids=older[start:start + MIGRATE_BATCH], last=start + MIGRATE_BATCH > len(older)):
            for doc_id in ids:
                index.remove(txn, doc_id)
            if last:
                txn.meta_put("format", str(FORMAT_VERSION).encode())
        index.write(remove)
    logger.info("crawler-dedup: migrated %d records; %d older records of a URL kept again removed", seen, len(older))
    return seen


def unreadable_format(location: str, version: int) -> str:
    """What to do with an index of a format this version neither reads nor migrates (the crawl's,
    `doctor`'s and `index rebuild`'s one answer)."""
    return (f"the index at {location} has format version {version}; this crawler-dedup reads version "
            f"{FORMAT_VERSION} and migrates {', '.join(map(str, MIGRATABLE))}. File the crawl's pages into a new "
            f"index (`crawler-dedup index add ITEMS.jsonl|WARC --dir NEW_DIR`, see docs/faq.md), or crawl with a "
            f"new DEDUP_DIR")
