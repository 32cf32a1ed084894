"""One decision procedure on a Redis Cluster's spread layout (core/decide/claims.py): a filed
page's second look is the rule chain itself, with its score, overrides and settings, over the
pages claimed before it, scored by the same model; a drop names a page that stays; a page that withdraws gives back the
entries it shared. Real 3-node cluster; races are made exact with barriers between two
Deduplicators (two crawler processes, each its own connections)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from crawler_dedup import Deduplicator
from crawler_dedup.core.decide import claims
from crawler_dedup.core.index.integrity import verify
from crawler_dedup.core.verdict import Action
from crawler_dedup.stores.redis import spread

from .test_sitelines import _words


@pytest.fixture
def cluster(redis_cluster, request):
    """Settings of a fresh spread index on the session's cluster."""
    return dict(backend="redis", redis_url=redis_cluster, redis_prefix=f"chain-{request.node.name}"[:60])


@pytest.fixture(scope="module")
def texts(articles):
    bodies = [body for _, body in articles]
    return {"story": _words(bodies[2], 180), "other": _words(bodies[5], 250), "third": _words(bodies[9], 250),
            "promo": _words(bodies[6], 150)}


def test_a_page_kept_as_its_sites_boilerplate_stays_kept(cluster, texts):
    """A page whose text is all its site's boilerplate is kept beside its candidates (the score
    weighs the site's lines); the second look measures the site the same way and keeps it too (it
    once dropped such a page, `rule: claim`)."""
    promo = texts["promo"]
    with Deduplicator(**cluster) as d:
        d.check("https://a.example/1", text=f"{texts['story']}\n{promo}", title="Storm closes schools | A")
        d.check("https://a.example/2", text=f"{_words(texts['other'], 90)}\n{promo}", title="Budget vote delayed | A")
        d.check("https://a.example/4", text=f"{texts['third']}\n{promo}", title="Harbour reopens | A")
        shell = d.check("https://a.example/5", text=promo, title="Ferry timetable changes | A")
        assert (shell.action, shell.rule) == (Action.KEEP, "keep") and shell.scored_apart
        assert d.index.read(lambda t: d.index.by_url(t, "https://a.example/5")) is not None


def test_revisit_keep_keeps_an_update_that_copies_another_urls_page(cluster, plain_model):
    """DEDUP_REVISIT=keep: a revisit whose new text is another URL's page is an update, kept and
    filed for its URL; the second look keeps it too (it once withdrew it, and its URL left the index)."""
    a = " ".join(f"alpha{i} plain words of alpha text" for i in range(20))
    b = " ".join(f"beta{i} plain words of beta text" for i in range(20))
    with Deduplicator(revisit="keep", model=plain_model, **cluster) as d:  # (made-up texts: by resemblance)
        d.check("https://s/a", text=a)
        d.check("https://s/b", text=b)
        v = d.check("https://s/b", text=a)
        assert (v.action, v.revisit) == (Action.KEEP, "updated")
        kept = d.index.read(lambda t: d.index.by_url(t, "https://s/b"))
        assert kept is not None and kept.doc_id == v.doc_id
        assert d.check("https://s/c", text=a).duplicate_of in ("https://s/a", "https://s/b")
        assert verify(d.index).ok


def test_the_template_lines_are_measured_the_same_in_the_second_look(cluster):
    """DEDUP_BOILERPLATE: the lines kept pages show outside their own text count in a page's site
    share; the second look measures them the same way, so the cluster decides as one process does."""
    from crawler_dedup.stores import MemoryStore

    from .test_boilerplate import SHELL, article

    pages = [("a1", article(1, 1)), ("app/1", SHELL), ("app/2", SHELL), ("a2", article(2, 2))]
    decided = []
    for settings in (cluster, {"store": MemoryStore()}):
        with Deduplicator(boilerplate=True, **settings) as d:
            decided.append([(v.action, v.duplicate_of) for v in (d.check(f"https://valley.example/{name}", html=html)
                                                                 for name, html in pages)])
    assert decided[0] == decided[1] and decided[0][3][0] == Action.KEEP


