"""`crawler-dedup scan` over a WARC of real pages: pages/s on 1 and 2 cores, and what each policy keeps.

    python benchmarks/scan.py [--data ../shared/data] [--seeds 7,8,9] [--runs 3] [--skip-speed]

The pages are realcopies.py's streams (real pages with human text, and the copies made of them
the way copies are made: syndicated, print, churn, 3% edits, tracking URLs, natural copies, plus
notices and shells as negatives), one stream a seed; the streams of seeds after the first get
their paths prefixed (/s8/...), so the same article under several seeds is one group of copies.
All are written into one WARC (gzip, a response and a request record a page) with warcio.

Speed: the whole scan (read, extract, decide, write) with --jobs 1 and 2, median of --runs,
against trafilatura alone over the same pages in this process (baseline 1.00).
Policies: one scan of the first seed's stream alone (its labels hold within it), its extraction
decided again under each policy. Scored per page: a drop is
right when the kept page is of the same article (or a page it may match, scored neutral), recall
is the share of the pages an ideal pick would drop (all but one of each article). "differs" is
the share of articles with 2+ pages whose kept page differs from the one `first` keeps; "s" is
the time of that scan run (the first one extracts the pages; the others decide them again).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pages import data_dir  # noqa: E402
from realcopies import build  # noqa: E402

from crawler_dedup.core.decide.policy import POLICIES  # noqa: E402
from crawler_dedup.tools.scan import Options, Scan  # noqa: E402
from crawler_dedup.workers import usable_cores  # noqa: E402


def stream(data: str, seeds: list[int]):
    """The pages of every seed, in seed order (each stream's labels hold within that stream), and
    the first seed's stream alone."""
    pages, first = [], []
    for n, seed in enumerate(seeds):
        got, _ = build(data, seed=seed)
        if n == 0:
            first = list(got)
        for p in got:
            if n:
                scheme, _, rest = p.url.partition("://")
                host, _, path = rest.partition("/")
                p = type(p)(**{**p.__dict__, "url": f"{scheme}://{host}/s{seed}/{path}"})
            pages.append(p)
    return pages, first


def write_warc(path: str, pages) -> None:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        w.write_record(w.create_warcinfo_record(os.path.basename(path), {"software": "benchmarks/scan.py"}))
        for p in pages:
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            rec = w.create_warc_record(p.url, "response", payload=io.BytesIO(p.html), http_headers=http)
            w.write_record(rec)
            w.write_record(w.create_warc_record(
                p.url, "request", payload=io.BytesIO(b""),
                http_headers=StatusAndHeaders("GET / HTTP/1.1", [], is_http_request=True),
                warc_headers_dict={"WARC-Concurrent-To": rec.rec_headers.get_header("WARC-Record-ID")}))


def trafilatura_alone(pages) -> float:
    import trafilatura

    t0 = time.perf_counter()
    for p in pages:
        trafilatura.extract(p.html)
    return len(pages) / (time.perf_counter() - t0)


def speed(warc: str, pages, runs: int, work: str) -> None:
    base = [trafilatura_alone(pages) for _ in range(max(1, runs // 2))]
    alone = statistics.median(base)
    rows = [("trafilatura alone, 1 process", alone, None)]
    for jobs in (1, 2):
        rates, reads = [], []
        for r in range(runs):
            out = os.path.join(work, f"speed-{jobs}-{r}")
            t0 = time.perf_counter()
            s = Scan(Options(inputs=[warc], out=out, jobs=jobs)).run()
            rates.append(len(pages) / (time.perf_counter() - t0))
            reads.append(len(pages) / s["seconds"]["read"])
        rows.append((f"scan --jobs {jobs} (whole)", statistics.median(rates), statistics.median(reads)))
    print(f"\nspeed: {len(pages)} pages, {usable_cores()} cores, median of {runs} runs")
    print(f"{'':<32} {'pages/s':>8} {'ratio':>6} {'read pass pages/s':>18}")
    for name, rate, read in rows:
        print(f"{name:<32} {rate:>8.1f} {rate / alone:>6.2f} {'' if read is None else f'{read:>18.1f}'}")


def policies(warc: str, pages, work: str) -> None:
    out = os.path.join(work, "policies")
    cluster = {p.url: p.cluster for p in pages}
    related = {p.url: {p.related, p.template} - {None} for p in pages}
    kind = {p.url: p.kind for p in pages}
    articles = Counter(p.cluster for p in pages)
    ideal = sum(n - 1 for n in articles.values())
    picks: dict[str, dict[str, str]] = {}
    print(f"\npolicies: {len(pages)} pages, {len(articles)} articles (groups an ideal pick forms), "
          f"{ideal} pages an ideal pick drops")
    print(f"{'policy':<14} {'kept':>5} {'dropped':>7} {'P':>6} {'R':>6} {'differs':>8} {'s':>6}  kept page of a group, by kind")
    for name in ("first", *[n for n in POLICIES if n not in ("first", "nutch")]):
        t0 = time.perf_counter()
        s = Scan(Options(inputs=[warc], out=out, policy=name, jobs=2)).run()
        seconds = time.perf_counter() - t0
        with open(os.path.join(out, "clusters.jsonl"), encoding="utf-8") as fh:
            groups = [json.loads(line) for line in fh]
        right = wrong = 0
        kept_of: dict[str, str] = {}
        kinds = Counter()
        for g in groups:
            k = g["kept"]["url"]
            kinds[kind[k]] += 1
            kept_of.setdefault(cluster[k], k)
            for d in g["dropped"]:
                u = d["url"]
                if cluster[u] == cluster[k]:
                    right += 1
                elif cluster[u] in related[k] or cluster[k] in related[u]:
                    pass  # neutral
                else:
                    wrong += 1
        picks[name] = kept_of
        first = picks["first"]
        many = [c for c, n in articles.items() if n > 1 and c in first and c in kept_of]
        differs = sum(first[c] != kept_of[c] for c in many) / max(len(many), 1)
        precision = right / max(right + wrong, 1)
        print(f"{name:<14} {s['kept']:>5} {s['dropped']:>7} {precision:>6.3f} {right / max(ideal, 1):>6.3f} "
              f"{differs:>8.1%} {seconds:>6.1f}  " + ", ".join(f"{k} {v}" for k, v in kinds.most_common(5)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=data_dir())
    ap.add_argument("--seeds", default="7,8,9")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--skip-speed", action="store_true")
    args = ap.parse_args(argv)
    pages, first = stream(args.data, [int(s) for s in args.seeds.split(",")])
    with tempfile.TemporaryDirectory(prefix="scan-bench-") as work:
        warc = os.path.join(work, "pages.warc.gz")
        write_warc(warc, pages)
        print(f"{len(pages)} pages in {warc}: {os.path.getsize(warc) / 2**20:.1f} MiB")
        if not args.skip_speed:
            speed(warc, pages, args.runs, work)
        # scored on the first seed's stream alone: its labels (which pages are copies of which,
        # which are neutral) are made for that stream; across seeds they do not line up
        one = os.path.join(work, "one-seed.warc.gz")
        write_warc(one, first)
        policies(one, first, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
