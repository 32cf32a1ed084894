"""Group commit and extraction workers: how a crawl's pages reach the Deduplicator.

Pages of a crawl arrive concurrently. Each is prepared (steps 1-4) as it comes, waits a
moment (DEDUP_COMMIT_DELAY) for others, and up to DEDUP_COMMIT_BATCH are decided in one write
transaction and one durable commit, in arrival order. Extraction, the costly step, may run in
worker processes (DEDUP_WORKERS) while the reactor goes on downloading.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from ..core.dedup import Pending
from ..core.verdict import Failure, Verdict

logger = logging.getLogger(__name__)


class GroupCommit:
    """Pending pages and their waiting Deferreds. `decide` takes the batch and returns its
    verdicts; `finish` records one (stats, drop log) and returns it as recorded; `busy()` is
    the number of downloads in flight (None: unknown)."""

    def __init__(self, decide: Callable[[list[Pending]], list[Verdict]], finish: Callable[[Verdict], Verdict],
                 batch: int, delay: float, busy: Callable[[], int | None]):
        self.decide, self.finish, self.batch, self.delay, self.busy = decide, finish, batch, delay, busy
        self.pending: list[tuple[Any, Any]] = []  # (Pending, Deferred)
        self._call: Any = None  # the reactor's delayed flush
        self._logged = False

    async def submit(self, pending: Pending) -> Verdict:
        from scrapy.utils.defer import maybe_deferred_to_future
        from twisted.internet import defer
        from twisted.internet import reactor as _reactor

        reactor: Any = _reactor  # the installed reactor (typed as a module)

        waiting: defer.Deferred = defer.Deferred()
        self.pending.append((pending, waiting))
        if len(self.pending) >= self.batch or self.alone():
            self.flush()
        elif self._call is None:
            self._call = reactor.callLater(self.delay, self.flush)
        return await maybe_deferred_to_future(waiting)

    def alone(self) -> bool:
        """No other request in the downloader (one request at a time, or the crawl's last
        pages): nothing would come to share the commit, so waiting would only slow the crawl."""
        active = self.busy()
        return active is not None and active <= len(self.pending)

    def flush(self) -> None:
        """Decide the waiting pages in one transaction and one commit, then release them.
        Whatever fails, every page is released, and a page that could not be recorded is kept."""
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
        batch, self.pending = self.pending, []
        if not batch:
            return
        try:
            verdicts = self.decide([p for p, _ in batch])
        except Exception as exc:  # decide fails open itself: this is a bug, keep the pages
            self._error("Dedup could not decide %d pages, keeping them: %s", len(batch), exc)
            verdicts = [p.verdict.kept_because(Failure.INTERNAL) for p, _ in batch]
        for (_, waiting), verdict in zip(batch, verdicts):
            waiting.callback(self.finish(verdict))  # (finish never raises: every page is released)

    def _error(self, message: str, *args) -> None:
        if not self._logged:
            self._logged = True
            logger.error(message + " (further such errors are only counted)", *args)


def in_worker(pool, fn, *args):
    """Await a worker's result (workers.WorkerPool, or any executor's submit) from Scrapy code on
    any Twisted reactor."""
    from scrapy.utils.defer import maybe_deferred_to_future
    from twisted.internet import defer
    from twisted.internet import reactor as _reactor

    reactor: Any = _reactor

    deferred: defer.Deferred = defer.Deferred()
    future = pool.submit(fn, *args)

    def done(fut):
        exc = fut.exception()
        if exc is not None:
            reactor.callFromThread(deferred.errback, exc)
        else:
            reactor.callFromThread(deferred.callback, fut.result())

    future.add_done_callback(done)
    return maybe_deferred_to_future(deferred)