class Race:
    """Pages checked at the same moment by several processes: every first look happens before any
    of them is filed, then the filed pages claim and look again in the order given (`files`: and
    are filed in that order, else at once)."""

    def __init__(self, monkeypatch, n: int, order: list[int], files: list[int] | None = None):
        self.filing = threading.Barrier(n, timeout=60)
        self.turns = [threading.Event() for _ in range(n)]
        self.filed = [threading.Event() for _ in range(n)]
        self.order, self.local = order, threading.local()
        commit, confirm = spread.SpreadTxn.commit, claims.confirm
        race = self

        def commit_after_all_looked(txn):
            me = getattr(race.local, "me", None)
            if me is not None and getattr(race.local, "first", True):
                race.local.first = False
                race.filing.wait()
                if files is not None and files.index(me):
                    race.filed[files[files.index(me) - 1]].wait(timeout=60)
                try:
                    return commit(txn)
                finally:
                    race.filed[me].set()
            return commit(txn)

        def confirm_in_turn(*args, **kw):
            me = race.local.me
            race.turns[me].wait(timeout=60)
            try:
                return confirm(*args, **kw)
            finally:
                race.next_turn(me)

        monkeypatch.setattr(spread.SpreadTxn, "commit", commit_after_all_looked)
        monkeypatch.setattr(claims, "confirm", confirm_in_turn)
        self.turns[order[0]].set()

    def next_turn(self, me: int) -> None:
        at = self.order.index(me)
        if at + 1 < len(self.order):
            self.turns[self.order[at + 1]].set()

    def run(self, checks):
        """checks[i](): process i's decision; their verdicts."""
        out: list = [None] * len(checks)

        def go(i):
            self.local.me = i
            try:
                out[i] = checks[i]()
            finally:
                self.next_turn(i) if not self.turns[i].is_set() else None

        threads = [threading.Thread(target=go, args=(i,)) for i in range(len(checks))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        return out


def test_racing_byte_identical_copies_leave_the_kept_page_its_entries(cluster, articles, monkeypatch):
    """Two processes file the same bytes under two URLs at once; the later claim withdraws. The
    kept page keeps its exact-text and response-digest entries (the withdrawal once deleted them:
    later byte-identical copies then matched only as `near`, and `index verify` reported
    dangling digest entries)."""
    from crawler_dedup.core.page.fingerprint import body_digest

    html = articles[3][0]
    body = body_digest(html)
    with Deduplicator(**cluster) as one, Deduplicator(**cluster) as two:
        race = Race(monkeypatch, 2, order=[0, 1])
        first, second = race.run([lambda: one.check("https://x.example/a", html=html, body=body),
                                  lambda: two.check("https://y.example/a", html=html, body=body)])
        monkeypatch.undo()
        assert (first.action, second.action, second.rule) == (Action.KEEP, Action.DROP, "claim")
        assert second.duplicate_of == "https://x.example/a"
        report = verify(one.index)
        assert report.ok, report.problems
        later = one.check("https://z.example/a", html=html, body=body)
        assert (later.action, later.reason, later.duplicate_of) == (Action.DROP, "exact", "https://x.example/a")
        assert one.known(body) is not None  # the fast path still knows the bytes


def test_a_drop_against_a_page_that_withdraws_is_decided_again(cluster, monkeypatch, plain_model):
    """A ~ B and B ~ D, but A !~ D. A and B are filed at once, A claims first; D is checked while
    B is still racing and matches B only. B then withdraws against A, so D is decided again and
    kept: a drop never names a page that left (it once named B, settled after a wait). Made-up
    texts: decided by resemblance (the plain model), the subject being the claims."""
    def text(words: list[str]) -> str:
        return " ".join(words)

    base = [f"w{i}" for i in range(300)]
    a = base[:200]  # A and B share 150 of 200 words, B and D share 150, A and D 100
    b = base[50:250]
    d_words = base[100:300]
    opts = {**cluster, "model": plain_model}
    with Deduplicator(**opts) as one, Deduplicator(**opts) as two, Deduplicator(**opts) as three:
        confirm = claims.confirm  # (the real one: B's turn is held by b_after_d, not by the race)
        race = Race(monkeypatch, 2, order=[0, 1])
        got_d: list = []
        released = threading.Event()

        def b_after_d(*args, **kw):  # B's second look waits until D has been dropped against B
            if getattr(race.local, "me", None) == 1:
                released.wait(timeout=60)
            return confirm(*args, **kw)

        monkeypatch.setattr(claims, "confirm", b_after_d)

        tries: list[int] = []
        decide_many = three.decide_many

        def counted(pages, *again):
            tries.append(again[0] if again else 0)
            return decide_many(pages, *again)

        three.decide_many = counted  # type: ignore[method-assign]

        def check_d():
            got_d.append(three.check("https://d.example/d", text=text(d_words), title="D"))

        watcher = threading.Thread(target=check_d)

        def b_then_d():
            return two.check("https://b.example/b", text=text(b), title="B")

        race.turns[1].set()  # (B's turn is held by b_after_d instead)

        def start_d_when_b_filed():
            import time

            index = three.index
            for _ in range(1000):  # B is filed: D may now be checked
                if index.read(lambda t: index.by_url(t, "https://b.example/b")) is not None:
                    break
                time.sleep(0.01)
            watcher.start()
            time.sleep(1.0)  # D found B and waits for it to settle
            released.set()

        helper = threading.Thread(target=start_d_when_b_filed)
        helper.start()
        threads_out = race.run([lambda: one.check("https://a.example/a", text=text(a), title="A"), b_then_d])
        helper.join(timeout=60)
        watcher.join(timeout=60)
        monkeypatch.undo()
        first, second = threads_out
        assert first.action == Action.KEEP
        assert (second.action, second.duplicate_of) == (Action.DROP, "https://a.example/a")
        assert tries == [0, 1]  # dropped against B, then decided again when B withdrew
        (late,) = got_d
        assert (late.action, late.error) == (Action.KEEP, None), late  # decided again: B withdrew, A is no copy of D
        assert verify(one.index).ok


def test_one_url_fetched_by_two_crawlers_at_once_is_kept_once(cluster, articles, monkeypatch):
    """Two crawlers fetch the same URL at the same moment and both file it: the later claim's
    second look meets the earlier as the URL's kept page (a revisit: unchanged, dropped as such),
    never as a copy of another page, and the URL's entry names the page that stays."""
    text = articles[6][1]
    with Deduplicator(**cluster) as one, Deduplicator(**cluster) as two:
        race = Race(monkeypatch, 2, order=[0, 1])
        first, second = race.run([lambda: one.check("https://x.example/same", text=text),
                                  lambda: two.check("https://x.example/same", text=text)])
        monkeypatch.undo()
        assert first.action == Action.KEEP
        assert (second.action, second.reason, second.duplicate_of) == (Action.DROP, "unchanged", "https://x.example/same")
        kept = one.index.read(lambda t: one.index.by_url(t, "https://x.example/same"))
        assert kept is not None and kept.doc_id == first.doc_id
        assert verify(one.index).ok


def test_a_page_filed_from_a_coarse_records_bytes_is_filed_under_its_whole_sketch(cluster, articles):
    """The fast path stands a kept page's record in for a response with its very bytes. On the
    spread layout records keep only their sketch's high bits: a page filed from one (a cleaner URL
    replacing the kept page) was filed in the sketch postings under those, so an edited copy on
    another site, whose simhash had moved past k, never found it (the crawl model's cluster run:
    the edited page kept under its mirror URL). The probes' whole hashes are kept apart: used."""
    from crawler_dedup.core.page.fingerprint import body_digest

    html = articles[3][0]
    body = body_digest(html)
    with Deduplicator(**cluster) as d:
        assert d.check("https://x.example/a?utm_source=feed", html=html, body=body).action == Action.KEEP
        known = d.known(body)
        assert known is not None
        fresh, probes = d.fingerprint(known.text), d.config.sketch_probes
        assert np.array_equal(known.sketch[:probes], fresh.sketch[:probes])
        cleaner = d.check("https://x.example/a", fingerprinted=known, body=body)
        assert cleaner.action == Action.KEEP and cleaner.superseded is not None
        found = d.index.read(lambda t: d.index.sketch_candidates(t, fresh.sketch, probes))
        assert cleaner.doc_id in found


def test_removing_the_newer_of_two_pages_with_the_same_bytes_leaves_the_fast_path_to_the_older(cluster, texts):
    """A page past DEDUP_WINDOW stays kept on the spread layout until its keys expire, and a copy
    of its very bytes is kept beside it (found by the crawl model: a mirror met once its page
    had left the window, then `index remove`d). Taking the newer page out leaves the response
    digest's entry to the older, not to nobody: `index verify` whole."""
    html = f"<html><body><article><p>{texts['story']}</p></article></body></html>"
    with Deduplicator(window=100, **cluster) as d:
        first = d.check("https://a.example/page", html=html, body=b"same-bytes", now=1000)
        copy = d.check("https://mirror.example/page", html=html, body=b"same-bytes", now=5000)
        assert first.action == copy.action == Action.KEEP and first.doc_id != copy.doc_id
        assert d.index.read(lambda t: (t.doc_get(first.doc_id) is not None, t.body_get(b"same-bytes"))) == (True, copy.doc_id)
        d.index.write(lambda t: d.index.remove(t, copy.doc_id))
        report = verify(d.index)
        assert report.ok, report.problems
        assert d.index.read(lambda t: t.body_get(b"same-bytes")) == first.doc_id
