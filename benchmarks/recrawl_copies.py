"""A recrawl of a site where a third of the URLs are copies: what crawl 2 downloads when the
dropped copies' validators are kept (a 304 drops a known copy again, no body), against the same
crawl with only the kept URLs' validators (as before: every copy downloaded and extracted again).

    python benchmarks/recrawl_copies.py [--pages 300] [--runs 3]

N distinct real pages (benchmarks/pages.py), and for every second page a copy under another URL
(half of them tracking-parameter URLs, half another path with one byte more), served by
crawler_dedup.demo.server with validators honoured; `scrapy crawl pages` twice over one index,
each row in a fresh folder. The "kept URLs only" row deletes the copies' entries between the two
crawls, which is what the index held before this release. Prints bytes downloaded (the server's
count of body bytes sent), 304s and seconds of crawl 2, medians of --runs.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from pages import real_pages  # noqa: E402

STAT = re.compile(r"'(dedup/[a-z_/]+)': (\d+)")


def build(folder: str, n: int) -> tuple[list[str], int]:
    """The site's files and its URL paths (originals first, then the copies); the copies' count."""
    pages = real_pages(n, distinct=True)
    paths = []
    for i, html in enumerate(pages):
        with open(os.path.join(folder, f"p{i}.html"), "wb") as fh:
            fh.write(html)
        paths.append(f"p{i}.html")
    copies = 0
    for i in range(0, n, 2):
        if copies % 2:
            with open(os.path.join(folder, f"copy-p{i}.html"), "wb") as fh:
                fh.write(pages[i] + b"\n")
            paths.append(f"copy-p{i}.html")
        else:
            paths.append(f"p{i}.html?utm_source=newsletter&utm_medium=email")
        copies += 1
    return paths, copies


def crawl(base: str, paths: list[str], d: str, name: str) -> dict:
    urls = os.path.join(d, "urls.txt")
    with open(urls, "w", encoding="utf-8") as fh:
        fh.writelines(f"{base}/{p}\n" for p in paths)
    cmd = [sys.executable, "-m", "scrapy", "crawl", "pages", "-a", f"urls={urls}", "-s", f"DEDUP_DIR={d}/index",
           "-s", "ROBOTSTXT_OBEY=0", "-s", "LOG_LEVEL=INFO", "-s", "HTTPCACHE_ENABLED=False",
           "-o", f"{d}/items-{name}.jsonl"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"crawl {name} failed: {proc.stderr[-2000:]}")
    return {"seconds": time.perf_counter() - t0, "stats": {k: int(v) for k, v in STAT.findall(proc.stderr)}}


def forget_copies(index: str) -> int:
    """Delete the dropped copies' entries: the index as the release before kept it."""
    from crawler_dedup import Deduplicator
    from crawler_dedup.core.index.fetches import is_copy_entry
    from crawler_dedup.core.index.integrity import _rows

    with Deduplicator(dir=index) as dedup:
        def drop(txn) -> int:
            keys = [bytes(k) for k, v in _rows(txn.raw, "fetches") if is_copy_entry(v)]
            for key in keys:
                txn.fetch_delete(key)
            return len(keys)
        return dedup.index.write(drop)


def one_run(n: int, revalidate: bool) -> dict:
    from crawler_dedup.demo.server import PageServer

    with tempfile.TemporaryDirectory() as tmp:
        site = os.path.join(tmp, "site")
        os.makedirs(site)
        paths, copies = build(site, n)
        with PageServer(site, validators="honour") as server:
            crawl(server.base_url, paths, tmp, "1")
            forgotten = 0 if revalidate else forget_copies(os.path.join(tmp, "index"))
            before = dict(server.served)
            second = crawl(server.base_url, paths, tmp, "2")
            after = server.served
        return {"urls": len(paths), "copies": copies, "forgotten": forgotten, "seconds": second["seconds"],
                "bytes": after.get("bytes", 0) - before.get("bytes", 0),
                "304s": after.get(304, 0) - before.get(304, 0), "stats": second["stats"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=300, help="distinct pages (a copy is added for every second one)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    rows = {"copies revalidated (this release)": True, "kept URLs only (as before)": False}
    got: dict[str, list[dict]] = {name: [] for name in rows}
    for _ in range(args.runs):
        for name, revalidate in rows.items():
            got[name].append(one_run(args.pages, revalidate))
    first = got[next(iter(rows))][0]
    print(f"crawl 2 of {first['urls']} URLs ({first['copies']} of them copies of other URLs), "
          f"median of {args.runs} runs")
    print(f"{'':<36} {'downloaded MB':>14} {'x':>6} {'304s':>6} {'dropped':>8} {'seconds':>8}")
    base = statistics.median(r["bytes"] for r in got["kept URLs only (as before)"])
    for name, runs in got.items():
        mb = statistics.median(r["bytes"] for r in runs)
        print(f"{name:<36} {mb / 1e6:>14.2f} {mb / base if base else 0:>6.2f} "
              f"{statistics.median(r['304s'] for r in runs):>6.0f} "
              f"{statistics.median(r['stats'].get('dedup/dropped', 0) for r in runs):>8.0f} "
              f"{statistics.median(r['seconds'] for r in runs):>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
