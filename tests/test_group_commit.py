"""Group commit: pages decided together in one write transaction decide exactly as one by one."""

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawler_dedup import Deduplicator
from crawler_dedup.droplog import read_droplog

from .conftest import _bundle, dedup_stats, make_site, scrapy_crawl, write_urls

GOLD = [a["body"] for a in _bundle()[1]["articles"][:8]]  # module level: hypothesis reprs its arguments


def _stream(seed):
    """Texts with exact copies and small edits of earlier ones, in a shuffled order."""
    rng = random.Random(seed)
    texts = GOLD
    out = [(f"https://s/{i}", t) for i, t in enumerate(texts)]
    for i, t in enumerate(texts[:5]):
        words = t.split(" ")
        words[rng.randrange(len(words))] = "edited"
        out += [(f"https://copy/{i}", t), (f"https://edit/{i}", " ".join(words))]
    rng.shuffle(out)
    return out


def _outcome(v):
    return (v.url, v.action, v.reason, v.duplicate_of, v.distance, v.similarity, v.skipped, v.error)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), cuts=st.lists(st.integers(1, 8), min_size=1, max_size=20))
def test_batches_decide_as_one_by_one(tmp_path_factory, seed, cuts):
    stream = _stream(seed)
    one_dir, batch_dir = tmp_path_factory.mktemp("one"), tmp_path_factory.mktemp("batch")
    with Deduplicator(dir=str(one_dir), lmdb_sync=False) as d:
        expected = [_outcome(d.check(url, text=text, now=1000.0 + n)) for n, (url, text) in enumerate(stream)]
    got, n = [], 0
    with Deduplicator(dir=str(batch_dir), lmdb_sync=False) as d:
        sizes = iter(cuts * len(stream))
        while n < len(stream):
            size = next(sizes)
            prepared = [d.prepare(url, text=text, now=1000.0 + n + j) for j, (url, text) in enumerate(stream[n:n + size])]
            decided = iter(d.decide_many([p for _, p in prepared if p is not None]))
            got += [_outcome(v if p is None else next(decided)) for v, p in prepared]
            n += size
        assert d.index.read(lambda txn: txn.doc_count()) == sum(1 for o in expected if o[1] == "keep")
    assert got == expected
    assert sum(o[1] == "drop" for o in expected) >= 5  # the stream does hold duplicates


def test_a_failing_page_fails_open_alone(tmp_path, articles):
    texts = [gold for _, gold in articles[:4]]
    with Deduplicator(dir=str(tmp_path / "idx"), lmdb_sync=False) as d:
        d.check("https://s/0", text=texts[0])
        edit = texts[0].replace(" ", " edited ", 1)  # a near copy: its candidate goes to the verifier
        prepared = [d.prepare(f"https://b/{i}", text=t)[1] for i, t in enumerate([texts[1], edit, texts[2]])]
        real = d.verifier

        class Broken:
            name, keep = real.name, real.keep

            @staticmethod
            def score(fp, doc, config):
                if fp is prepared[1].fp:
                    raise RuntimeError("verifier bug")
                return real.score(fp, doc, config)

        d.verifier = Broken()
        verdicts = d.decide_many(prepared)
        assert [(v.action, v.error) for v in verdicts] == [("keep", None), ("keep", "internal"), ("keep", None)]
        d.verifier = real
        # the two good pages were indexed (each in its own transaction after the failure)
        assert d.check("https://again/1", text=texts[1]).duplicate_of == "https://b/0"
        assert d.check("https://again/2", text=texts[2]).duplicate_of == "https://b/2"


