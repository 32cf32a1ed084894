"""Two crawler processes sharing one DEDUP_DIR: lookup+insert is one transaction, so a page
checked by both at the same moment is kept exactly once."""

import multiprocessing as mp
import os
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


MAP = 1 << 20  # DEDUP_LMDB_MAP_SIZE's least


def _in_turn(path, me, procs, barrier, pages, out):
    """Process `me` checks pages me, me+procs, ...; the barrier after each page fixes the order."""
    with Deduplicator(dir=path, lmdb_map_size=MAP) as d:  # the smallest map: it grows under the others
        for i, (url, text) in enumerate(pages):
            if i % procs == me:
                v = d.check(url, text=text)
                out.put((i, str(v.action), str(v.reason), v.duplicate_of))
            barrier.wait(timeout=120)


def _copies(articles, seed=4):
    """Real articles, each with an edited copy (3% of words replaced) and an exact copy elsewhere,
    and unrelated pages, in a shuffled order."""
    rnd = random.Random(seed)
    vocab = sorted({w for _, gold in articles for w in gold.split()})
    pages = []
    for n, (_, gold) in enumerate(articles):
        words = gold.split()
        edited = [rnd.choice(vocab) if rnd.random() < 0.03 else w for w in words]
        pages += [(f"https://a{n}.test/story", gold), (f"https://b{n}.test/copy", " ".join(edited)),
                  (f"https://c{n}.test/mirror", gold)]
    pages += [(f"https://u{i}.test/", " ".join(rnd.choices(vocab, k=500))) for i in range(250)]
    rnd.shuffle(pages)
    return pages


def test_four_processes_with_map_growth_decide_as_one_process(tmp_path, articles):
    """Four processes on one DEDUP_DIR whose map starts at 1 MiB (so it is grown by one while
    the others have it open: MDB_MAP_RESIZED), taking turns: the same decisions as one process
    fed the same pages in the same order."""
    pages = _copies(articles)
    with Deduplicator(dir=str(tmp_path / "one")) as d:
        alone = [(i, str(v.action), str(v.reason), v.duplicate_of)
                 for i, v in enumerate(d.check(url, text=text) for url, text in pages)]
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(4), ctx.Queue()
    path = str(tmp_path / "shared")
    procs = [ctx.Process(target=_in_turn, args=(path, me, 4, barrier, pages, out)) for me in range(4)]
    for p in procs:
        p.start()
    together = sorted(out.get(timeout=180) for _ in pages)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert together == alone
    assert {a for _, a, _, _ in alone} == {"keep", "drop"}  # both kinds of decision were made
    assert os.path.getsize(os.path.join(path, "data.mdb")) > MAP  # the map did grow


def _open_and_keep(folder: str) -> str:
    from crawler_dedup import Deduplicator

    with Deduplicator(dir=folder, lmdb_sync=False) as d:
        return d.check(f"https://a.example/{os.getpid()}", text=" ".join(f"w{i}" for i in range(300))).action


def test_processes_opening_a_new_folder_at_once_all_open_it(tmp_path):
    """Four processes open one new DEDUP_DIR at the same moment: the first makes the file while
    the others wait for it (the writers' lock), so none takes the half-made file for an index
    that was lost."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:  # (one pool: its processes start each folder closer together)
        for n in range(150):
            got = pool.map(_open_and_keep, [str(tmp_path / f"idx-{n}")] * 4)
            assert sorted(got) == ["drop", "drop", "drop", "keep"], got


def _commit_until(folder: str, stop) -> None:
    import lmdb

    env = lmdb.open(folder, map_size=4 << 30, sync=False)
    i = 0
    while not stop.is_set():
        with env.begin(write=True) as txn:
            for j in range(50):
                txn.put(f"{i}-{j}".encode(), os.urandom(200))  # the file grows each commit
        i += 1
    env.close()


def test_a_file_growing_under_another_processes_commits_is_never_taken_for_one_cut_short(tmp_path):
    """A crawl opening the index checks data.mdb is as long as its meta page says while other
    crawlers commit to it: the check reads the meta page before the size (a writer writes its
    pages first), so a commit between the two reads is no 'cut short' damage. Read the other way
    round, a few hundred of 1,000 checks a second said damaged here."""
    import time

    import lmdb

    from crawler_dedup.stores.lmdb import check_file

    folder = str(tmp_path / "idx")
    lmdb.open(folder, map_size=4 << 30).close()
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    writer = ctx.Process(target=_commit_until, args=(folder, stop))
    writer.start()
    checks, said_damaged = 0, []
    try:
        while os.path.getsize(os.path.join(folder, "data.mdb")) < 1 << 20:  # the writer is at work
            time.sleep(0.01)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            try:
                check_file(folder)
            except Exception as exc:  # noqa: BLE001 - each false finding is counted
                said_damaged.append(str(exc))
            checks += 1
    finally:
        stop.set()
        writer.join(timeout=60)
    assert writer.exitcode == 0
    assert checks > 1000 and not said_damaged, (checks, len(said_damaged), said_damaged[:1])
