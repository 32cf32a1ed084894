"""`scan --engine spark` on a skewed archive, as crawl archives are, at sizes 3x apart: seconds per
document and the whole process tree's peak memory at each size, the drops against `scan --jobs N`
and against the planted groups.

    python benchmarks/spark_skew.py [--sizes 20000,60000] [--master local[2]] [--jobs 2] [--html N]

The archive (JSON lines with text): a fifth of the documents one soft-404 text, each on a host of
its own; articles of 250-400 words from a 20,000-word vocabulary on 100 templated sites, each
site's articles ending in the site's own 60-word footer block; a tenth of the articles followed
later by a near copy (3% of the words changed) on a mirror, a twentieth by an exact copy; 3% parked
pages that differ only in their host's name; shuffled. `--html N` also runs N real-looking HTML
pages (the same mix as HTML pages in JSON lines) through both engines, the time ratio printed.

Each engine runs in a process of its own; peak memory is the sum of the resident sets of that
process and every process under it (Spark's JVM and its Python workers included), sampled every
0.2 s. Seconds are the whole command's, Spark's start-up included.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

VOCAB = [f"w{n}" for n in range(20_000)]
SOFT_404 = ("Page not found. We are sorry, but the page you are looking for does not exist, has been "
            "removed, had its name changed or is temporarily unavailable. Please check that the address "
            "is spelled correctly, go back to the previous page, or return to our home page and use the "
            "search box or the navigation menu to find what you were looking for. If you followed a link "
            "from another site, please let its owner know that the link is broken. Thank you for your "
            "patience while we keep improving our website and the content we publish for our readers.")


def lines(words: list[str]) -> str:
    return "\n".join(" ".join(words[j:j + 20]) for j in range(0, len(words), 20))


def corpus(n: int, seed: int = 1) -> list[tuple[str, str, str]]:
    """(url, text, group) of n documents, shuffled."""
    rnd = random.Random(seed)
    footers = [rnd.choices(VOCAB, k=60) for _ in range(100)]
    docs: list[tuple[str, str, str]] = []
    while len(docs) < n:
        i = len(docs)
        r = rnd.random()
        if r < 0.20:
            # (each host's own page: the score keeps a short text on two sites apart, so no drop is expected)
            docs.append((f"https://site{i}.example/missing/{i}", SOFT_404, f"soft-404-{i}"))
            continue
        if r < 0.23:
            host = f"parked{i}.example"
            text = (f"{host} is for sale. The domain name {host} may be available for purchase. Contact the "
                    f"owner of {host} today to make an offer, or browse related searches below: "
                    + " ".join(f"related link {k}" for k in range(30)))
            docs.append((f"https://{host}/", text, "parked"))
            continue
        site = rnd.randrange(100)
        words = rnd.choices(VOCAB, k=rnd.randrange(250, 400))
        docs.append((f"https://news{site}.example/a/{i}", lines(words + footers[site]), f"a{i}"))
        r = rnd.random()
        if r < 0.10 and len(docs) < n:
            near = list(words)
            for j in rnd.sample(range(len(near)), max(1, len(near) * 3 // 100)):
                near[j] = rnd.choice(VOCAB)
            docs.append((f"https://mirror{i % 50}.example/{i}", lines(near), f"a{i}"))
        elif r < 0.15 and len(docs) < n:
            docs.append((f"https://copy{i % 50}.example/{i}", docs[-1][1], f"a{i}"))
    rnd.shuffle(docs)
    return docs


def html_of(url: str, text: str) -> str:
    title = " ".join(text.split()[:6])
    body = "".join(f"<p>{line}</p>" for line in text.split("\n"))
    return (f"<html><head><title>{title}</title></head><body><nav><a href='/'>Home</a> <a href='/news'>News</a>"
            f"</nav><article><h1>{title}</h1>{body}</article><footer>(c) {url.split('/')[2]}</footer></body></html>")


def write(docs, path: str, html: bool) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for url, text, _ in docs:
            fh.write(json.dumps({"url": url, "html": html_of(url, text)} if html else {"url": url, "text": text}) + "\n")


RUN = """
import json, sys, time
sys.path.insert(0, {root!r})
from crawler_dedup.tools.scan import Options, Scan
from crawler_dedup.tools.spark_scan import SparkScan
opts = Options(inputs=[{path!r}], out={out!r}, jobs={jobs})
t0 = time.monotonic()
if {spark}:
    s = SparkScan(opts, master={master!r}, say=lambda line: None).run()
else:
    s = Scan(opts).run()
