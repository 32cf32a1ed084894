"""Crash safety: crawls SIGKILLed at random moments over one DEDUP_DIR, restarted, checked.

    python benchmarks/killtest.py [--kills 50] [--groups 120] [--seed 1] [--keep DIR]

A local server (127.0.0.1, a thread of this harness) serves real pages (../shared/data, else the bundled
demo pages), each under several URLs: the page itself, a tracking-parameter URL (the same bytes:
the fast path) and a variant whose markup differs outside the text (the same text: an exact
drop). Each run crawls a random sample of those URLs with the defaults (the add-on in ADDONS),
rotating through three set-ups: extraction in the crawler's thread and a commit a page; workers
(DEDUP_WORKERS=auto) and group commit (DEDUP_COMMIT_DELAY=0.05, DEDUP_COMMIT_BATCH=8); workers and
the default commits. A run is SIGKILLed (the crawler process only, as the OOM killer or `kill -9`
does) at a random moment of its expected length, until --kills runs were killed. The spider's item pipeline writes each stored
item's URL with one O_APPEND write, so the harness knows what reached storage.

After every kill:
- the index opens and `crawler-dedup index verify` finds it whole;
- no worker process outlives its crawler by more than 1 s, and no traceback follows the kill;
- every page stored is in the index (its URL has a kept entry), unless extraction skipped it;
- every drop-log line names a kept page that is in the index;
- no two URLs of one group are kept (the restarted crawls dedup against all that was committed).
At the end one full crawl of every URL runs to completion, then: every URL was stored or has a
drop-log line, and every kept page of the index reached storage (a kept page whose crawl was
killed before its item was stored is passed on again: `dedup/unchanged/resent`). The drop log's
reader then meets a torn last line (cut here by hand, as a power cut leaves it) and says so.
Prints a table: kills, pages decided, and each kind of loss (all must be 0).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pages import real_pages  # noqa: E402  (the shared data's pages, else the demo's)

SPIDER = '''
import os

from crawler_dedup.spider import PagesSpider


class Store:
    """Writes each stored item's URL with one O_APPEND write: what reached storage before a kill."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler.settings.get("KILLTEST_STORED"))

    def process_item(self, item):
        os.write(self.fd, (item["url"] + "\\t" + ("1" if item["indexed"] else "0") + "\\n").encode())
        return item


class KillSpider(PagesSpider):  # its URL file and its order; what reached storage is written down
    name = "killtest"
    custom_settings = {**PagesSpider.custom_settings, "ADDONS": {"crawler_dedup.addon.DedupAddon": 0},
                       "ITEM_PIPELINES": {__name__ + ".Store": 900},
                       "ROBOTSTXT_OBEY": False, "LOG_LEVEL": "INFO", "TELNETCONSOLE_ENABLED": False}

    def parse(self, response):
        yield {"url": response.url, "indexed": response.meta.get("dedup_fingerprint") is not None}