def test_a_damaged_record_met_in_a_batch_costs_its_page_only(tmp_path, articles, caplog):
    """Lookups in a group commit meet a damaged kept record (bit rot). A page whose exact copy it
    is (its words' entry names it) is kept unchecked and named; pages that only find it among their
    candidates are decided on the others; the other pages of the batch are decided and filed as
    ever (the whole batch was once kept unfiled: later copies of its pages kept too, logged once
    against another URL)."""
    import logging

    texts = [gold for _, gold in articles[:5]]
    with Deduplicator(dir=str(tmp_path / "idx"), lmdb_sync=False) as d:
        damaged = d.check("https://s/0", text=texts[0]).doc_id
        d.index.write(lambda txn: txn.doc_put(damaged, b"\x01" * 40))  # its bytes rot
        edit = texts[0].replace(" ", " edited ", 1)  # a near copy: the record is among its candidates
        batch = [texts[1], texts[0], edit, texts[2], texts[3]]
        prepared = [d.prepare(f"https://b/{i}", text=t)[1] for i, t in enumerate(batch)]
        with caplog.at_level(logging.WARNING):
            verdicts = d.decide_many(prepared)
        assert [(v.action, v.error) for v in verdicts] == [("keep", None), ("keep", "store"), ("keep", None),
                                                           ("keep", None), ("keep", None)]
        assert all(v.doc_id is not None for i, v in enumerate(verdicts) if i != 1)
        assert "https://b/1" in caplog.text and f"kept record {damaged} cannot be read" in caplog.text
        for i in (0, 2, 3, 4):  # filed: their copies are dropped
            assert d.check(f"https://again/{i}", text=batch[i]).duplicate_of == f"https://b/{i}"


def test_crawl_shares_commits_and_drops_one_of_each_pair(tmp_path, articles, serve):
    pages = {}
    for i, (html, _) in enumerate(articles[:6]):
        pages[f"a{i}.html"] = html
        pages[f"copy{i}.html"] = html
    base = serve(make_site(tmp_path / "site", pages)).base_url
    urls = write_urls(tmp_path / "urls.txt", [f"{base}/{name}" for name in sorted(pages)])
    runs = {}
    for batch in ("1", "64"):
        drops = tmp_path / f"drops-{batch}.jsonl"
        proc = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={tmp_path / ('idx' + batch)}",
                            "-s", f"DEDUP_DROPLOG={drops}", "-s", "ROBOTSTXT_OBEY=0", "-s", "CONCURRENT_REQUESTS=16",
                            "-s", f"DEDUP_COMMIT_BATCH={batch}", "-s", "DEDUP_COMMIT_DELAY=0.3")
        assert proc.returncode == 0, proc.stderr[-3000:]
        stats = dedup_stats(proc.stderr)
        assert stats["dedup/checked"] == 12 and stats["dedup/dropped"] == 6 and stats["dedup/kept"] == 6
        pairs = sorted(sorted((r["url"].rsplit("/", 1)[-1], r["duplicate_of"].rsplit("/", 1)[-1]))
                       for r in read_droplog(str(drops)))
        assert pairs == [[f"a{i}.html", f"copy{i}.html"] for i in range(6)], pairs
        runs[batch] = stats["dedup/commits"]
    assert runs["1"] == 12  # a commit a page
    assert runs["64"] < 12  # pages that came within 0.3 s of each other shared a commit


def test_a_crawl_killed_during_group_commits_passed_on_only_committed_pages(tmp_path, articles, serve):
    """SIGKILL while pages wait for their group commit: every page the spider got is in the index
    (a response goes on only once its commit is durable), and the index opens and works."""
    import os
    import signal
    import subprocess
    import sys

    from .conftest import ROOT

    pages = {f"a{i}.html": html for i, (html, _) in enumerate(articles)}
    base = serve(make_site(tmp_path / "site", pages)).base_url
    urls = write_urls(tmp_path / "urls.txt", [f"{base}/{name}" for name in pages])
    spider = os.path.join(ROOT, "tests", "spiders", "print_spider.py")
    proc = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "runspider", spider, "-a", f"urls={urls}", "-s", "ROBOTSTXT_OBEY=0",
         "-s", "ADDONS={\"crawler_dedup.addon.DedupAddon\": 0}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}",
         "-s", "DEDUP_COMMIT_DELAY=0.4", "-s", "CONCURRENT_REQUESTS=2", "-s", "LOG_LEVEL=ERROR"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"))
    parsed = []
    for line in proc.stdout:
        if line.startswith("PARSED "):
            parsed.append(line.split()[1])
            if len(parsed) >= 3:
                break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert 3 <= len(parsed) < len(pages)  # killed mid-crawl, after some pages were passed on
    with Deduplicator(dir=str(tmp_path / "idx")) as d:
        def urls_in(txn):
            out, doc_id = set(), 1
            while (doc := d.index.doc(txn, doc_id)) is not None:
                out.add(doc.url)
                doc_id += 1
            return out

        indexed = d.index.read(urls_in)
        assert set(parsed) <= indexed
        first = parsed[0]
        html = pages[first.rsplit("/", 1)[-1]]
        assert d.check(f"{base}/again", html=html).duplicate_of == first


