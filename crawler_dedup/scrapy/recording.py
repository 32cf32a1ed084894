"""What a crawl records of each decision: stats (stats.py keys), the drop-log line, the log line,
and the page_superseded signal. Never a drop without its drop-log line: a drop whose line cannot
be written is recorded as a keep."""

from __future__ import annotations

import logging
import time

from . import stats as keys
from ..cli.out import plural
from ..core.verdict import Action, Failure, Reason, Revisit, Skip, Stage, Verdict
from ..droplog import DropLog, make_record, superseded_record
from ..signals import page_superseded

logger = logging.getLogger(__name__)


class Recorder:
    """One crawl's stats, drop log and log lines. `run` says which run this process's is (a
    superseded page kept in this run is signalled when the spider closes)."""

    def __init__(self, crawler, config):
        self.crawler, self.stats, self.config = crawler, crawler.stats, config
        self.droplog: DropLog | None = None
        self.superseded_later: list = []  # page_superseded signals held until the spider closes
        self._logged: set[str] = set()

    def open(self) -> None:
        self.droplog = DropLog(str(self.config.droplog))  # (set by the extension's _configure)

    def close(self) -> None:
        for args in self.superseded_later:  # every item of this run has gone through the pipelines now
            self.crawler.signals.send_catch_log(page_superseded, **args)
        self.superseded_later = []
        if self.droplog is not None:
            self.droplog.close()
            self.droplog = None

    # -- counts ---------------------------------------------------------------------------------
    def inc(self, name: str, by: int = 1) -> None:
        keys.counted(self.stats, name, by)

    def failure(self, failure: Failure | str) -> None:
        self.inc(keys.key(keys.ERRORS, failure))

    def skip(self, url: str, why: Skip | str) -> None:
        self.inc(keys.key(keys.SKIPPED, why))
        if self.config.debug:
            logger.debug("Dedup skipped %s: %s", url, why)

    def error_once(self, where: str, message: str, *args) -> None:
        if where not in self._logged:
            self._logged.add(where)
            logger.error(message + " (further %s errors are only counted)", *args, where)

    # -- one decision ---------------------------------------------------------------------------
    def record(self, verdict: Verdict, stage: Stage, item=None, run: int = 0) -> Verdict:
        """Stats, drop-log line and log line of a verdict; the verdict as recorded."""
        inc = self.inc
        if verdict.error:
            self.failure(verdict.error)
            inc(keys.UNCHECKED)
            if verdict.url and verdict.error != Failure.OPEN:  # (named: a later crawl can check it; an
                # index that never opened is one error, logged at start)
                logger.warning("Dedup kept unchecked: %s (%s error)", verdict.url, verdict.error)
            return verdict
        if verdict.skipped == Skip.REFETCH:
            return verdict  # (asked again in full: recorded when decided by its text)
        if verdict.skipped:
            self.skip(verdict.url, verdict.skipped)
            return verdict
        inc(keys.CHECKED)
        if verdict.revisit:
            inc(keys.REVISITS)
            if verdict.revisit == Revisit.UNCHANGED:
                inc(keys.REVISITS_UNCHANGED)
                if verdict.resent:
                    inc(keys.REVISITS_RESENT)
            elif verdict.revisit == Revisit.UPDATED:
                inc(keys.REVISITS_UPDATED)
            elif verdict.action != Action.KEEP:
                inc(keys.REVISITS_COPY)
        if verdict.superseded:
            self._superseded(verdict, stage, run)
            for also in verdict.superseded.get("chain") or ():  # (a killed run's, passed on again)
                self._superseded(verdict.but(superseded=also), stage, run)
        if verdict.action == Action.KEEP:
            inc(keys.KEPT)
            if verdict.scored_apart:  # a candidate passed the lookup thresholds: the score kept it apart
                inc(keys.SCORED_APART)
                if self.config.log_kept:
                    try:
                        self.write(make_record(verdict, stage, self._spider()))
                    except (OSError, TypeError, ValueError) as exc:  # (nothing is dropped: counted only)
                        self.failure(Failure.DROPLOG)
                        self.error_once("droplog", "Dedup could not write the drop log %s (kept %s): %s",
                                        self.config.droplog, verdict.url, exc)
            if self.config.debug:
                logger.debug("Dedup kept %s (fingerprint %016x)", verdict.url, verdict.fingerprint or 0)
            return verdict
        keep_item = item if (item is not None and self.config.droplog_items) else None
        try:
            self.write(make_record(verdict, stage, self._spider(), keep_item))
        except (OSError, TypeError, ValueError) as exc:
            # no drop-log line, no drop: the page is kept
            self.failure(Failure.DROPLOG)
            inc(keys.KEPT)
            self.error_once("droplog", "Dedup could not write the drop log %s, keeping %s: %s",
                            self.config.droplog, verdict.url, exc)
            return verdict.kept_because(Failure.DROPLOG)
        flagged = verdict.action == Action.FLAG
        inc(keys.FLAGGED if flagged else keys.DROPPED)
        inc(keys.key(keys.FLAGGED_BY if flagged else keys.DROPPED_BY, verdict.reason))
        done = "flagged" if flagged else "dropped"
        if verdict.reason == Reason.UNCHANGED:  # routine on a recrawl: one line a page only when debugging
            logger.debug("Dedup %s %s: unchanged since %s", done, verdict.url,
                         time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(verdict.kept_at or 0)))
            return verdict
        logger.info("Dedup %s %s: %s duplicate of %s (distance %s, similarity %.2f)", done, verdict.url,
                    verdict.reason, verdict.duplicate_of, verdict.distance, verdict.similarity or 0.0)
        return verdict

    def write(self, record: dict) -> None:
        if self.droplog is None:
            raise OSError("the drop log is not open")
        self.droplog.write(record)

    def _spider(self) -> str | None:
        return getattr(self.crawler.spider, "name", None)

    def _superseded(self, verdict: Verdict, stage: Stage, run: int) -> None:
        """The kept page this one replaced as its canonical URL: a drop-log line and a signal, so
        storage can remove it (the index already has)."""
        self.inc(keys.SUPERSEDED)
        record = superseded_record(verdict, stage, self._spider(), self.config.dry_run)
        try:
            self.write(record)
        except (OSError, TypeError, ValueError) as exc:
            self.failure(Failure.DROPLOG)
            self.error_once("droplog", "Dedup could not write the drop log %s (superseded %s): %s",
                            self.config.droplog, record["url"], exc)
        why = "a cleaner URL of the same page" if record.get("rule") == "clean_url" else "its rel=canonical names it"
        logger.info("Dedup: %s %s %s (%s)", verdict.url, "would supersede" if self.config.dry_run else "supersedes",
                    record["url"], why)
        if self.config.dry_run:  # a dry run changes nothing: storage is not told to remove anything
            return
        from .feeds import mark  # (the crawl's feeds leave it out when they close: feeds.py)

        mark(self.crawler, record["url"], verdict.url)
        args = {"url": record["url"], "canonical_url": verdict.url, "record": record}
        assert verdict.superseded is not None
        if run and verdict.superseded.get("run") == run:
            # kept earlier in this crawl: its item may still be on its way to storage, so a
            # deletion now could come first; told when the spider closes instead
            self.superseded_later.append(args)
        else:
            self.crawler.signals.send_catch_log(page_superseded, **args)

    # -- log lines ------------------------------------------------------------------------------
    def periodic_line(self, interval: float, before: int) -> int:
        """One periodic line from the stats (pages checked, per minute since the last line,
        dropped, the drop rate); the pages checked so far."""
        get, all_stats = self.stats.get_value, self.stats.get_stats()
        checked, dropped = get(keys.CHECKED, 0), get(keys.DROPPED, 0)
        skipped = sum(v for k, v in all_stats.items() if k.startswith(keys.prefix(keys.SKIPPED)))
        errors = sum(v for k, v in all_stats.items() if k.startswith(keys.prefix(keys.ERRORS)))
        rate = (checked - before) * 60.0 / interval
        logger.info(
            "Dedup: checked %s (%d/min), dropped %d (%.1f%%), flagged %d, skipped %d, errors %d",
            plural(checked, "page"), rate, dropped, 100.0 * dropped / checked if checked else 0.0, get(keys.FLAGGED, 0),
            skipped, errors,
        )
        return checked

    def closing_line(self) -> None:
        get = self.stats.get_value
        checked = get(keys.CHECKED, 0)
        dropped = get(keys.DROPPED, 0) + get(keys.FLAGGED, 0)
        revisits = get(keys.REVISITS, 0)
        asked, not_modified = get(keys.CONDITIONAL, 0), get(keys.NOT_MODIFIED, 0)
        unchecked = get(keys.UNCHECKED, 0)
        errors = ", ".join(f"{k.rsplit('/', 1)[1]} {v}" for k, v in sorted(self.stats.get_stats().items())
                           if k.startswith(keys.prefix(keys.ERRORS)) and v)
        logger.info(
            "Dedup: %s checked, %d kept, %d %s (%.1f%%)%s%s%s%s; drop log: %s",
            plural(checked, "page"), get(keys.KEPT, 0), dropped, "flagged" if self.config.dry_run else "dropped",
            100.0 * dropped / checked if checked else 0.0,
            f"; {get(keys.SUPERSEDED, 0)} kept earlier replaced by a canonical or cleaner URL (a drop-log line each)"
            if get(keys.SUPERSEDED, 0) else "",
            f"; {plural(revisits, 'revisit')}: {get(keys.REVISITS_UNCHANGED, 0)} unchanged, {get(keys.REVISITS_UPDATED, 0)} "
            f"updated, {get(keys.REVISITS_COPY, 0)} now {'a copy' if get(keys.REVISITS_COPY, 0) == 1 else 'copies'} of "
            "another URL's page" if revisits else "",
            f"; {plural(asked, 'conditional request')}, {not_modified} answered 304 ({_size(get(keys.NOT_MODIFIED_BYTES, 0))} "
            "not downloaded)" if asked else "",
            f"; {unchecked} kept unchecked (errors: {errors}; each named above)" if unchecked else "",
            self.config.droplog,
        )


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"
