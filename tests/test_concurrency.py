"""Two crawler processes sharing one DEDUP_DIR: lookup+insert is one transaction, so a page
checked by both at the same moment is kept exactly once."""

import multiprocessing as mp
import random

from crawler_dedup import Deduplicator
from crawler_dedup.droplog import DropLog, read_droplog

ROUNDS = 25


def _worker(path, name, barrier, texts, out):
    with Deduplicator(dir=path) as d:  # opened in the child: never across fork
        for i, text in enumerate(texts):
            barrier.wait()
            v = d.check(f"https://{name}/page{i}", text=text)
            out.put((i, name, v.action, v.reason))


def test_same_page_at_once_in_two_processes_is_kept_once(tmp_path, articles):
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    vocab = sorted({w for _, gold in articles for w in gold.split()})
    rnd = random.Random(5)
    texts = [" ".join(rnd.choices(vocab, k=300)) for _ in range(ROUNDS)]  # unrelated pages
    procs = [ctx.Process(target=_worker, args=(str(tmp_path / "idx"), n, barrier, texts, out)) for n in ("a", "b")]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in range(2 * ROUNDS)]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    for i in range(ROUNDS):
        actions = sorted(r[2] for r in results if r[0] == i)
        assert actions == ["drop", "keep"], (i, results)
    with Deduplicator(dir=str(tmp_path / "idx")) as d:
        assert d.index.read(lambda t: t.doc_count()) == ROUNDS


def _append(path, name, n):
    with DropLog(path) as log:
        for i in range(n):
            log.write({"url": f"{name}-{i}", "pad": name * 3000})


def test_drop_log_lines_from_processes_never_interleave(tmp_path):
    path = str(tmp_path / "drops.jsonl")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_append, args=(path, n, 300)) for n in "xyz"]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
    bad = []
    records = list(read_droplog(path, errors=bad))
    assert not bad and len(records) == 900
    assert all(r["pad"] == r["url"][0] * 3000 for r in records)


def test_reader_skips_and_reports_broken_lines(tmp_path):
    path = tmp_path / "drops.jsonl"
    path.write_text('{"url": "a"}\nnot json\n\n[1, 2]\n{"url": "b"}\n{"url": "trunc', encoding="utf-8")
    bad = []
    assert [r["url"] for r in read_droplog(str(path), errors=bad)] == ["a", "b"]
    assert [n for n, _ in bad] == [2, 4, 6]


KILLED = """
import random, sys
from crawler_dedup import Deduplicator
vocab = sys.argv[2].split()
rnd = random.Random(9)
with Deduplicator(dir=sys.argv[1]) as d:
    for i in range(10_000):
        v = d.check(f"https://k/{i}", text=" ".join(rnd.choices(vocab, k=120)))
        print(i, v.action, flush=True)
"""


def test_a_killed_process_leaves_a_consistent_index(tmp_path, articles):
    """SIGKILL mid-stream: every page reported kept is in the index (plus at most the one committed
    just before the kill), and the index opens and works."""
    import signal
    import subprocess
    import sys

    vocab = " ".join(sorted({w for _, gold in articles for w in gold.split()})[:3000])
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(tmp_path / "idx"), vocab],
                            stdout=subprocess.PIPE, text=True)
    reported = 0
    for line in proc.stdout:
        reported += line.split()[1] == "keep"
        if reported >= 40:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    reported += sum(line.split()[1:2] == ["keep"] for line in proc.stdout.read().splitlines())
    with Deduplicator(dir=str(tmp_path / "idx")) as d:
        stored = d.index.read(lambda t: t.doc_count())
        assert stored in (reported, reported + 1)  # + the one committed and not yet printed
        first = d.index.read(lambda t: d.index.doc(t, 1))
        assert first.url == "https://k/0"
        assert d.check("https://again/0", text="a fresh page " * 20).action == "keep"
