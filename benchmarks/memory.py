"""Memory of a long crawl with the defaults: the crawler's and each worker's RSS as pages go by.

    python benchmarks/memory.py [--pages 100000] [--every 10000]

A page server in this process makes page i from real page i mod N (../shared/data, or the bundled
demo pages): every paragraph of it gets a sentence drawn for page i from the human texts, so every
page is extracted, none is a byte-identical copy and most are new pages, kept (the index grows). A
`scrapy crawl pages` with the add-on's defaults (workers: one a core) fetches them from 127.0.0.1;
every `--every` pages served, this process reads the memory of the crawler and of its worker
processes from /proc (their own, RssAnon; and the crawler's mapped file pages, RssFile). Prints a table; flat rows mean nothing grows with the pages crawled.
Scrapy's own request fingerprints (its duplicate filter) grow about 100 bytes a URL.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from pages import aeb_gold, real_pages  # noqa: E402


def sentences() -> list[bytes]:
    """Sentences of 8+ words of the article-extraction-benchmark's human texts, HTML-escaped."""
    import html as htmllib

    gold = aeb_gold()
    if not gold:
        return [b"A sentence of its own for this page, drawn at random from a few."]
    out = [s.strip() for g in gold.values() for s in g["articleBody"].split(". ") if len(s.split()) >= 8]
    return [htmllib.escape(s).encode() + b"." for s in out]


def page(html: bytes, i: int, pool: list[bytes]) -> bytes:
    """Real page i mod N, each paragraph with a sentence of page i's own."""
    import random
    import re

    rnd = random.Random(i)
    return re.sub(rb"(?i)</p>", lambda m: b" " + rnd.choice(pool) + m.group(0), html)


class Pages:
    def __init__(self, pages: list[bytes]):
        self.pages, self.served, self.lock = pages, 0, threading.Lock()
        self.pool = sentences()

    def handler(self):
        pages = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802
                try:
                    i = int(self.path.rsplit("/", 1)[-1])
                except ValueError:
                    self.send_error(404)
                    return
                body = page(pages.pages[i % len(pages.pages)], i, pages.pool)
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                with pages.lock:
                    pages.served += 1

            def log_message(self, *args):
                pass

        return Handler


def rss_mb(pid: int, field: str = "RssAnon") -> float:
    """A process's resident memory of one kind (MB): RssAnon is its own (the heap); RssFile the
    pages of mapped files it touched (the LMDB index, shared page cache that the kernel can drop)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=100_000)
    ap.add_argument("--every", type=int, default=10_000)
    args = ap.parse_args(argv)
    source = Pages(real_pages(10_000, distinct=True))
    server = ThreadingHTTPServer(("127.0.0.1", 0), source.handler())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    with tempfile.TemporaryDirectory() as tmp:
        urls = os.path.join(tmp, "urls.txt")
        with open(urls, "w") as fh:
            fh.writelines(f"{base}/p/{i}\n" for i in range(args.pages))
        log = open(os.path.join(tmp, "crawl.log"), "w")
        crawl = subprocess.Popen([sys.executable, "-m", "scrapy", "crawl", "pages", "-a", f"urls={urls}",
                                  "-s", f"DEDUP_DIR={os.path.join(tmp, 'idx')}", "-s", "ROBOTSTXT_OBEY=0",
                                  "-s", "LOG_LEVEL=INFO", "-s", "CONCURRENT_REQUESTS=16"],
                                 cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        rows, t0, next_at = [], time.time(), args.every
        print(f"{len(source.pages)} real pages, {args.pages} URLs; sampling every {args.every} pages served", flush=True)
        while crawl.poll() is None:
            time.sleep(0.5)
            if source.served >= next_at:
                workers = children(crawl.pid)
                rows.append((source.served, time.time() - t0, rss_mb(crawl.pid), rss_mb(crawl.pid, "RssFile"),
                             [rss_mb(w) for w in workers]))
                print(f"  {source.served} pages, {rows[-1][2]:.0f} MB", flush=True)
                next_at += args.every
        log.close()
        stats = open(os.path.join(tmp, "crawl.log")).read()
    server.shutdown()
    print(f"\nmemory of a crawl with the defaults, {args.pages} pages from 127.0.0.1 (exit code {crawl.returncode})")
    print(f"{'pages served':>13} {'seconds':>8} {'pages/s':>8} {'crawler own MB':>15} {'index mapped MB':>16} "
          f"{'workers own MB':>16}")
    for served, secs, crawler, mapped, workers in rows:
        print(f"{served:>13} {secs:>8.0f} {served / secs:>8.1f} {crawler:>15.0f} {mapped:>16.0f} "
              f"{' '.join(f'{w:.0f}' for w in workers):>16}")
    print("own: RssAnon, the process's heap; index mapped: RssFile, pages of the LMDB file (and libraries) it "
          "touched, page cache the kernel can take back")
    for key in ("dedup/checked", "dedup/kept", "dedup/dropped", "dedup/fast/same_bytes"):
        found = [line for line in stats.splitlines() if f"'{key}'" in line]
        if found:
            print("  " + found[-1].strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
