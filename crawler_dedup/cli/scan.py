"""`crawler-dedup scan INPUT... --out DIR`: deduplicate crawled data (JSON lines, WARC/ARC)."""

from __future__ import annotations


from ..droplog import dumps
from .common import CliError, add_backend, backend_settings, make_config


def add_parser(sub):
    from ..core.decide.policy import DEFAULT_POLICY, KEYS, POLICIES

    policies = "; ".join(f"{name} = {','.join(keys)}" for name, keys in POLICIES.items())
    keys = "; ".join(f"{k}: {v}" for k, v in KEYS.items()).replace("%", "%%")  # (argparse formats help with %)
    p = sub.add_parser(
        "scan", help="deduplicate crawled data: JSON lines (feed exports) and WARC/ARC files",
        description="Deduplicate what was already crawled. Reads Scrapy feed exports (JSON lines) and WARC/ARC "
        "files, groups near-duplicates with the crawl's engine and settings, keeps the best page of each group "
        "(--policy) and writes OUT/kept/ and OUT/dropped/ (each input's records, unchanged, in its own format), "
        "OUT/droplog.jsonl, OUT/clusters.jsonl (every group: kept page, dropped pages, their scores), "
        "OUT/summary.json and OUT/index (the kept pages: a crawl with DEDUP_DIR=OUT/index drops them). "
        "An interrupted scan goes on from where it stopped when run again with the same arguments.")
    add_inputs(p, time_help="fetch time, ISO 8601 or seconds (for --policy newest/oldest)", score=True)
    p.add_argument("--out", required=True, metavar="DIR", help="where the results go (a new or empty folder, or "
                   "the folder of a scan to continue)")
    p.add_argument("--policy", default=DEFAULT_POLICY, metavar="POLICY",
                   help=f"which page of a group is kept (default {DEFAULT_POLICY}): a name ({policies}) or keys in "
                   f"order separated by commas ({keys}); ties go to the URL, then the time")
    p.add_argument("--restart", action="store_true", help="start again, removing an earlier scan's results in DIR")
    p.add_argument("--engine", choices=("local", "spark"), default="local",
                   help="local (default): this machine, --jobs processes; spark: a Spark job (pip install "
                   "'crawler-dedup[spark]', Java 17), the same decisions past one machine, no OUT/index (docs/scan.md)")
    p.add_argument("--master", metavar="URL",
                   help="with --engine spark: the Spark master (default: spark-submit's, else local[*]; "
                   "spark://host:7077, yarn, ...)")
    p.add_argument("--partitions", type=int, metavar="N",
                   help="with --engine spark: tasks of each shuffle (default: spark.sql.shuffle.partitions when "
                   "set by --spark-conf or spark-defaults, else one a 64 MiB of input, at least twice the cores)")
    p.add_argument("--work", metavar="DIR",
                   help="with --engine spark: where the stages' data goes (default OUT/.spark; needed for an --out "
                   "on an object store with a Spark cluster: a folder every machine reaches, e.g. hdfs://...)")
    p.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                   help="with --engine spark: a Spark setting, repeatable (spark.ui.enabled=true for Spark's web UI, "
                   "off by default; spark.executor.memory=8g, ...)")
    p.add_argument("--join-outputs", action="store_true",
                   help="with --engine spark: the drop log and the groups as one file each, OUT/droplog.jsonl and "
                   "OUT/clusters.jsonl, when under 2 GiB (default: parts in OUT/droplog/ and OUT/clusters/, listed "
                   "in order by their _manifest.json; every command that reads a drop log reads either)")
    add_backend(p, help="a DEDUP_ setting as with scrapy -s (thresholds, DEDUP_BACKEND=redis for a shared index)")
    return p


