"""The pool: `python -m crawler_dedup.workers` processes (process.py) fed over pipes.

Not multiprocessing's spawn: that runs the main module of the crawl again in every worker, so a
script that builds a CrawlerProcess without an `if __name__ == "__main__":` guard would start a
crawl in each. Each worker has a thread here that hands it one job at a time and waits for the
answer; a worker that dies (or takes longer than a page may) is killed and started again, and
its page fails (kept and counted by the caller), so a hostile page costs one restart.
"""

from __future__ import annotations

import logging
import os
import pickle
import queue
import select
import subprocess
import sys
import threading
from concurrent.futures import Future
from typing import Any, Callable

from .process import _LEN, write_message
from ..exceptions import WorkerDied

logger = logging.getLogger(__name__)

JOB_SECONDS = 120.0  # a page whose extraction takes longer kills its worker (which is started again)
WARM = ("trafilatura", "crawler_dedup.core.dedup")  # imported before the first page


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class _Worker:
    def __init__(self, pool: "WorkerPool", number: int):
        self.pool, self.number = pool, number
        self.proc: subprocess.Popen | None = None
        self.thread = threading.Thread(target=self._run, name=f"crawler-dedup-worker-{number}", daemon=True)

    def start_process(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "crawler_dedup.workers", str(os.getpid())], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            start_new_session=True,  # Ctrl-C in a terminal stops the crawl, which then stops its workers
        )
        write_message(self.proc.stdin.fileno(), {"sys_path": list(sys.path), "warm": WARM})  # type: ignore[union-attr]

    def _run(self) -> None:
        """Jobs one at a time until None. Never raises: every job's future gets an answer."""
        while True:
            job = self.pool.jobs.get()
            if job is None:
                break
            future, message = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                if self.proc is None or self.proc.poll() is not None:
                    self.start_process()
                future.set_result(self._ask(message))
            except _JobFailed as exc:  # the function raised: the worker itself is fine
                future.set_exception(exc)
            except Exception as exc:  # died, timed out, a broken pipe, an answer that did not unpickle
                future.set_exception(exc if isinstance(exc, WorkerDied) else WorkerDied(f"{type(exc).__name__}: {exc}"))
                self._restart(str(exc))
        self.stop()

    def _ask(self, message) -> Any:
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        write_message(self.proc.stdin.fileno(), message)
        fd = self.proc.stdout.fileno()
        head = self._read(fd, _LEN.size)
        ok, value = pickle.loads(self._read(fd, _LEN.unpack(head)[0]))
        if not ok:
            raise _JobFailed(value)
        return value

    def _read(self, fd: int, n: int) -> bytes:
        parts, left = [], n
        while left:
            ready, _, _ = select.select([fd], [], [], self.pool.job_seconds)
            if not ready:
                raise WorkerDied(f"no answer within {self.pool.job_seconds:.0f} s")
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                code = self.proc.wait(5) if self.proc is not None else None
                raise WorkerDied(f"the worker process ended (exit code {code})")
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts)

    def _restart(self, why: str) -> None:
        """Kill the worker; the next job starts a new one (a failed start fails that job only)."""
        self.stop(kill=True)
        self.pool.restarts += 1
        if self.pool.restarts == 1:
            logger.warning("crawler-dedup: a worker process failed (%s); it is started again, and its page is kept "
                           "(further restarts are only counted)", why)

    def stop(self, kill: bool = False) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            if kill:
                proc.kill()
            elif proc.stdin is not None:
                proc.stdin.close()  # the worker ends at the end of its input
            proc.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        finally:
            for stream in (proc.stdin, proc.stdout):
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass


class _JobFailed(Exception):
    """The function raised in the worker (the worker itself is fine)."""


class WorkerPool:
    """`count` worker processes; `submit(fn, *args)` runs a module-level function in one of them
    and returns a concurrent.futures.Future, as ProcessPoolExecutor does."""

    def __init__(self, count: int, job_seconds: float = JOB_SECONDS):
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.job_seconds = job_seconds
        self.restarts = 0
        self.workers = [_Worker(self, n) for n in range(count)]
        for worker in self.workers:
            worker.start_process()
            worker.thread.start()

    def submit(self, fn: Callable, *args) -> Future:
        future: Future = Future()
        self.jobs.put((future, (fn.__module__, fn.__name__, args)))
        return future

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        """Stop the workers: queued jobs are cancelled with `cancel_futures`, else done first."""
        if cancel_futures:
            while True:
                try:
                    job = self.jobs.get_nowait()
                except queue.Empty:
                    break
                if job is not None:
                    job[0].cancel()
        for _ in self.workers:
            self.jobs.put(None)
        if wait:
            for worker in self.workers:
                worker.thread.join(30)

    def pids(self) -> list[int]:
        return [w.proc.pid for w in self.workers if w.proc is not None]