'''

SETUPS = (
    ("in the crawler's thread, a commit a page", {"DEDUP_WORKERS": "0", "DEDUP_COMMIT_DELAY": "0"}),
    ("workers, group commit of up to 8", {"DEDUP_WORKERS": "auto", "DEDUP_COMMIT_DELAY": "0.05",
                                          "DEDUP_COMMIT_BATCH": "8"}),
    ("workers, default commits", {"DEDUP_WORKERS": "auto"}),
)


def build_site(folder: str, groups: int) -> tuple[dict[str, int], list[str]]:
    """Files for `groups` real pages; (URL path -> group, paths)."""
    os.makedirs(folder, exist_ok=True)
    group_of: dict[str, int] = {}
    for g, page in enumerate(real_pages(groups, distinct=True)):
        with open(os.path.join(folder, f"p{g}.html"), "wb") as fh:
            fh.write(page)
        # the same text in other markup: a comment and a script the extraction never sees
        variant = page.replace(b"</head>", b"<script>var v=%d</script><!-- variant --></head>" % g, 1)
        if variant == page:
            variant = b"<!-- variant -->" + page
        with open(os.path.join(folder, f"v{g}.html"), "wb") as fh:
            fh.write(variant)
        for path in (f"/p{g}.html", f"/p{g}.html?utm_source=news&utm_medium=feed", f"/v{g}.html"):
            group_of[path] = g
    return group_of, sorted(group_of)


class Harness:
    def __init__(self, work: str, groups: int, seed: int, validators: str = "honour"):
        from crawler_dedup.demo.server import PageServer

        self.work, self.rnd = work, random.Random(seed)
        self.dir = os.path.join(work, "idx")
        self.stored_path = os.path.join(work, "stored.txt")
        self.group_of, self.paths = build_site(os.path.join(work, "site"), groups)
        # (honour: revisits are conditional requests, and a 304 is handed on from the kept copy)
        self.server = PageServer(os.path.join(work, "site"), validators=validators).start()
        self.base = self.server.base_url
        self.spider = os.path.join(work, "killspider.py")
        with open(self.spider, "w", encoding="utf-8") as fh:
            fh.write(SPIDER)
        self.rows: list[dict] = []
        self.losses = {"index does not open": 0, "index verify fails": 0, "workers left running": 0,
                       "killed runs with a traceback": 0,
                       "stored, not in the index": 0, "drop line, kept page not in the index": 0,
                       "one group kept twice": 0}

    def url(self, path: str) -> str:
        return self.base + path

    def group(self, url: str) -> int:
        return self.group_of[url[len(self.base):]]

    def crawl(self, paths: list[str], settings: dict, kill_after: float | None, log: str) -> dict:
        urls = os.path.join(self.work, "urls.txt")
        with open(urls, "w", encoding="utf-8") as fh:
            fh.writelines(self.url(p) + "\n" for p in paths)
        args = [sys.executable, "-m", "scrapy", "runspider", self.spider, "-a", f"urls={urls}",
                "-s", f"DEDUP_DIR={self.dir}", "-s", f"KILLTEST_STORED={self.stored_path}",
                "-s", f"LOG_FILE={log}", "-s", "DEDUP_CLEAN_REQUESTS=False"]  # (each URL counted as asked)
        for name, value in settings.items():
            args += ["-s", f"{name}={value}"]
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        t0 = time.monotonic()
        proc = subprocess.Popen(args, cwd=self.work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        killed = False
        try:
            proc.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)  # the crawler only: its workers must notice by themselves
            proc.wait()
            killed = True
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if not killed and proc.returncode != 0:
            raise SystemExit(f"a crawl failed (exit {proc.returncode}):\n{err[-3000:]}")
        return {"seconds": time.monotonic() - t0, "killed": killed, "pid": proc.pid, "stderr": err}

    def workers_left(self, crawler_pid: int) -> int:
        """Worker processes whose crawler is gone, still running 1 s after the kill (they watch
        their parent every 0.1 s)."""
        deadline = time.monotonic() + 1
        while True:
            left = []
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as fh:
                        cmd = fh.read().split(b"\0")
                    with open(f"/proc/{pid}/stat", "rb") as fh:
                        ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
                if b"crawler_dedup.workers" in cmd and ppid in (crawler_pid, 1):
                    left.append(int(pid))
            if not left or time.monotonic() > deadline:
                return len(left)
            time.sleep(0.2)

    # -- checks ------------------------------------------------------------------------------
    def stored(self) -> list[tuple[str, bool]]:
        if not os.path.exists(self.stored_path):
            return []
        out = []
        with open(self.stored_path, encoding="utf-8") as fh:
            for line in fh:
                if line.endswith("\n") and "\t" in line:
                    url, indexed = line.rstrip("\n").split("\t")
                    out.append((url, indexed == "1"))
        return out

    def drop_lines(self) -> list[dict]:
        from crawler_dedup.droplog import read_droplog

        path = os.path.join(self.dir, "droplog.jsonl")
        return list(read_droplog(path)) if os.path.exists(path) else []

    def check(self) -> dict:
        """The index after a run: what it keeps, and each loss found."""
        from crawler_dedup.cli import main as cli

        found = dict.fromkeys(self.losses, 0)
        if not os.path.exists(os.path.join(self.dir, "data.mdb")):  # killed before the crawl made it
            return {"kept": set(), "found": found}
        try:
            from crawler_dedup.tools.indexes import open_index

            index = open_index(self.dir, readonly=True)
        except Exception as exc:  # noqa: BLE001 - any failure to open is the finding
            print(f"  the index does not open: {exc}", file=sys.stderr)
            found["index does not open"] += 1
            return {"kept": set(), "found": found}
        try:
            kept: dict[str, int] = {}

            from crawler_dedup.droplog import kept_now

            lines = self.drop_lines()
            # a kept page replaced by its clean URL (a superseded line, and storage told to remove
            # it): the drops that named it name that URL's page now
            now = kept_now(lines)
            replaced = {line["url"] for line in lines if line.get("reason") == "superseded"}

            def read(txn):
                for doc in index.scan(txn):
                    kept[doc.url] = doc.doc_id
                stored = [url for url, indexed in self.stored()
                          if indexed and index.by_url(txn, url) is None and url not in replaced]
                targets = [line["duplicate_of"] for line in lines
                           if line.get("duplicate_of") and index.by_url(txn, now(line["duplicate_of"])) is None]
                return stored, targets

            missing, dangling = index.read(read)
        finally:
            index.store.close()
        if cli(["index", "verify", self.dir, "--quiet"]) != 0:
            found["index verify fails"] += 1
        for url in missing:
            found["stored, not in the index"] += 1
            print(f"  stored, not in the index: {url}", file=sys.stderr)
        for target in dangling:
            found["drop line, kept page not in the index"] += 1
            print(f"  dropped as a copy of {target}, which is not in the index", file=sys.stderr)
        by_group: dict[int, list[str]] = {}
        for url in kept:
            if url and url.startswith(self.base):
                by_group.setdefault(self.group(url), []).append(url)
        for g, urls in by_group.items():
            if len(urls) > 1:
                found["one group kept twice"] += 1
                print(f"  group {g} kept {len(urls)} times: {urls}", file=sys.stderr)
        return {"kept": set(kept), "found": found}

    def run(self, kills: int, sample: int) -> int:
        setups_killed = {name: 0 for name, _ in SETUPS}
        lengths = {name: None for name, _ in SETUPS}
        # each set-up's length for a sample, measured on a scratch index (start-up included)
        for name, settings in SETUPS:
            scratch = self.dir
            self.dir = os.path.join(self.work, "scratch")
            got = self.crawl(self.rnd.sample(self.paths, min(sample, len(self.paths))), settings, None,
                             os.path.join(self.work, "scratch.log"))
            lengths[name] = got["seconds"]
            shutil.rmtree(self.dir)
            self.dir = scratch
        os.remove(self.stored_path)
        print("a run's length without a kill: " + ", ".join(f"{n}: {s:.1f}s" for n, s in lengths.items()),
              file=sys.stderr)
        i = 0
        while sum(setups_killed.values()) < kills and i < 3 * kills:  # a run may end before its kill
            name, settings = SETUPS[i % len(SETUPS)]
            paths = self.rnd.sample(self.paths, min(sample, len(self.paths)))
            at = self.rnd.uniform(0.3, 0.9 * lengths[name])
            got = self.crawl(paths, settings, at, os.path.join(self.work, f"run{i}.log"))
            setups_killed[name] += got["killed"]
            if got["killed"]:
                left = self.workers_left(got["pid"])
                if left:
                    self.losses["workers left running"] += 1
                    print(f"  run {i}: {left} worker(s) still running after the kill", file=sys.stderr)
                if "Traceback" in got["stderr"]:  # (a worker's, once its crawl is gone: BrokenPipeError)
                    self.losses["killed runs with a traceback"] += 1
                    print(f"  run {i}: a traceback after the kill:\n{got['stderr'][-1500:]}", file=sys.stderr)
            found = self.check()["found"]
            for k, n in found.items():
                self.losses[k] += n
            print(f"run {i + 1} ({name}): {'killed' if got['killed'] else 'finished before'} at {at:.2f}s, "
                  f"{sum(found.values())} problems; {sum(setups_killed.values())}/{kills} kills", file=sys.stderr)
            i += 1
        runs = i
        # the last crawl: every URL, to the end
        self.crawl(list(self.paths), SETUPS[2][1], None, os.path.join(self.work, "final.log"))
        after = self.check()
        for k, n in after["found"].items():
            self.losses[k] += n
        stored = {url for url, _ in self.stored()}
        dropped = {line.get("url") for line in self.drop_lines()}
        every = {self.url(p) for p in self.paths}
        never = sorted(every - stored - dropped)
        undelivered = sorted(u for u in after["kept"] if u and u not in stored
                             and not any(s.startswith(u + "?") for s in stored))
        torn = self.torn_line()
        print()
        print(f"{'runs, then one to the end':<52} {runs:>8}")
        print(f"{'kills (SIGKILL of the crawler)':<52} {sum(setups_killed.values()):>8}")
        for name, n in setups_killed.items():
            print(f"{'  ' + name:<52} {n:>8}")
        decided = len(self.stored()) + len(self.drop_lines())  # (the torn line is not read)
        print(f"{'pages decided (stored, or dropped with a line), all runs':<52} {decided:>8}")
        print(f"{'revisits the server answered 304 (conditional requests)':<52} {self.server.served.get(304, 0):>8}")
        print(f"{'URLs / groups of one content':<52} {len(self.paths):>5} / {len(set(self.group_of.values()))}")
        print(f"{'kept pages in the index at the end':<52} {len(after['kept']):>8}")
        for k, n in self.losses.items():
            print(f"{k:<52} {n:>8}")
        print(f"{'URLs never stored nor dropped with a line':<52} {len(never):>8}")
        print(f"{'kept pages never stored':<52} {len(undelivered):>8}")
        print(f"{'torn last drop-log line reported by inspect':<52} {'yes' if torn else 'NO':>8}")
        for u in never[:5] + undelivered[:5]:
            print(f"  {u}")
        bad = (sum(self.losses.values()) + len(never) + len(undelivered) + (not torn)
               + (sum(setups_killed.values()) < kills))
        print("\nall checks hold" if not bad else f"\n{bad} problems")
        return 1 if bad else 0

    def torn_line(self) -> bool:
        """Cut the drop log's last line in half (as a power cut may leave it): `inspect` must read
        the rest and say the last line is torn."""
        path = os.path.join(self.dir, "droplog.jsonl")
        if not os.path.exists(path):
            return False
        with open(path, "ab") as fh:
            fh.write(b'{"url": "https://cut.example/", "reason": "ne')
        proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "inspect", path], capture_output=True,
                              text=True, cwd=ROOT)
        return proc.returncode == 0 and "torn" in (proc.stdout + proc.stderr)

    def close(self) -> None:
        self.server.stop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--groups", type=int, default=120, help="real pages, each under 3 URLs")
    ap.add_argument("--sample", type=int, default=90, help="URLs a run crawls")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--validators", default="honour", choices=("honour", "none"),
                    help="the server's ETag and Last-Modified: honoured (revisits answered 304) or none")
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (the index, drop log, logs)")
    args = ap.parse_args(argv)
    work = args.keep or tempfile.mkdtemp(prefix="killtest-")
    os.makedirs(work, exist_ok=True)
    harness = Harness(work, args.groups, args.seed, args.validators)
    try:
        return harness.run(args.kills, args.sample)
    finally:
        harness.close()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