def add_inputs(p, time_help: str, score: bool) -> None:
    """What scan and index add share: the inputs, --jobs, --json and the JSON-lines field names."""
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help=".jsonl/.jl (optionally .gz), .warc, .warc.gz, .arc, .arc.gz; a path or URL (s3://, hdfs://, "
                   "...), a quoted glob ('s3://crawl/*.warc.gz', 'data/**/*.jsonl': from one listing) or @FILE, a "
                   "list of them, one a line")
    p.add_argument("--jobs", default="auto", metavar="N", help="extraction processes (default auto: one per core)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    g = p.add_argument_group("JSON lines fields (default: the project's DEDUP_ITEM_*_FIELD, else url, html, text)")
    g.add_argument("--url-field", metavar="NAME")
    g.add_argument("--html-field", metavar="NAME", help="the page's HTML (used when present)")
    g.add_argument("--text-field", metavar="NAME", help="the page's text (when there is no HTML)")
    g.add_argument("--time-field", metavar="NAME", help=time_help)
    if score:
        g.add_argument("--score-field", metavar="NAME", help="a number, higher is better (for --policy score)")
    else:
        p.set_defaults(score_field=None)


def run_with_progress(work):
    """work(progress) with a progress bar on a terminal; the bar is closed whatever happens."""
    from .out import PagesProgress


    progress = PagesProgress()
    try:
        return work(progress)
    finally:
        progress.close()


def jobs_of(text: str) -> int:
    from ..workers import usable_cores

    if str(text).strip().lower() == "auto":
        return usable_cores()
    try:
        jobs = int(text)
    except ValueError:
        raise CliError(f"--jobs takes a number of processes or auto, not {text!r}") from None
    if not 1 <= jobs <= 256:
        raise CliError(f"--jobs takes 1 to 256, not {jobs}")
    return jobs


def fields_of(args, config):
    from ..tools.sources import Fields

    return Fields(url=args.url_field or config.item_url_field, html=args.html_field or config.item_html_field,
                  text=args.text_field or config.item_text_field, time=args.time_field, score=args.score_field)


def run(args) -> int:
    from ..core.decide.policy import parse_policy
    from ..exceptions import SourceError
    from ..tools import files
    from ..tools.scan import Options, Scan, ScanError

    try:
        args.inputs = files.expand(list(args.inputs))
    except (SourceError, OSError) as exc:
        raise CliError(str(exc)) from None
    settings = backend_settings(args)
    config = make_config(settings)
    try:
        parse_policy(args.policy)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if ("score" in parse_policy(args.policy)) and not args.score_field:
        raise CliError("--policy with score needs --score-field NAME (a JSON field; WARC records have no score)")
    opts = Options(inputs=list(args.inputs), out=args.out, policy=args.policy, jobs=jobs_of(args.jobs),
                   fields=fields_of(args, config), settings=settings, restart=args.restart)
    if getattr(args, "engine", "local") != "spark" and (args.master is not None or args.partitions is not None
                                                         or getattr(args, "work", None) is not None
                                                         or getattr(args, "spark_conf", None)
                                                         or getattr(args, "join_outputs", False)):
        raise CliError("--master, --partitions, --work, --spark-conf and --join-outputs are for --engine spark (this "
                       "scan runs here, writing one drop log: --jobs N)")
    spark_conf = []
    for pair in getattr(args, "spark_conf", None) or []:
        name, eq, value = pair.partition("=")
        if not eq or not name.strip().startswith("spark."):
            raise CliError(f"--spark-conf takes spark.NAME=VALUE, not {pair!r}")
        spark_conf.append((name.strip(), value.strip()))
    try:
        if getattr(args, "engine", "local") == "spark":
            from ..tools.spark_scan import SparkScan

            if args.partitions is not None and args.partitions < 1:
                raise CliError("--partitions takes a number of tasks, 1 or more")
            summary = SparkScan(opts, master=args.master, partitions=args.partitions, work=args.work,
                                spark_conf=spark_conf, join_outputs=args.join_outputs).run()
        else:
            scans: list = []  # (the scan being run, for the line a Ctrl-C gets)

            def work(progress):
                scans.append(Scan(opts, progress))
                return scans[0].run()

            try:
                summary = run_with_progress(work)
            except KeyboardInterrupt:
                import sys

                print(scans[0].stopped() if scans else "scan stopped before it began", file=sys.stderr)
                return 130
    except ScanError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print(dumps(summary, indent=1))
    else:
        print_summary(summary)
    return 0


def print_summary(s: dict) -> None:
    from .common import term
    from .out import plural

    if s.get("already_done"):
        print(f"{term(s['out'])}: this scan was finished before (--restart scans again); its summary:")
    pages, dropped = s["pages"], s["dropped"]
    print(f"{plural(s['records'], 'record')}, {plural(pages, 'page')}: {s['kept']} kept, {dropped} dropped "
          f"({100.0 * dropped / pages if pages else 0:.1f}%), policy {','.join(s['policy'])}")
    if s["by_reason"]:
        print("  dropped by reason: " + ", ".join(f"{k} {v}" for k, v in sorted(s["by_reason"].items())))
    if s.get("flagged"):
        print(f"  flagged (DEDUP_DRY_RUN, kept): {s['flagged']}")
    if s["unchecked"]:
        print("  kept unchecked: " + ", ".join(f"{k} {v}" for k, v in sorted(s["unchecked"].items())))
    if s["passed"]:
        print("  other records passed through: " + ", ".join(f"{k} {v}" for k, v in sorted(s["passed"].items())))
    r = s["revisits"]
    if any(r.values()):
        print(f"  revisit records: {r['kept']} kept with their original, {r['dropped']} dropped with it, "
              f"{r['no_original']} without their original in the inputs (kept)")
    shown = s["inputs"] if len(s["inputs"]) <= 20 else [f for f in s["inputs"] if f.get("damaged")][:20]
    for f in shown:
        print(f"  {term(f['input'])}: {plural(f['pages'], 'page')}, {f['kept']} kept -> {f['kept_output']}, "
              f"{f['dropped']} dropped -> {f['dropped_output']}")
        if f.get("damaged"):
            print(f"    damaged, the rest of the file was skipped: {term(f['damaged'])}")
    if len(shown) < len(s["inputs"]):
        damaged = sum(1 for f in s["inputs"] if f.get("damaged"))
        print(f"  {plural(len(s['inputs']), 'input')} ({damaged} damaged); each one's counts: summary.json")
    secs = s.get("seconds") or {}
    if secs and s.get("engine") == "spark":
        print("  time (spark): " + ", ".join(f"{k} {v:.1f} s" for k, v in secs.items()))
    elif secs:
        rate = pages / secs["read"] if secs.get("read") else 0
        print(f"  time: read and extract {secs['read']:.1f} s ({rate:.1f} pages/s), decide {secs['decide']:.1f} s, "
              f"write {secs['write']:.1f} s")
    print(f"drop log: {term(s['droplog'])}; groups: {term(s['clusters'])}"
          + (f"; index of the kept pages: {term(s['index'])}" if s.get("index") else ""))
