"""Extraction for the read pass (and `index add`, tools/seed.py): steps 1-4 of each page, in
worker processes when --jobs asks, with the results handed back in input order.

It runs in the workers, so it holds no state and touches no file.
"""

from __future__ import annotations

from collections import deque
from typing import Callable, Iterable, Iterator

from ...config import DedupConfig
from ...core.page.extract import canonical_link
from ...core.dedup import extract_and_fingerprint
from ...core.page.fingerprint import Fingerprinted, body_digest
from ...core.page.tokens import tokenize
from ...core.verdict import Step
from ..sources import PAGE, Entry


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
            from ...workers import WorkerPool

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