print(json.dumps({{"seconds": time.monotonic() - t0, "pages": s["pages"], "dropped": s["dropped"],
                  "largest": s.get("largest_component"), "one_task": s.get("largest_decided_in_one_task"),
                  "stage_seconds": s.get("seconds")}}))
"""


def tree_rss(pid: int) -> int:
    """Bytes resident in `pid` and every process under it (/proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(name))
            rss[int(name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo += children.get(p, [])
    return total


def run(path: str, out: str, spark: bool, master: str, jobs: int) -> dict:
    code = RUN.format(root=ROOT, path=path, out=out, jobs=jobs, spark=spark, master=master)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]

    def watch() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], tree_rss(proc.pid))
            time.sleep(0.2)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    stdout, stderr = proc.communicate()
    t.join()
    if proc.returncode != 0:
        raise SystemExit(stderr[-3000:])
    got = json.loads(stdout.strip().splitlines()[-1])
    got["tree_mb"] = peak[0] / 1024**2
    return got


def quality(out: str, docs) -> tuple[float, float]:
    """P and R of a scan's drops against the planted groups."""
    from crawler_dedup.tools.spark_scan.agree import drops_of

    group = {url: g for url, _, g in docs}
    sizes: dict[str, int] = {}
    for _, _, g in docs:
        sizes[g] = sizes.get(g, 0) + 1
    expected = sum(n - 1 for n in sizes.values())
    drops = drops_of(out)
    true = sum(1 for url, other in drops.items() if group.get(url) is not None and group.get(url) == group.get(other))
    return true / max(1, len(drops)), true / max(1, expected)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="20000,60000")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--html", type=int, default=0, help="also N HTML pages of the same mix (e.g. 3000)")
    args = ap.parse_args()
    from crawler_dedup.tools.spark_scan.agree import agreement

    rows = []
    with tempfile.TemporaryDirectory(prefix="spark-skew-") as tmp:
        cases = [(int(x), False) for x in args.sizes.split(",") if x] + ([(args.html, True)] if args.html else [])
        for n, html in cases:
            docs = corpus(n)
            name = f"{'html' if html else 'text'}-{n}"
            path = os.path.join(tmp, f"{name}.jsonl")
            write(docs, path, html)
            spark = run(path, os.path.join(tmp, f"spark-{name}"), True, args.master, args.jobs)
            local = run(path, os.path.join(tmp, f"local-{name}"), False, args.master, args.jobs)
            agree = agreement(os.path.join(tmp, f"local-{name}"), os.path.join(tmp, f"spark-{name}"))
            pr = quality(os.path.join(tmp, f"spark-{name}"), docs), quality(os.path.join(tmp, f"local-{name}"), docs)
            rows.append((n, html, spark, local, agree, pr))
            print(f"{name}: spark {spark}\n  local {local}\n  differ {agree['differ']}", file=sys.stderr, flush=True)
    print(f"\nskewed archive, {args.master} against scan --jobs {args.jobs} (whole commands; memory: the process tree)")
    print(f"{'documents':>10} {'input':>5} {'spark s':>8} {'s/doc ms':>9} {'tree MB':>8} {'local s':>8} "
          f"{'local tree MB':>13} {'time x':>7} {'drops':>7} {'differ':>7} {'P spark':>8} {'R spark':>8} "
          f"{'P local':>8} {'R local':>8} {'largest':>8} {'one task':>9}")
    for n, html, s, loc, agree, ((ps, rs), (pl, rl)) in rows:
        print(f"{n:>10} {'html' if html else 'text':>5} {s['seconds']:>8.1f} {1000 * s['seconds'] / n:>9.3f} "
              f"{s['tree_mb']:>8.0f} {loc['seconds']:>8.1f} {loc['tree_mb']:>13.0f} "
              f"{s['seconds'] / loc['seconds']:>7.2f} {s['dropped']:>7} {agree['differ']:>7} {ps:>8.4f} {rs:>8.4f} "
              f"{pl:>8.4f} {rl:>8.4f} {s['largest'] or 0:>8} {s['one_task'] or 0:>9}")
    text = [r for r in rows if not r[1]]
    if len(text) >= 2:
        (n0, _, a, *_), (n1, _, b, *_) = text[0], text[-1]
        print(f"\n{n0} -> {n1} documents: seconds a document x{(b['seconds'] / n1) / (a['seconds'] / n0):.3f}, "
              f"peak memory of the tree x{b['tree_mb'] / a['tree_mb']:.3f} (Spark)")
    for n, html, s, *_ in rows:
        print(f"{n} {'html' if html else 'text'}: Spark stages (s): {json.dumps(s['stage_seconds'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
