"""`scan --engine spark` on a text archive (JSON lines with text, no HTML: the common case at
scale) against the one-machine `scan --jobs N`: documents/s, the driver's peak memory, the
largest component and the drops that differ, at each size.

    python benchmarks/spark_text.py [--sizes 20000,80000] [--master local[2]] [--jobs 2] [--spark-only]

The archive: distinct documents of 250-400 words drawn from a 20,000-word vocabulary, a tenth
of them followed later by a near copy (3% of its words changed) and a twentieth by an exact copy,
shuffled, under a few hundred hosts. Each engine runs in a process of its own; its peak RSS is the
driver's Python process alone (Spark's JVM is apart: its heap is bounded by spark.driver.memory).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

VOCAB = [f"w{n}" for n in range(20_000)]


def corpus(n: int, path: str, seed: int = 1) -> None:
    rnd = random.Random(seed)
    docs: list[tuple[str, str]] = []
    while len(docs) < n:
        i = len(docs)
        words = rnd.choices(VOCAB, k=rnd.randrange(250, 400))
        docs.append((f"https://host{i % 300}.example/doc/{i}", "\n".join(" ".join(words[j:j + 20])
                                                                       for j in range(0, len(words), 20))))
        r = rnd.random()
        if r < 0.10 and len(docs) < n:
            near = list(words)
            for j in rnd.sample(range(len(near)), max(1, len(near) * 3 // 100)):
                near[j] = rnd.choice(VOCAB)
            docs.append((f"https://mirror{i % 50}.example/{i}", "\n".join(" ".join(near[j:j + 20])
                                                                          for j in range(0, len(near), 20))))
        elif r < 0.15 and len(docs) < n:
            docs.append((f"https://copy{i % 50}.example/{i}", docs[-1][1]))
    rnd.shuffle(docs)
    with open(path, "w", encoding="utf-8") as fh:
        for url, text in docs:
            fh.write(json.dumps({"url": url, "text": text}) + "\n")


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
took = time.monotonic() - t0
# VmHWM: this process's own peak (ru_maxrss keeps the forking parent's peak across exec on Linux)
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
print(json.dumps({{"seconds": took, "rss_mb": hwm / 1024,
                  "pages": s["pages"], "dropped": s["dropped"], "largest": s.get("largest_component"),
                  "stage_seconds": s.get("seconds")}}))
"""


def run(path: str, out: str, spark: bool, master: str, jobs: int) -> dict:
    code = RUN.format(root=ROOT, path=path, out=out, jobs=jobs, spark=spark, master=master)
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=24 * 3600)
    if got.returncode != 0:
        raise SystemExit(got.stderr[-3000:])
    return json.loads(got.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="20000,80000")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--spark-only", action="store_true")
    args = ap.parse_args()
    from crawler_dedup.tools.spark_scan.agree import agreement

    rows = []
    with tempfile.TemporaryDirectory(prefix="spark-text-") as tmp:
        for n in [int(x) for x in args.sizes.split(",")]:
            path = os.path.join(tmp, f"docs-{n}.jsonl")
            corpus(n, path)
            spark = run(path, os.path.join(tmp, f"spark-{n}"), True, args.master, args.jobs)
            local = None if args.spark_only else run(path, os.path.join(tmp, f"local-{n}"), False, args.master,
                                                     args.jobs)
            agree = None if local is None else agreement(os.path.join(tmp, f"local-{n}"), os.path.join(tmp, f"spark-{n}"))
            rows.append((n, spark, local, agree))
            print(f"{n}: spark {spark}\n{' ' * len(str(n))}  local {local}", file=sys.stderr, flush=True)
    print(f"\ntext archive, {args.master} against scan --jobs {args.jobs}; documents/s (whole command, Spark's start-up "
          "included), the driver's peak RSS (Python)")
    print(f"{'documents':>10} {'spark docs/s':>13} {'local docs/s':>13} {'ratio':>6} {'spark RSS MB':>13} "
          f"{'local RSS MB':>13} {'largest':>8} {'drops':>7} {'differ':>7}")
    for n, spark, local, agree in rows:
        s_rate = spark["pages"] / spark["seconds"]
        l_rate = local["pages"] / local["seconds"] if local else float("nan")
        print(f"{n:>10} {s_rate:>13.0f} {l_rate:>13.0f} {s_rate / l_rate:>6.2f} {spark['rss_mb']:>13.0f} "
              f"{(local or {}).get('rss_mb', float('nan')):>13.0f} {spark['largest'] or 0:>8} {spark['dropped']:>7} "
              f"{agree['differ'] if agree else '-':>7}")
    for n, spark, _, _ in rows:
        print(f"{n}: Spark stages (s): {json.dumps(spark['stage_seconds'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
