"""A worker process: `python -m crawler_dedup.workers`, started by pool.WorkerPool.

It imports crawler-dedup and nothing of the crawl that started it (a script that runs a
CrawlerProcess without a `__main__` guard is not run again here, as multiprocessing's spawn
would), then answers jobs on its standard input until that closes: each message is 4 bytes of
length and a pickle, a job `(module, function, args)` and an answer `(ok, result or error text)`.
"""

from __future__ import annotations

import importlib
import os
import pickle
import struct
import sys
from typing import Any

_LEN = struct.Struct(">I")


def read_message(fd: int) -> object | None:
    """One message from `fd`, or None at its end."""
    head = _read_exactly(fd, _LEN.size)
    if head is None:
        return None
    body = _read_exactly(fd, _LEN.unpack(head)[0])
    if body is None:
        return None
    return pickle.loads(body)


def write_message(fd: int, message: object) -> None:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    data = memoryview(_LEN.pack(len(body)) + body)
    while data:
        written = os.write(fd, data)
        data = data[written:]


def _read_exactly(fd: int, n: int) -> bytes | None:
    parts, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


WATCH_SECONDS = 0.1  # how often a worker looks whether the crawl that started it is still there


def _die_with(parent: int) -> None:
    """Exit as soon as the process that started this one is gone, even killed with SIGKILL (its
    pipe then closes only when this one next reads, and a page's job may take seconds). A thread
    that polls the parent: portable, and unlike PR_SET_PDEATHSIG not tied to the starting thread."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(WATCH_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="crawler-dedup-parent-watch", daemon=True).start()


def main() -> int:
    try:
        return _serve()
    except (BrokenPipeError, ConnectionResetError, KeyboardInterrupt):
        return 0  # the crawl is gone or stopping: nothing to answer, nothing to report


def _serve() -> int:
    # the crawl's pid, as the pool gave it: a crawl killed before this line ran is noticed too
    _die_with(int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else os.getppid())
    # the answers go to the original standard output; anything else printed goes to stderr, so a
    # library that prints cannot break the stream
    out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    inp = sys.stdin.buffer.fileno()
    hello = read_message(inp)
    if not isinstance(hello, dict):
        return 2
    for path in reversed(hello.get("sys_path", [])):  # where the crawl imports from (a Verifier of its own)
        if path not in sys.path:
            sys.path.insert(0, path)
    for warm in hello.get("warm", ()):  # the imports that take a second, before the first page
        importlib.import_module(warm)
    functions: dict[tuple[str, str], Any] = {}
    while True:
        job = read_message(inp)
        if job is None:
            return 0
        try:
            module: str = job[0]  # type: ignore[index]
            name: str = job[1]  # type: ignore[index]
            args: tuple = job[2]  # type: ignore[index]
            fn: Any = functions.get((module, name))
            if fn is None:
                fn = functions[(module, name)] = getattr(importlib.import_module(module), name)
            answer: tuple = (True, fn(*args))
        except Exception as exc:  # the page is kept and the failure counted in the crawl
            answer = (False, f"{type(exc).__name__}: {exc}")
        try:
            write_message(out, answer)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            write_message(out, (False, f"the result could not be sent back: {exc}"))

