"""Extraction worker processes, for a crawl (scrapy/extension.py) and for `scan --jobs` alike:
`pool.py` the pool in the calling process, `process.py` a worker (`python -m crawler_dedup.workers`),
fed over pipes."""

from .pool import JOB_SECONDS, WorkerPool, usable_cores

__all__ = ["JOB_SECONDS", "WorkerPool", "usable_cores"]
