"""How fast `crawler-dedup inspect` and `report` read a big drop log, and in how much memory.

    python benchmarks/droplog.py                       # 1,000,000 lines, 3 runs each
    python benchmarks/droplog.py --lines 100000,1000000 --text   # lines carrying texts too

Writes a synthetic drop log (realistic keys and sizes: ~2,000 domains, titles, 200-character
excerpts, optionally the `text` of DEDUP_STORE_TEXT), then runs each step in a fresh child
process and prints the median wall time and the child's peak RSS beside a baseline run the same
way: a plain `for line in f: json.loads(line)` pass over the same file. Flat RSS from 10^5 to 10^6
lines is what "bounded memory" means here.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing
import os
import random
import resource
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

WORDS = ("the of and to in a is that for on with as was by at from it an be this are have has which "
         "government market police city report season team company said year people new first last "
         "world state news local election court price school health water fire game music film").split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def generate(path: str, lines: int, text: bool, seed: int = 5) -> None:
    rng = random.Random(seed)
    domains = [f"www.site{i}.{rng.choice(['com', 'org', 'net', 'de', 'co.uk'])}" for i in range(2000)]
    weights = [1 / (i + 1) for i in range(len(domains))]  # a few big sites, a long tail
    start = 1_790_000_000.0
    texts = [" ".join(sentence(rng, rng.randint(8, 25)) for _ in range(rng.randint(15, 40))) for _ in range(200)]
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(lines):
            dom = rng.choices(domains, weights)[0]
            kept_id = rng.randint(0, 50_000)
            reason = rng.choices(["exact", "near", "conceptual"], [45, 54, 1])[0]
            sim = 1.0 if reason == "exact" else round(rng.uniform(0.5, 1.0), 4)
            fp = rng.getrandbits(64)
            dist = 0 if reason == "exact" else rng.choice([0, 1, 1, 2, 2, 3, 4, 6, 9, 14])
            other = fp ^ sum(1 << b for b in rng.sample(range(64), dist))
            t = time.gmtime(start + i * 0.17)
            rec = {
                "time": time.strftime("%Y-%m-%dT%H:%M:%S", t) + f".{i % 1000:03d}Z",
                "url": f"https://{dom}/news/{rng.getrandbits(40):x}/article-{i}.html?utm_source=feed&id={i}",
                "duplicate_of": f"https://{dom}/news/story-{kept_id}.html",
                "action": "dropped", "reason": reason, "distance": dist, "similarity": sim,
                "fingerprint": f"{fp:016x}", "duplicate_of_fingerprint": f"{other:016x}",
                "stage": "response", "spider": "pages",
                "measure": {"exact": "exact", "near": "resemblance", "conceptual": "lsi"}[reason],
                "title": sentence(rng, 9)[:90], "duplicate_of_title": sentence(rng, 9)[:90],
                "excerpt": sentence(rng, 40)[:200],
            }
            if text:
                rec["text"] = texts[i % len(texts)]
            fh.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")


# -- the steps, each run in a fresh child process ---------------------------------------------

def step_baseline(path):
    n = 0
    with open(path, "rb") as fh:
        for line in fh:
            json.loads(line)
            n += 1
    return n


def step_inspect(path):
    from crawler_dedup.cli.inspect import print_summary
    from crawler_dedup.tools.inspect import Filters, summarize

    s = summarize(path, Filters())
    with contextlib.redirect_stdout(io.StringIO()):
        print_summary(s, path, Filters())
    return s.matched


def step_inspect_filtered(path):
    from crawler_dedup.cli.inspect import print_summary
    from crawler_dedup.tools.inspect import Filters, summarize

    f = Filters(reasons=("near",), urls=("*/news/*",), min_similarity=0.8)
    s = summarize(path, f)
    with contextlib.redirect_stdout(io.StringIO()):
        print_summary(s, path, f)
    return s.matched


def step_report(path):
    from crawler_dedup.tools.report import write_report

    out = path + ".html"
    info = write_report(path, out)
    size = os.path.getsize(out)
    os.remove(out)
    return info["rows"], size


STEPS = {"baseline: for line in f: json.loads(line)": step_baseline, "inspect LOG": step_inspect,
         "inspect --reason near --url '*/news/*' --min-similarity 0.8": step_inspect_filtered,
         "report LOG -o r.html (20,000 rows)": step_report}


def _child(fn, path, queue):
    # imports are not what is timed: every step pays them before the clock starts

    start_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    result = fn(path)
    seconds = time.perf_counter() - t0
    queue.put((seconds, start_rss, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, result))


def measure(fn, path):
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(fn, path, queue))
    proc.start()
    got = queue.get()
    proc.join()
    return got


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", default="1000000", help="comma-separated log sizes (default 1000000)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--text", action="store_true", help="lines carry a ~2.2 KB `text` (DEDUP_STORE_TEXT)")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="where the synthetic logs go (kept for reruns)")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.lines.split(",")]
    print(f"{'lines':>9} {'MiB':>6}  {'step':<60} {'median s':>8} {'x base':>6} {'RSS MiB at start':>16} "
          f"{'peak':>6}")
    for lines in sizes:
        path = os.path.join(args.dir, f"droplog-bench-{lines}{'-text' if args.text else ''}.jsonl")
        if not os.path.exists(path):
            t0 = time.perf_counter()
            generate(path + ".part", lines, args.text)
            os.replace(path + ".part", path)
            print(f"# wrote {path} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        mib = os.path.getsize(path) / 2**20
        base = None
        for name, fn in STEPS.items():
            runs = [measure(fn, path) for _ in range(args.repeat)]
            median = statistics.median(r[0] for r in runs)
            start, rss = max(r[1] for r in runs), max(r[2] for r in runs)
            base = base or median
            print(f"{lines:>9,} {mib:>6.0f}  {name:<60} {median:>8.2f} {median / base:>6.2f} {start:>16.0f} "
                  f"{rss:>6.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
