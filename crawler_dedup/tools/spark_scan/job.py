"""The driver of `crawler-dedup scan --engine spark`: the stages in turn, each written to
OUT/.spark/<stage>/ as Parquet and not run again once finished (a stopped job goes on from the
first unfinished stage when run again with the same arguments), then the scan's outputs.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from typing import Callable

from ...config import DedupConfig
from .. import files
from ...core.decide.policy import parse_policy
from ..scan.options import Options, ScanError, checked_inputs
from ..scan.pass3_write import load_summary, save_summary
from ..sources import PAGE

PARTITION_BYTES = 64 * 1024**2
ENDPOINT_ENV = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION")
STAGES = ("signatures", "order", "pairs", "components", "sites", "decisions")
JOB_VERSION = 3  # (3: narrow signatures, exact copies collapsed; a stopped job of an older version runs again from its start)


def _say(line: str) -> None:
    print(f"crawler-dedup scan (spark): {line}", file=sys.stderr, flush=True)


class SparkScan:
    def __init__(self, opts: Options, master: str | None = "local[*]", say: Callable[[str], None] = _say,
                 partitions: int | None = None, split_bytes: int | None = None, metrics: bool = False,
                 work: str | None = None, spark_conf: list[tuple[str, str]] | None = None,
                 join_outputs: bool = False, piece: int | None = None):
        self.opts, self.master, self.say, self.partitions = opts, master, say, partitions
        self.spark_conf = list(spark_conf or [])
        self.join_outputs = join_outputs  # the drop log and the groups as one file each (when small)
        self.piece = piece  # pages of a component decided in one task (None: decide.PIECE)
        self.split_bytes = split_bytes  # None: SPLIT_BYTES, less when that leaves cores idle
        self.counts: dict[str, int] = {}
        self.metrics: dict[str, dict] | None = {} if metrics else None  # per stage, from Spark's REST API
        self.keys = parse_policy(opts.policy)
        self.out = opts.out if files.is_url(opts.out) else os.path.abspath(files.local(opts.out))
        self.work = self._work(work, master)
        settings = {**opts.settings, "DEDUP_BACKEND": "memory"}  # each decide task's own index
        if str(opts.settings.get("DEDUP_BACKEND", "lmdb")) not in ("lmdb", "memory"):
            raise ScanError("--engine spark decides with an index of each task's own: DEDUP_BACKEND="
                            f"{opts.settings['DEDUP_BACKEND']} (a shared index) is for the one-machine scan")
        self.config = DedupConfig.from_settings(settings)
        from ...core.page.plugins import is_pure

        if not is_pure(self.config):
            raise ScanError("--engine spark needs fingerprints made from each page's text alone (the default "
                            "DEDUP_FEATURES and DEDUP_WEIGHTING); features learned from the pages kept need "
                            "the one-machine scan")

    # -- setting up ----------------------------------------------------------------------------
    def _work(self, work: str | None, master: str | None) -> str:
        """Where the stages' data goes: --work, else OUT/.spark; with OUT on an object store, a
        folder of this machine's cache for a local Spark (else --work is needed: every machine must
        reach it)."""
        if work:
            return work if files.is_url(work) else os.path.abspath(files.local(work))
        if not files.is_url(self.out):
            return os.path.join(self.out, ".spark")
        if master is not None and not master.startswith("local"):
            raise ScanError(f"--out {self.out} is on an object store: give --work, a folder every Spark machine "
                            "reaches (hdfs://..., or a shared mount), for the stages' data")
        import hashlib

        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(cache, "crawler-dedup", "spark", hashlib.sha1(self.out.encode()).hexdigest()[:12])

    def _described(self, formats: list[str]) -> dict:
        f = self.opts.fields
        return {"version": JOB_VERSION, "engine": "spark",
                "inputs": [p if files.is_url(p) else os.path.abspath(files.local(p)) for p in self.opts.inputs],
                "formats": formats, "policy": list(self.keys),
                "settings": {k: str(v) for k, v in sorted(self.opts.settings.items())},
                "fields": [f.url, f.html, f.text, f.time, f.score]}

    def _open(self) -> dict:
        formats = checked_inputs(self.opts)
        job_file = files.join(self.work, "job.json")
        if self.opts.restart or self._older(job_file):
            for name in ("kept", "dropped", "droplog", "clusters", "droplog.jsonl", "clusters.jsonl", "summary.json",
                         ".droplog-parts"):
                files.remove(files.join(self.out, name))
            files.remove(self.work)
        elif files.info(job_file)[0] != "file" and files.info(self.out)[0] == "dir" and [
                n for n in files.listdir(self.out) if n != ".spark"]:
            raise ScanError(f"--out {self.opts.out} holds other files: give an empty or new folder "
                            "(a Spark scan writes kept/, dropped/ and the logs there)")
        why = files.writable(self.out)
        if why is not None:  # (before any work)
            raise ScanError(f"--out {self.opts.out} cannot be written: {why}")
        described = self._described(formats)
        if files.info(job_file)[0] == "file":
            with files.open_read(job_file) as fh:
                recorded = json.loads(fh.read().decode("utf-8"))
            if {k: v for k, v in recorded.items() if k not in ("done", "files", "stats")} != described:
                what = [k for k in described if described[k] != recorded.get(k)]
                raise ScanError(f"{self.opts.out} holds a Spark scan with other {', '.join(what)}: give the same "
                                "inputs, --policy and settings to continue it, --restart, or another --out")
            for path, seen in zip(recorded["inputs"], recorded.get("files", [])):
                if list(files.info(path)[1:]) != seen:
                    raise ScanError(f"{path} changed since this scan read it: --restart to scan it again")
            return recorded
        described["files"] = [list(files.info(p)[1:]) for p in described["inputs"]]
        files.makedirs(self.work)
        described["done"] = []
        self._save(described)
        return described

    def _older(self, job_file: str) -> bool:
        """A stopped job of an earlier release (its stages' data differ): run again from its start."""
        if files.info(job_file)[0] != "file":
            return False
        with files.open_read(job_file) as fh:
            version = json.loads(fh.read().decode("utf-8")).get("version")
        if version != JOB_VERSION:
            self.say(f"{self.opts.out} holds a Spark scan of an earlier release (job version {version}): "
                     "scanning again from the start")
            return True
        return False

    def _save(self, job: dict) -> None:
        files.write_bytes(files.join(self.work, "job.json"), json.dumps(job, indent=1).encode("utf-8"))

    def _session(self):
        try:
            import pyspark  # noqa: F401
        except ImportError:
            raise ScanError("--engine spark needs pyspark and Java 17: pip install 'crawler-dedup[spark]', and "
                            "a JDK (Debian: apt-get install openjdk-17-jre-headless)") from None
        from pyspark import SparkConf
        from pyspark.sql import SparkSession

        builder = SparkSession.builder
        if self.master is not None or not SparkConf().contains("spark.master"):  # (spark-submit sets it)
            builder = builder.master(self.master or "local[*]")
            # executors run this package's Python (spark-submit: its own --conf spark.pyspark.python)
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        # where the object store is; its credentials only to executors on this machine (a cluster's take
        # them from their own chain, a role, refreshed by the SDK: a copied session token expires)
        here = (self.master or SparkConf().get("spark.master", "local")).startswith("local")
        for name, value in os.environ.items():
            if name in ENDPOINT_ENV or (here and name.startswith(("AWS_", "GOOGLE_APPLICATION_CREDENTIALS"))):
                builder = builder.config(f"spark.executorEnv.{name}", value)
        # on a terminal Spark's stage bar; in a log, the stage lines this job prints only. Spark's
        # web UI only when asked (--spark-conf spark.ui.enabled=true): a port opened by a batch
        # job nobody watches is a surprise; the console keeps the warnings a user can act on.
        builder = builder.config("spark.ui.showConsoleProgress", "true" if sys.stderr.isatty() else "false")
        builder = builder.config("spark.ui.enabled", "true" if self.metrics is not None else "false")  # (metrics: its REST API)
        quiet = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")
        builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{quiet}")
        for name, value in self.spark_conf:  # the user's, over this job's defaults
            builder = builder.config(name, value)
        if self.partitions:
            builder = builder.config("spark.sql.shuffle.partitions", str(self.partitions))
        try:
            spark = (builder.appName("crawler-dedup scan")
                     .config("spark.python.worker.reuse", "true")
                     # no table is broadcast: it would be built on the driver, whose memory must not
                     # grow with the archive (a join is a shuffle, whatever Spark's size estimate)
                     .config("spark.sql.autoBroadcastJoinThreshold", "-1").getOrCreate())
        except Exception as exc:  # no Java, a master that does not answer
            raise ScanError(self._not_started(exc)) from None
        spark.sparkContext.setLogLevel("WARN")
        # the user's (--partitions, --spark-conf, or spark-submit's spark-defaults), else from the input's
        # size; set every run (a session built earlier in this process must not leave its own)
        given = self.partitions or dict(self.spark_conf).get("spark.sql.shuffle.partitions")
        submitted = self.master is None and spark.sparkContext.getConf().contains("spark.sql.shuffle.partitions")
        if not submitted:
            spark.conf.set("spark.sql.shuffle.partitions", str(given or self._partitions(spark)))
        # Ctrl-C stops the job as any command stops (pyspark's own handler cancels the jobs through
        # the gateway while a call is in flight and prints its tracebacks); py4j's logs go quiet
        import logging
        import signal

        signal.signal(signal.SIGINT, signal.default_int_handler)
        logging.getLogger("py4j").setLevel(logging.CRITICAL)
        # (py4j logs an interrupted call to the root logger, traceback and all)
        logging.getLogger().addFilter(lambda record: "while sending command" not in str(record.msg))
        return spark

    def _partitions(self, spark) -> int:
        """Tasks of a shuffle when neither --partitions, --spark-conf nor spark-defaults say: one a
        PARTITION_BYTES of input, at least twice the cores (Spark's adaptive execution joins the
        small ones)."""
        total = sum(files.info(p)[1] for p in self.opts.inputs)
        return max(2 * spark.sparkContext.defaultParallelism, -(-total // PARTITION_BYTES))

    def _not_started(self, exc: Exception) -> str:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        where = self.master or "from spark-submit"
        if "JAVA_GATEWAY_EXITED" in first or "JAVA_HOME" in first or "java" in first.lower():
            home = os.environ.get("JAVA_HOME")
            hint = (f"JAVA_HOME={home} has no Java 17 in it: unset it or point it at one" if home else
                    "Spark needs Java 17: apt-get install openjdk-17-jre-headless (or set JAVA_HOME)")
        elif self.master and not self.master.startswith("local"):
            hint = f"is a Spark master running at {self.master}, and reachable from here?"
        else:
            hint = "Spark needs Java 17: apt-get install openjdk-17-jre-headless (or set JAVA_HOME)"
        return f"Spark could not start (--master {where}): {first[:300]} ({hint})"

    # -- the stages ----------------------------------------------------------------------------
    def run(self) -> dict:
        job = self._open()
        if "written" in job["done"]:
            summary = load_summary(self.out)
            summary["already_done"] = True
            return summary
        spark = self._session()
        partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
        seconds: dict[str, float] = {}
        try:
            for stage in STAGES:
                path = files.join(self.work, stage)
                if stage in job["done"] and files.info(files.join(path, "_SUCCESS"))[0] == "file":
                    self.say(f"{stage}: done before, not run again")
                    continue
                self.say(f"{stage}: running")
                t0 = time.monotonic()
                spark.sparkContext.setLocalProperty("spark.job.description", stage)
                getattr(self, f"_{stage}")(spark, path, job)
                seconds[stage] = round(time.monotonic() - t0, 2)
                job["done"] = [*job["done"], stage]
                self._save(job)
                self.say(f"{stage}: {seconds[stage]:.1f} s")
            t0 = time.monotonic()
            spark.sparkContext.setLocalProperty("spark.job.description", "write")
            summary = self._write(spark, job)
            seconds["write"] = round(time.monotonic() - t0, 2)
            if self.metrics is not None:
                self.metrics.update(stage_metrics(spark))
        except KeyboardInterrupt:
            try:  # the JVM's tasks fail as the job stops: not worth a screen of Java errors
                spark.sparkContext.setLogLevel("OFF")
            except Exception:  # noqa: BLE001
                pass
            raise
        finally:
            try:
                spark.stop()
            except Exception:  # noqa: BLE001 - (interrupted: the gateway may be gone already)
                pass
        summary["seconds"] = seconds
        summary["engine"] = "spark"
        summary["shuffle_partitions"] = partitions
        save_summary(self.out, summary)
        job["done"] = [*job["done"], "written"]
        self._save(job)
        return summary

    def _signatures(self, spark, path: str, job: dict) -> None:
        from .signatures import RESULTS, SPLIT_BYTES, read_file, schema, splits

        config, fields = self.config, self.opts.fields
        size = self.split_bytes
        if size is None:  # parts enough for every core twice over, of 1 to 64 MiB
            total = sum(files.size(p) for p in job["inputs"])
            cores = spark.sparkContext.defaultParallelism
            size = max(1 << 20, min(SPLIT_BYTES, -(-total // max(1, 2 * cores))))
        parts = [(i, *part) for i, part in enumerate(
            part for no, (p, fmt) in enumerate(zip(job["inputs"], job["formats"])) for part in splits(no, p, fmt, size))]
        results = files.join(self.work, RESULTS)
        rdd = spark.sparkContext.parallelize(parts, len(parts)).flatMap(  # one task a part
            lambda t: read_file(t[1], t[2], t[3], config, fields, t[4], t[5], t[0], results))
        spark.createDataFrame(rdd, schema()).write.mode("overwrite").parquet(path)
        cut = sorted({t[1] for t in parts if t[4] > 0})
        if cut:
            self._to_the_damage(spark, path, cut)

    def _to_the_damage(self, spark, path: str, cut: list[int]) -> None:
        """A file read in parts is read as one task reads it: to its first damage (a later part
        read on past it; the one-machine scan, and the write stage's copy, stop there)."""
        from pyspark.sql import functions as F

        from ..sources import DAMAGED

        sig = spark.read.parquet(path)
        damage = (sig.where((F.col("kind") == DAMAGED) & F.col("file_no").isin(cut)).groupBy("file_no")
                  .agg(F.min("offset").alias("cut_at")))
        if damage.isEmpty():
            return
        clean = files.join(self.work, "signatures-clean")
        keep = F.col("cut_at").isNull() | (F.col("offset") < F.col("cut_at")) | (
            (F.col("offset") == F.col("cut_at")) & (F.col("kind") == DAMAGED))
        sig.join(damage, "file_no", "left").where(keep).dropDuplicates(["seq"]).select(*sig.columns).write.mode(
            "overwrite").parquet(clean)
        # written back, not renamed: an object store moves no folder (signatures are narrow)
        spark.read.parquet(clean).write.mode("overwrite").parquet(path)
        files.remove(clean)

    def _pairs(self, spark, path: str, job: dict) -> None:
        from .candidates import pairs

        sig = spark.read.parquet(os.path.join(self.work, "signatures"))
        places = spark.read.parquet(os.path.join(self.work, "order"))
        pairs(sig, places, self.config.k).write.mode("overwrite").parquet(path)

    def _components(self, spark, path: str, job: dict) -> None:
        """The groups the pairs make, in Spark (the driver holds none of them); the largest one's
        size is kept for the summary."""
        from pyspark.sql import functions as F

        from .candidates import components_in_spark

        edges = spark.read.parquet(os.path.join(self.work, "pairs"))
        n = edges.count()
        components_in_spark(edges, os.path.join(self.work, "checkpoints")).write.mode("overwrite").parquet(path)
        files.remove(files.join(self.work, "checkpoints"))  # (each round's edges: not needed once written)
        sizes = spark.read.parquet(path).groupBy("unit").count().agg(F.max("count").alias("largest"),
                                                                      F.count("*").alias("groups")).first()
        job["stats"] = {**job.get("stats", {}), "candidate_pairs": n, "components": sizes.groups or 0,
                        "largest_component": sizes.largest or 0}
        self.say(f"components: {n} candidate pairs, {sizes.groups or 0} groups of two or more, the largest "
                 f"{sizes.largest or 0} pages")

    def _order(self, spark, path: str, job: dict) -> None:
        from .sites import order

        order(spark, self.work, self.keys).write.mode("overwrite").parquet(path)

    def _sites(self, spark, path: str, job: dict) -> None:
        from .sites import events

        events(spark, self.work).write.mode("overwrite").parquet(path)

    def _decisions(self, spark, path: str, job: dict) -> None:
        """Paired pages brought to one task a component (a large one in pieces), their extractions
        read back for them alone, with what other components' pages had filed under their site's
        lines and headlines by their turn (sites.py); a page in no pair decided from its row."""
        from .decide import decisions

        jsonl = frozenset(no for no, fmt in enumerate(job["formats"]) if fmt == "jsonl")
        got = decisions(spark, self.work, self.config, self.keys, jsonl, path, **(
            {"piece": self.piece} if self.piece else {}))
        job["stats"] = {**job.get("stats", {}), **got}
        self.say(f"decisions: the largest component {got['largest_component']} pages, "
                 f"{got['components_in_pieces']} decided in pieces")

    def _write(self, spark, job: dict) -> dict:
        """The scan's outputs, written by the executors (write.py): the driver gathers one line of
        counts an input."""
        from pyspark.sql import functions as F

        from ..scan.pass3_write import copy_file
        from ..sources import DAMAGED
        from .write import (CLUSTERS, DROPLOG, add_counts, clusters, empty_counts, join, routes, write_inputs,
                            write_manifest)

        for sub in ("droplog", "clusters"):  # (a rerun's parts replace every earlier one)
            files.remove(files.join(self.out, sub))
        for sub in ("kept", "dropped"):
            files.makedirs(files.join(self.out, sub))
        names = [p.rstrip("/").rsplit("/", 1)[-1] for p in job["inputs"]]
        inputs = [(path, fmt, names[no] if names.count(names[no]) == 1 else f"{no + 1:03d}-{names[no]}")
                  for no, (path, fmt) in enumerate(zip(job["inputs"], job["formats"]))]
        out, config, work = self.out, self.config, self.work
        n = max(1, min(len(inputs), int(spark.conf.get("spark.sql.shuffle.partitions"))))
        got = (routes(spark, work).rdd.map(lambda r: ((r.file_no, r.seq), r))
               .repartitionAndSortWithinPartitions(n, partitionFunc=lambda key: key[0])
               .mapPartitions(lambda it: write_inputs(it, out, inputs, config, work)).collect())
        counts, per_file = empty_counts(), {}
        for no, per, more in got:
            add_counts(counts, more)
            per_file[no] = per
        sig = spark.read.parquet(os.path.join(work, "signatures"))
        errors = {r.file_no: r.why for r in sig.where(F.col("kind") == DAMAGED).groupBy("file_no").agg(
            F.min_by("why", "seq").alias("why")).collect()}
        files_out = []
        for no, (path, fmt, output) in enumerate(inputs):
            kept, dropped = files.join(out, "kept", output), files.join(out, "dropped", output)
            per = per_file.get(no)
            if per is None:  # (an input without a record: its outputs empty, as the one-machine scan writes them)
                per = copy_file(path, fmt, kept, dropped, iter(()), lambda record: None, empty_counts(), False)
            per.update({"input": path, "format": fmt, "kept_output": os.path.join("kept", output),
                        "dropped_output": os.path.join("dropped", output)})
            if errors.get(no):
                per["damaged"] = errors[no]
            files_out.append(per)
        write_manifest(files.join(out, DROPLOG), len(inputs))
        write_manifest(files.join(out, CLUSTERS), clusters(spark, work, out, self.keys, [p for p, _, _ in inputs]))
        logs = {name: files.join(out, name) for name in (DROPLOG, CLUSTERS)}
        if self.join_outputs:  # one file each, when small: the parts go once the file is whole
            logs = {name: join(files.join(out, name), files.join(out, f"{name}.jsonl")) for name in logs}
        return {"out": out, "policy": list(self.keys), "inputs": files_out, **counts,
                "droplog": logs[DROPLOG], "clusters": logs[CLUSTERS], "index": None, **job.get("stats", {})}


def stage_metrics(spark) -> dict[str, dict]:
    """Bytes each stage of this job read, wrote and shuffled, summed over Spark's stages (its REST
    API, while the session runs): {stage: {input, output, shuffle_read, shuffle_write, run_ms}}."""
    import urllib.request

    sc = spark.sparkContext
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/stages?status=complete"
    with urllib.request.urlopen(url, timeout=30) as fh:
        stages = json.load(fh)
    out: dict[str, dict] = {}
    for st in stages:
        got = out.setdefault(st.get("description") or "other", {"input": 0, "output": 0, "shuffle_read": 0,
                                                                 "shuffle_write": 0, "run_ms": 0})
        got["input"] += st.get("inputBytes", 0)
        got["output"] += st.get("outputBytes", 0)
        got["shuffle_read"] += st.get("shuffleReadBytes", 0)
        got["shuffle_write"] += st.get("shuffleWriteBytes", 0)
        got["run_ms"] += st.get("executorRunTime", 0)
    return out
