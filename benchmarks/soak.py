"""Soak: a million pages of synthetic text through one Deduplicator, memory and latency as it goes.

    python benchmarks/soak.py [--pages 1000000] [--every 50000] [--group 8] [--out soak.svg]

Pages are made here: 4-12 paragraphs of 20-60 words drawn from a 60,000-word vocabulary with a
Zipf-like law, on 2,000 sites (so the site lines have work); one page in ten is an earlier page
with 3% of its words replaced (a near-duplicate, dropped) and one in fifty an exact copy at another
URL. They go through `prepare` (tokens, shingles, simhash, sketch, site lines) and `decide_many`
in groups of --group pages, one durable LMDB commit a group, as the crawl's group commit does.
Every --every pages it prints the process's own memory (RssAnon from /proc), the data.mdb size,
and the median and p99 latency of a page over the last interval (its prepare plus its share of
the group's decision and commit), beside the first interval's as a ratio. Writes the same as an
SVG plot (--out). Flat memory and latency ratios near 1.0 are what it is for.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)


def rss_anon_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class Pages:
    """Synthetic pages, made as they are needed (the generator keeps only what copies need)."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        syll = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "se", "pi", "da", "go", "fe", "hu", "ji", "ze"]
        words = set()
        while len(words) < 60_000:
            n = int(self.rng.integers(2, 6))  # (up to 5 syllables: 15**4 alone is under 60,000 words)
            words.add("".join(syll[i] for i in self.rng.integers(0, len(syll), n)))
        self.vocab = np.array(sorted(words))
        weights = 1.0 / np.arange(1, len(self.vocab) + 1) ** 1.05
        self.cdf = np.cumsum(weights) / weights.sum()
        self.recent: list[tuple[str, str]] = []  # the last pages, what copies are made of

    def words(self, n: int) -> np.ndarray:
        return self.vocab[np.searchsorted(self.cdf, self.rng.random(n))]

    def page(self, i: int) -> tuple[str, str, str]:
        """(url, text, kind) of page i: new, near or exact."""
        roll = self.rng.random()
        site = f"https://site{int(self.rng.integers(0, 2000))}.test"
        if self.recent and roll < 0.10:
            _, text = self.recent[int(self.rng.integers(0, len(self.recent)))]
            words = text.split(" ")
            for j in self.rng.integers(0, len(words), max(1, len(words) * 3 // 100)):
                words[j] = str(self.words(1)[0])
            return f"{site}/near/{i}", " ".join(words), "near"
        if self.recent and roll < 0.12:
            _, text = self.recent[int(self.rng.integers(0, len(self.recent)))]
            return f"{site}/copy/{i}", text, "exact"
        paragraphs = [" ".join(self.words(int(self.rng.integers(20, 61)))) for _ in range(int(self.rng.integers(4, 13)))]
        text = "\n".join(paragraphs)
        url = f"{site}/page/{i}"
        self.recent.append((url, text))
        if len(self.recent) > 5000:
            self.recent = self.recent[-2500:]
        return url, text, "new"


def plot(rows: list[dict], path: str) -> None:
    """Two panels, as SVG drawn here (no plotting library needed): memory, and latency."""
    w, h, pad = 720, 240, 50
    xs = [r["pages"] for r in rows]
    xmax = max(xs) or 1

    def panel(y0: int, series: list[tuple[str, list[float], str]], unit: str) -> str:
        top = max(max(v) for _, v, _ in series) * 1.15 or 1
        out = [f'<rect x="{pad}" y="{y0}" width="{w - 2 * pad}" height="{h - 2 * pad}" fill="none" stroke="#999"/>']
        for k in range(5):
            val = top * k / 4
            y = y0 + (h - 2 * pad) * (1 - k / 4)
            out.append(f'<text x="{pad - 6}" y="{y + 4:.0f}" font-size="11" text-anchor="end">'
                       f'{val:.1f}</text>' if top < 10 else
                       f'<text x="{pad - 6}" y="{y + 4:.0f}" font-size="11" text-anchor="end">{val:.0f}</text>')
        out.append(f'<text x="{pad}" y="{y0 - 8}" font-size="12">{unit}</text>')
        for label, values, color in series:
            pts = " ".join(f"{pad + (w - 2 * pad) * x / xmax:.1f},{y0 + (h - 2 * pad) * (1 - v / top):.1f}"
                           for x, v in zip(xs, values))
            out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"/>')
            out.append(f'<text x="{w - pad + 4}" y="{y0 + (h - 2 * pad) * (1 - values[-1] / top) + 4:.0f}" '
                       f'font-size="11" fill="{color}">{label}</text>')
        return "\n".join(out)

    body = [panel(30, [("RSS (anon)", [r["rss"] for r in rows], "#1f77b4")], "MB of the process's own memory"),
            panel(30 + h, [("p50", [r["p50"] for r in rows], "#2ca02c"),
                           ("p99", [r["p99"] for r in rows], "#d62728")], "ms a page")]
    ticks = [f'<text x="{pad + (w - 2 * pad) * x / xmax:.0f}" y="{2 * h + 20}" font-size="11" '
             f'text-anchor="middle">{x // 1000}k</text>' for x in xs[:: max(1, len(xs) // 10)]]
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w + 60}" height="{2 * h + 40}" '
           f'font-family="sans-serif">\n' + "\n".join(body + ticks) + "\n</svg>\n")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(svg)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=1_000_000)
    ap.add_argument("--every", type=int, default=50_000)
    ap.add_argument("--group", type=int, default=8, help="pages a commit (the crawl's group commit)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="soak.svg", help="the plot (SVG)")
    ap.add_argument("--keep", metavar="DIR", help="the index in DIR, kept")
    args = ap.parse_args(argv)

    from crawler_dedup import Deduplicator

    work = args.keep or tempfile.mkdtemp(prefix="soak-")
    pages = Pages(args.seed)
    rows: list[dict] = []
    lat: list[float] = []
    counts = {"keep": 0, "drop": 0, "skipped": 0}
    kinds_dropped = {"near": 0, "exact": 0}
    kinds_seen = {"near": 0, "exact": 0, "new": 0}
    t_start = time.perf_counter()
    t_interval = t_start
    print(f"{'pages':>9} {'kept':>9} {'dropped':>8} {'RSS MB':>7} {'data.mdb MB':>11} {'p50 ms':>7} {'p99 ms':>7} "
          f"{'p50 x':>6} {'p99 x':>6} {'pages/s':>8}", flush=True)
    try:
        with Deduplicator(dir=os.path.join(work, "idx"), workers=0) as d:
            i = 0
            while i < args.pages:
                batch, kinds, times = [], [], []
                for _ in range(min(args.group, args.pages - i)):
                    url, text, kind = pages.page(i)
                    t0 = time.perf_counter()
                    verdict, pending = d.prepare(url, text=text)
                    times.append(time.perf_counter() - t0)
                    kinds.append(kind)
                    batch.append((verdict, pending))
                    i += 1
                t0 = time.perf_counter()
                decided = d.decide_many([p for _, p in batch if p is not None])
                share = (time.perf_counter() - t0) / max(len(decided), 1)
                it = iter(decided)
                for (verdict, pending), kind, spent in zip(batch, kinds, times):
                    v = next(it) if pending is not None else verdict
                    lat.append(spent + (share if pending is not None else 0.0))
                    kinds_seen[kind] += 1
                    if v.skipped is not None:
                        counts["skipped"] += 1
                    elif v.action == "drop":
                        counts["drop"] += 1
                        if kind in kinds_dropped:
                            kinds_dropped[kind] += 1
                    else:
                        counts["keep"] += 1
                if i % args.every < args.group or i == args.pages:
                    if i - (rows[-1]["pages"] if rows else 0) < args.every // 2 and i != args.pages:
                        continue
                    now = time.perf_counter()
                    p50 = 1000 * statistics.median(lat)
                    p99 = 1000 * float(np.percentile(lat, 99))
                    done = i - (rows[-1]["pages"] if rows else 0)
                    row = {"pages": i, "rss": rss_anon_mb(), "disk": os.path.getsize(os.path.join(work, "idx", "data.mdb")) / 2**20,
                           "p50": p50, "p99": p99, "rate": done / (now - t_interval)}
                    rows.append(row)
                    first = rows[0]
                    print(f"{i:>9} {counts['keep']:>9} {counts['drop']:>8} {row['rss']:>7.0f} {row['disk']:>11.0f} "
                          f"{p50:>7.3f} {p99:>7.3f} {p50 / first['p50']:>5.2f}x {p99 / first['p99']:>5.2f}x "
                          f"{row['rate']:>8.0f}", flush=True)
                    lat, t_interval = [], now
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    plot(rows, args.out)
    rss = [r["rss"] for r in rows]
    print(f"\n{args.pages} pages in {time.perf_counter() - t_start:.0f} s; RSS (anon) {min(rss):.0f}-{max(rss):.0f} MB "
          f"(first {rss[0]:.0f}, last {rss[-1]:.0f}); near copies dropped {kinds_dropped['near']}/{kinds_seen['near']}, "
          f"exact copies dropped {kinds_dropped['exact']}/{kinds_seen['exact']}; plot: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