@pytest.mark.parametrize("settings", [{"weighting": "tfidf"}, {"features": "docimage"}])
def test_batches_decide_as_one_by_one_when_fingerprints_depend_on_the_index(tmp_path, settings):
    """TF-IDF weights and document images change with every kept page: a page of a batch is
    fingerprinted again after the pages before it, as one by one."""
    stream = _stream(7)
    with Deduplicator(dir=str(tmp_path / "one"), lmdb_sync=False, **settings) as d:
        expected = [_outcome(d.check(url, text=text, now=1000.0 + n)) + (d.features.df.docs,)
                    for n, (url, text) in enumerate(stream)]
    with Deduplicator(dir=str(tmp_path / "batch"), lmdb_sync=False, **settings) as d:
        prepared = [d.prepare(url, text=text, now=1000.0 + n)[1] for n, (url, text) in enumerate(stream)]
        got = [_outcome(v) for v in d.decide_many(prepared)]
        assert d.features.df.docs == expected[-1][-1]
    assert got == [e[:-1] for e in expected]


def test_an_aborted_batch_takes_back_its_document_frequencies(tmp_path):
    stream = [(url, text) for url, text in _stream(3) if url.startswith("https://s/")]
    with Deduplicator(dir=str(tmp_path / "idx"), lmdb_sync=False, weighting="tfidf") as d:
        prepared = [d.prepare(url, text=text)[1] for url, text in stream]
        real = d.index.add
        bad = prepared[3].verdict.url

        def add(txn, record, *args, **kw):
            if record.url == bad:
                raise RuntimeError("index bug")
            return real(txn, record, *args, **kw)

        d.index.add = add
        verdicts = d.decide_many(prepared)
        assert [v.error for v in verdicts].count("internal") == 1 and verdicts[3].error == "internal"
        stored = d.index.read(lambda txn: txn.doc_count())
        assert stored == len(stream) - 1 and d.features.df.docs == stored  # the aborted attempt is not counted


def _runtime(tmp_path):
    from scrapy.utils.test import get_crawler

    from crawler_dedup.scrapy.extension import DedupExtension

    crawler = get_crawler(settings_dict={"DEDUP_DIR": str(tmp_path / "idx"), "DEDUP_LOGSTATS_INTERVAL": 0,
                                         "DEDUP_WORKERS": 0})  # (no reactor runs here to hear back from a worker)
    ext = DedupExtension.of(crawler)
    ext.spider_opened(None)
    return crawler, ext


def test_a_page_that_cannot_be_recorded_is_kept_and_every_page_released(tmp_path):
    from twisted.internet import defer

    crawler, runtime = _runtime(tmp_path)
    try:
        texts = GOLD[:3] + [GOLD[0]]  # the last one is a copy: dropped, so recorded in the drop log
        waiting = []
        for i, text in enumerate(texts):
            _, pending = runtime.dedup.prepare(f"https://s/{i}", text=text)
            waiting.append((pending, defer.Deferred()))
        runtime.commits.pending = list(waiting)
        real = runtime.recorder.record

        def record(verdict, stage, item=None, run=0):
            if verdict.url == "https://s/3":
                raise KeyError("a broken stats collector")
            return real(verdict, stage, item, run)

        runtime.recorder.record = record
        runtime.commits.flush()
        got = [d.result for _, d in waiting]  # every page released: none left hanging
        assert [v.action for v in got] == ["keep", "keep", "keep", "keep"]
        assert got[3].error == "internal" and got[3].duplicate_of == "https://s/0"
        assert crawler.stats.get_value("dedup/errors/internal") == 1
        assert crawler.stats.get_value("dedup/commits") == 1
    finally:
        runtime.spider_closed(None, "finished")


def test_a_page_alone_in_the_downloader_is_committed_at_once(tmp_path):
    from types import SimpleNamespace

    crawler, runtime = _runtime(tmp_path)
    try:
        assert runtime.commits.alone() is False  # no engine: cannot tell, so wait as configured
        runtime.commits.pending = [object()]
        crawler.engine = SimpleNamespace(downloader=SimpleNamespace(active={"only this one"}))
        assert runtime.commits.alone() is True
        crawler.engine.downloader.active = {"this one", "another download"}
        assert runtime.commits.alone() is False
    finally:
        runtime.commits.pending = []
        runtime.spider_closed(None, "finished")
