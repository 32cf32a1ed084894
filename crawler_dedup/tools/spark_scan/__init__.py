"""`crawler-dedup scan --engine spark`: the scan's decisions on Spark, for archives past one machine.

Stages (job.py), each written to OUT/.spark/<stage>/ as Parquet and skipped once finished:
1 signatures  one task an input file: every record read, each page extracted and fingerprinted by
              the crawl's own code in the executors (signatures.py)
2 pairs       the buckets the pages share (simhash tables, smallest shingle hashes, URL, headline)
              grouped by key; pairs within a bucket; a bucket filed for more pages than the
              one-machine index files under its key pairs none, other huge buckets are capped
              (candidates.py)
3 components  connected components of the pairs, large-star/small-star in Spark (candidates.py)
4 decisions   whole components a task, decided in the policy's order by the Deduplicator over an
              index of the task's own (decide.py)
then the outputs of `scan` (kept/, dropped/, droplog.jsonl, clusters.jsonl, summary.json), written
by the executors, an input a task, with the one-machine write pass's loop (write.py). The driver
holds no page: what it gathers is a line of counts an input.
"""

from .job import STAGES, SparkScan

__all__ = ["STAGES", "SparkScan"]
