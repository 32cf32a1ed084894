"""`scan --engine spark` against the one-machine `scan --jobs N` on the same pages.

    python benchmarks/spark_scan.py --holdout DEV [--formats jsonl,warc] [--master local[2]] [--jobs 2]

DEV: an extracted quality-benchmark split (manifest.json and site/, ../shared/holdout-dev). Its
pages are written as one JSON-lines file and as WARC files (one a few hundred pages), each
scanned by both engines with the default policy (longest). Prints, a table each format:
pages/s of each engine (wall time of the whole command's work, Spark start-up included), each
Spark stage's seconds, how far the drops agree (page -> kept page), P and R of each against the
split's groups; then the sizing per page (signature bytes, candidate pairs, shuffle bytes, from
Spark's own stage metrics) and its extrapolation to 10^9 pages.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from crawler_dedup.tools.scan import Options, Scan  # noqa: E402
from crawler_dedup.tools.spark_scan import SparkScan  # noqa: E402
from crawler_dedup.tools.spark_scan.agree import agreement, drops_of  # noqa: E402


def load_split(root: str):
    """(url, html bytes, item) of each page of a split, in stream order; and the ignored id pairs."""
    with open(os.path.join(root, "manifest.json"), encoding="utf-8") as fh:
        manifest = json.load(fh)
    pages = []
    for it in manifest["items"]:
        with open(os.path.join(root, "site", it["path"]), "rb") as fh:
            pages.append((f"http://{it['host']}/{it['path']}", fh.read(), it))
    ignore = {frozenset(p) for p in manifest.get("ignore", [])}
    return pages, ignore


def write_inputs(pages, tmp: str, fmt: str, per_warc: int = 500) -> list[str]:
    if fmt == "jsonl":
        path = os.path.join(tmp, "pages.jsonl")
        with open(path, "w", encoding="utf-8") as fh:
            for url, html, _ in pages:
                fh.write(json.dumps({"url": url, "html": html.decode("utf-8", "replace")}) + "\n")
        return [path]
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    paths = []
    for start in range(0, len(pages), per_warc):
        path = os.path.join(tmp, f"pages-{start // per_warc:03d}.warc.gz")
        with open(path, "wb") as fh:
            w = WARCWriter(fh, gzip=True)
            for url, html, _ in pages[start:start + per_warc]:
                http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
                w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(html), http_headers=http))
        paths.append(path)
    return paths


def quality(out: str, pages, ignore) -> dict:
    """P and R of a scan's drops against the split's groups (a drop is true within one group)."""
    item = {url: it for url, _, it in pages}
    groups: dict[str, int] = {}
    for _, _, it in pages:
        groups[it["group"]] = groups.get(it["group"], 0) + 1
    expected = sum(n - 1 for n in groups.values())
    true = false = 0
    for url, other in drops_of(out).items():
        a, b = item.get(url), item.get(other or "")
        if a is None or b is None:
            false += 1
            continue
        if frozenset((a["id"], b["id"])) in ignore:
            continue
        if a["group"] == b["group"]:
            true += 1
        else:
            false += 1
    return {"P": true / max(1, true + false), "R": true / max(1, expected), "true": true, "false": false}


def du(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def run_format(pages, ignore, fmt: str, master: str, jobs: int, tmp: str, local_too: bool = True) -> dict:
    os.makedirs(os.path.join(tmp, fmt))
    inputs = write_inputs(pages, os.path.join(tmp, fmt), fmt)
    local, spark = os.path.join(tmp, fmt, "local"), os.path.join(tmp, fmt, "spark")
    t0 = time.monotonic()
    a = Scan(Options(inputs=inputs, out=local, jobs=jobs)).run() if local_too else None
    t1 = time.monotonic()
    job = SparkScan(Options(inputs=inputs, out=spark), master=master, say=lambda line: None, metrics=True)
    b = job.run()
    t2 = time.monotonic()
    agree = agreement(local, spark) if a is not None else None
    work = os.path.join(spark, ".spark")
    return {"format": fmt, "pages": b["pages"], "local_s": t1 - t0, "spark_s": t2 - t1, "stages": b["seconds"],
            "agree": agree, "q_local": quality(local, pages, ignore) if a is not None else None,
            "q_spark": quality(spark, pages, ignore), "dropped": (a["dropped"] if a else None, b["dropped"]), "metrics": job.metrics, "pairs": job.counts.get("pairs", 0),
            "bytes": {s: du(os.path.join(work, s)) for s in ("signatures", "results", "pairs", "components", "decisions")}}


def report(r: dict, master: str, jobs: int) -> None:
    n = r["pages"]
    print(f"\n{r['format']}: {n} pages, policy longest")
    print(f"{'':<34} {'seconds':>8} {'pages/s':>8} {'dropped':>8} {'P':>7} {'R':>7}")
    if r["q_local"] is not None:
        print(f"{f'scan --jobs {jobs}':<34} {r['local_s']:>8.1f} {n / r['local_s']:>8.1f} {r['dropped'][0]:>8} "
              f"{r['q_local']['P']:>7.4f} {r['q_local']['R']:>7.4f}")
    print(f"{f'scan --engine spark --master {master}':<34} {r['spark_s']:>8.1f} {n / r['spark_s']:>8.1f} "
          f"{r['dropped'][1]:>8} {r['q_spark']['P']:>7.4f} {r['q_spark']['R']:>7.4f}")
    print("spark stages (s): " + ", ".join(f"{k} {v:.1f}" for k, v in r["stages"].items()))
    a = r["agree"]
    if a is None:
        return
    print(f"drops that differ (page -> kept page): {a['differ']} of {max(a['drops_a'], a['drops_b'])} "
          f"({a['differ_share']:.2%}): only one-machine {len(a['only_a'])}, only spark {len(a['only_b'])}, "
          f"another page kept {len(a['other_kept'])}")


def sizing(r: dict) -> None:
    n, m, b, pairs = r["pages"], r["metrics"] or {}, r["bytes"], r["pairs"]
    shuffle = sum(v["shuffle_write"] for v in m.values())
    rows = [("signatures on disk (Parquet, narrow: no text)", b["signatures"] / n),
            ("extractions on disk (results/, a file a read task)", b["results"] / n),
            ("candidate pairs", pairs / n),
            ("pairs on disk (Parquet)", b["pairs"] / n),
            ("shuffle written, all stages", shuffle / n)]
    rows += [(f"  of which {stage}", v["shuffle_write"] / n) for stage, v in sorted(m.items()) if v["shuffle_write"]]
    print(f"\nsizing, measured on {n} pages ({r['format']}), per page and at 10^9 pages:")
    for name, per in rows:
        total = per * 1e9
        unit = "" if name == "candidate pairs" else " B"
        big = f"{total:.3g}" if name == "candidate pairs" else f"{total / 1e12:.2f} TB"
        print(f"  {name:<58} {per:>12.1f}{unit:<2} {big:>12}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--holdout", required=True, help="an extracted split: manifest.json and site/")
    ap.add_argument("--formats", default="jsonl,warc")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="the first N pages only")
    ap.add_argument("--spark-only", action="store_true", help="no one-machine scan (sizing at a larger N)")
    args = ap.parse_args(argv)
    pages, ignore = load_split(args.holdout)
    if args.limit:
        pages = pages[:args.limit]
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in args.formats.split(","):
            r = run_format(pages, ignore, fmt, args.master, args.jobs, tmp, local_too=not args.spark_only)
            report(r, args.master, args.jobs)
            sizing(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
