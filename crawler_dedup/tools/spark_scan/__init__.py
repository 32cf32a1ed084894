"""`crawler-dedup scan --engine spark`: the scan's decisions on Spark, for archives past one machine.

Stages (job.py), each written to OUT/.spark/<stage>/ as Parquet and skipped once finished:
1 signatures  one task an input file: every record read, each page extracted and fingerprinted by
              the crawl's own code in the executors (signatures.py)
2 pairs       the buckets the pages share (simhash tables, smallest shingle hashes, URL, headline)
              grouped by key; pairs within a bucket, huge buckets capped (candidates.py)
3 components  connected components of the pairs: union-find on the driver, or large-star/small-star
              in Spark past MAX_DRIVER_EDGES pairs (candidates.py)
4 decisions   whole components a task, decided in the policy's order by the Deduplicator over an
              index of the task's own (decide.py)
then the outputs of `scan` (kept/, dropped/, droplog.jsonl, clusters.jsonl, summary.json) by its
write pass, on the driver.
"""

from .job import STAGES, SparkScan

__all__ = ["STAGES", "SparkScan"]
