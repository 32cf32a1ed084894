"""Extraction workers (crawler_dedup/workers/): `python -m crawler_dedup.workers` processes fed
over pipes, restarted when one dies or hangs, gone when the crawl ends; and a crawl script with
no `__main__` guard runs once with them on (multiprocessing's spawn ran it in every worker)."""

import os
import subprocess
import sys
import time

import pytest

from crawler_dedup.exceptions import WorkerDied
from crawler_dedup.workers import WorkerPool

from .conftest import ROOT, dedup_stats


def _pid() -> int:
    return os.getpid()


def _die() -> None:
    os._exit(3)


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def _fail() -> None:
    raise ValueError("bad page")


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as fh:  # a zombie waiting for its parent is gone too
        return fh.read().rsplit(")", 1)[1].split()[0] == "Z"


def test_jobs_run_in_worker_processes_that_are_gone_after_shutdown():
    pool = WorkerPool(2)
    try:
        pids = {pool.submit(_pid).result(30) for _ in range(20)}
        assert pids <= set(pool.pids()) and os.getpid() not in pids and len(set(pool.pids())) == 2
    finally:
        workers = pool.pids()
        pool.shutdown()
    assert all(_gone(pid) for pid in workers)


def test_a_worker_that_dies_or_hangs_fails_its_job_only_and_is_started_again():
    pool = WorkerPool(1, job_seconds=2)
    try:
        first = pool.submit(_pid).result(30)
        with pytest.raises(WorkerDied, match="exit code 3"):
            pool.submit(_die).result(30)
        second = pool.submit(_pid).result(30)
        assert second != first and pool.restarts == 1  # a new process took the next job
        with pytest.raises(WorkerDied, match="no answer within 2 s"):
            pool.submit(_sleep, 30).result(30)
        assert pool.submit(_sleep, 0.01).result(30) == 0.01 and pool.restarts == 2
        with pytest.raises(Exception, match="ValueError: bad page"):  # the function failed, not the worker
            pool.submit(_fail).result(30)
        assert pool.submit(_pid).result(30) == pool.pids()[0] and pool.restarts == 2
    finally:
        pool.shutdown()


SCRIPT = """
import os, sys
with open(sys.argv[2], "a") as fh:  # one line each time this file runs, in any process
    fh.write(f"{os.getpid()}\\n")
from scrapy.crawler import CrawlerProcess
from crawler_dedup.spider import PagesSpider

process = CrawlerProcess({"ADDONS": {"crawler_dedup.addon.DedupAddon": 0}, "DEDUP_DIR": sys.argv[3],
                          "DEDUP_WORKERS": 2, "ROBOTSTXT_OBEY": False, "LOG_LEVEL": "INFO"})
process.crawl(PagesSpider, urls=sys.argv[1])
process.start()
"""


def test_a_crawl_script_without_a_main_guard_runs_once_with_workers_on(tmp_path, articles, serve):
    site = tmp_path / "site"
    site.mkdir()
    for i, (html, _) in enumerate(articles[:3]):
        (site / f"a{i}.html").write_bytes(html)
    (site / "copy.html").write_bytes(articles[0][0])
    base = serve(str(site)).base_url
    urls = tmp_path / "urls.txt"
    urls.write_text("".join(f"{base}/{n}\n" for n in ("a0.html", "a1.html", "a2.html", "copy.html")))
    script, marker = tmp_path / "crawl.py", tmp_path / "ran.txt"
    script.write_text(SCRIPT)  # no `if __name__ == "__main__":`
    proc = subprocess.run([sys.executable, str(script), str(urls), str(marker), str(tmp_path / "idx")],
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=180,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(marker.read_text().split()) == 1  # the script ran once: not again in each worker
    stats = dedup_stats(proc.stderr)
    assert stats["dedup/checked"] == 4 and stats["dedup/dropped/exact"] == 1
