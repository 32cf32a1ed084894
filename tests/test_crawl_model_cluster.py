"""The crawl model (tests/test_crawl_model.py) on a Redis Cluster's spread layout: the same
sequences, and crawlers at once racing on a page rewritten (claims decide), one of two racing
crawlers killed at its page's second look, crawlers killed inside a commit, a node stalled during a
crawl, a node refusing connections (within DEDUP_REDIS_RETRY, past it, at the index's opening);
`index verify` after each of them. The test starts a real 3-node cluster (redis-server)."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from .crawl_hooks import ClaimsInOrder
from .crawl_model import DAY, MIRROR, article_text, clean_url, variant_url
from .test_crawl_model import CHANGES, Crawls, _which, run_machine


class ClusterCrawls(Crawls):
    """On a Redis Cluster, crawlers at once also race on a page rewritten (claims decide)."""

    @initialize(seed=st.integers(0, 2**16), asked=st.integers(2, 6), reached=st.sampled_from((0.0, 0.5, 1.0)),
                lead=st.sampled_from((True, False)), requests=st.sampled_from((False, True)),
                half=st.sampled_from(("last", "first")))
    def begin_cut_inside(self, seed, asked, reached, lead, requests, half="first"):
        """And a crawler killed inside a commit, half its commands sent (`killed`, `cut`), crawled
        again a day later: that crawl's opening applies the commit whole, from its journal (`half`:
        which half of the commit's commands was sent);
        `requests` False: the new page's session and tracking URLs downloaded as they are (so the
        commit cut may be one replacing another). The settings as they were from then on."""
        saved = self.settings
        if not requests:
            self.setting(("DEDUP_CLEAN_REQUESTS", False))
        try:
            self.killed(changes=[], seed=seed, asked=asked, reached=reached, lead=lead, cut=True,
                        inside="last" if half == "last" else True)
        finally:
            self.settings = saved

    @initialize(seed=st.integers(0, 2**16), claims=st.sampled_from(("copy", "update")))
    def begin_race(self, seed, claims):
        """And two pages of their own, each crawled, then its update racing a copy on the mirror
        (`race_update`), the copy claiming first and filed last: the first page's update withdraws
        and gives its URL back to the page's earlier record; the second page names its tracking
        URL as canonical (the copy's markup names it too), so its update replaces the copy and
        keeps the entries they share. Only the index shows either: `index verify` reads it."""
        saved = self.settings
        try:
            for canonical in (None, "tracking"):
                n = self._article(canonical, 0)
                if canonical == "tracking":  # (the URL its rel=canonical names is served, and asked as it is)
                    self.site.add_url(variant_url(n, "tracking"), n)
                    self.setting(("DEDUP_CLEAN_REQUESTS", False))
                self._crawl(sorted(self.site.urls))
                self.race_update(n - 1, seed, claims)
        finally:
            self.settings = saved

    @initialize(changes=st.lists(CHANGES, max_size=3), seed=st.integers(0, 2**16), node=st.integers(0, 2),
                ms=st.sampled_from((300, 1500)), after=st.sampled_from((0.0, 0.02, 0.05)), racing=st.booleans())
    def begin_stalled(self, changes, seed, node, ms, after, racing):
        """And one crawl with a node stalled (`stalled`), in every sequence."""
        if not self.site.articles:
            self._article(None, 0)
        self.stalled(changes, seed, node, ms, after, racing)

    @precondition(lambda self: self.crawled)
    @rule(changes=st.lists(CHANGES, max_size=3), seed=st.integers(0, 2**16), node=st.integers(0, 2),
          ms=st.sampled_from((300, 1500)), after=st.sampled_from((0.0, 0.02, 0.05)), racing=st.booleans())
    def stalled(self, changes, seed, node, ms, after, racing):
        """A crawl (two crawlers at once, or one) during which a node of the cluster stops answering
        for a while (CLIENT PAUSE, `ms`, `after` seconds in): its pages wait it out within
        DEDUP_REDIS_RETRY, and the crawl is checked as any other (a slow store changes no decision)."""
        import threading

        import redis

        for name, *args in changes:
            getattr(self, name)(*args)
        cluster = redis.RedisCluster.from_url(self.model.store_settings["DEDUP_REDIS_URL"])
        try:
            primary = sorted(cluster.get_primaries(), key=lambda n: n.port)[node % 3]
            host, port = primary.host, primary.port
        finally:
            cluster.close()
        one = redis.Redis(host=host, port=port)
        pause = threading.Timer(after, lambda: one.execute_command("CLIENT", "PAUSE", ms, "ALL"))
        order = sorted(self.site.urls)
        random.Random(seed).shuffle(order)
        pause.start()
        try:
            self._crawl(order, crawlers=2 if racing else 1)
        finally:
            pause.cancel()
            pause.join()
            one.execute_command("CLIENT", "UNPAUSE")
            one.close()
        self._whole()

    @initialize(changes=st.lists(CHANGES, max_size=3), seed=st.integers(0, 2**16), node=st.integers(0, 2),
                ms=st.sampled_from((100, 600, 1200)), after=st.sampled_from((0.0, 0.03, 0.1, None)), racing=st.booleans())
    def begin_down(self, changes, seed, node, ms, after, racing):
        """And one crawl with a node down (`down`), in every sequence."""
        if not self.site.articles:
            self._article(None, 0)
        self._crawl(sorted(self.site.urls))
        self.down(changes, seed, node, ms, after, racing)

    @precondition(lambda self: self.crawled)
    @rule(changes=st.lists(CHANGES, max_size=3), seed=st.integers(0, 2**16), node=st.integers(0, 2),
          ms=st.sampled_from((100, 600, 1200)), after=st.sampled_from((0.0, 0.03, 0.1, None)), racing=st.booleans())
    def down(self, changes, seed, node, ms, after, racing):
        """A crawl (two crawlers at once, or one) during which a node refuses every connection for
        `ms`, from `after` seconds after the index opened. Within DEDUP_REDIS_RETRY (0.5 s for that
        crawl) it is waited for: no page kept unchecked. Past it, a page whose reads or commit need
        it is kept unchecked, named in the log (excused from one URL a page; a later copy of it is no
        drop), and a commit cut off half-way is applied whole later. `after` None: from before the
        crawl, on the node holding the index's meta key: past DEDUP_REDIS_RETRY the index cannot be
        opened, the crawl fails at its start (a scheduled job's exit 1) and changes nothing. The crawl after, with the node back, is whole
        and checked as any other; then `index verify`."""
        import threading

        import redis

        from crawler_dedup.exceptions import StoreError

        for name, *args in changes:
            getattr(self, name)(*args)
        cluster = redis.RedisCluster.from_url(self.model.store_settings["DEDUP_REDIS_URL"])
        try:
            primary = sorted(cluster.get_primaries(), key=lambda n: n.port)[node % 3]
            if after is None:  # (the node an opening reads: the index's meta key's, docs/distributed.md)
                primary = cluster.get_node_from_key("{%s}:m" % self.model.store_settings["DEDUP_REDIS_PREFIX"])
            host, port = primary.host, primary.port
        finally:
            cluster.close()
        admin = redis.Redis(host=host, port=port)  # (connected first: the one client the node still serves)
        most = admin.config_get("maxclients")["maxclients"]
        timers: list[threading.Timer] = []

        def refuse():  # (Redis 7: "max number of clients + cluster connections reached", a connection lost)
            admin.config_set("maxclients", 1)
            admin.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")

        def outage(wait: float) -> None:
            if not timers:  # (the first crawler's opening)
                timers.extend((threading.Timer(wait, refuse),
                               threading.Timer(wait + ms / 1000, lambda: admin.config_set("maxclients", most))))
                for timer in timers:
                    timer.start()

        order = sorted(self.site.urls)
        random.Random(seed).shuffle(order)
        saved = self.settings
        retry = 0.5  # (0.4 s beyond the short refusal: its end may come late on a loaded machine)
        self.setting(("DEDUP_REDIS_RETRY", retry))
        try:
            if after is None and ms / 1000 > retry:
                storage, lines = dict(self.model.storage), self.oracle.read
                refuse()  # (until the start has failed: a loaded machine may start the crawl late)
                with pytest.raises(StoreError, match="cannot open the Redis index"):
                    self.model.crawl(order, self.settings, crawlers=2 if racing else 1)
                assert self.model.storage == storage and not self.oracle.new_lines() and self.oracle.read == lines
            else:
                if after is None:
                    outage(0.0)
                else:
                    self.model.opened = lambda: outage(after)
                done = self._crawl(order, crawlers=2 if racing else 1)
                if ms / 1000 < retry:
                    assert not done.unchecked, f"kept unchecked while a node refused for {ms} ms: {done.unchecked}"
        finally:
            self.model.opened = None
            self.settings = saved
            for timer in timers:
                timer.join()
            admin.config_set("maxclients", most)
            admin.close()
        order = sorted(self.site.urls)
        random.Random(seed + 1).shuffle(order)
        self._crawl(order)
        self._whole()

    @precondition(lambda self: self.crawled)
    @rule(which=_which, seed=st.integers(0, 2**16), claims=st.sampled_from(("copy", "update", None)))
    def race_update(self, which, seed, claims="copy"):
        """A kept page rewritten and a new copy of it on the mirror host, crawled at once by two
        crawlers, each starting with one of them: the update and its copy race (whichever claims
        first stays; an update that withdraws leaves its URL to the page's earlier record).
        `claims`: which claims first (ClaimsInOrder), None: as the threads go."""
        n = 1 + which % len(self.site.articles)
        stored = sorted(u for u, (a, _) in self.model.storage.items() if a == n)
        new = f"https://{MIRROR}/r{self.crawled}/a{n}"  # (never met before)
        art = self.site.articles[n]  # (rewritten whole: its copy is no near copy of the version kept)
        art.version, art.modified = art.version + 1, art.modified + 1
        art.text = article_text(n * 1009 + 7919 * art.version)
        self.site.add_url(new, n)
        first = [u for u in stored[:1] if u != new] + [new]
        rest = sorted(set(self.site.urls) - set(first))
        random.Random(seed).shuffle(rest)
        if claims is None or len(first) < 2:
            self._crawl([*first, *rest], crawlers=2)
        else:
            with ClaimsInOrder(*(first if claims == "update" else first[::-1])):
                self._crawl([*first, *rest], crawlers=2)
        self._whole()  # (an update that withdrew gives its URL's entry back: only the index shows it)


    @initialize(seed=st.integers(0, 2**16), claimed=st.booleans(), canonical=st.sampled_from((None, "clean")),
                soon=st.sampled_from((True, True, False)))
    def begin_race_killed(self, seed, claimed, canonical, soon):
        """And one race with a kill inside it (`race_killed`), in every sequence."""
        self.race_killed(seed, claimed, canonical, soon)

    @precondition(lambda self: self.crawled and len(self.site.articles) < 10)
    @rule(seed=st.integers(0, 2**16), claimed=st.booleans(), canonical=st.sampled_from((None, "clean")),
          soon=st.booleans())
    def race_killed(self, seed, claimed, canonical, soon):
        """A new page and a copy of it on the mirror, crawled at once by two crawlers, each starting
        with one: the copy claims first and the page's crawler is killed at its second look (its
        page filed, claimed first when `claimed`, its item lost, its run never ended). The whole
        crawl after passes the killed run's page on again. `soon` (within the claims' first window,
        a second later): the page has its second look then, after the copy's claim: one URL a page
        (a killed claim taken for a look kept both). Else (a day later) drops against it may have
        stood: it stays beside the copy, a limit named in docs/distributed.md (excused as `halved`)."""
        n = self._article(canonical, 0)
        page, copy = clean_url(n), f"https://{MIRROR}/k{self.crawled}/a{n}"
        self.site.add_url(copy, n)
        rest = sorted(set(self.site.urls) - {page, copy})
        rnd = random.Random(seed)
        rnd.shuffle(rest)
        self.oracle.before_crawl(False)
        self.model.elsewhere = False if soon else None  # (soon: on this host, its dead pid says killed at once)
        try:
            with ClaimsInOrder(copy, page, killed=True, claimed=claimed):
                done = self.model.crawl([page, copy, *rest], self.settings, crawlers=2, width=1)
        finally:
            self.model.elsewhere = None
        self.oracle.after(done)
        self.crawled += 1
        if not soon:
            self.oracle.halved.add(n)
        order = sorted(self.site.urls)
        rnd.shuffle(order)
        self.oracle.before_crawl(False)
        self.oracle.after(self.model.crawl(order, self.settings, gap=1.0 if soon else DAY))
        self.crawled += 1
        self._whole()


def test_sequences_of_crawls_on_the_spread_layout(redis_cluster):
    pytest.importorskip("redis")
    run_machine({"DEDUP_BACKEND": "redis", "DEDUP_REDIS_URL": redis_cluster},
                examples=int(os.environ.get("CRAWL_MODEL_EXAMPLES", 40)) // 4, steps=18, machine=ClusterCrawls)
