"""Sequences of crawls, model-checked (tests/crawl_model.py): hypothesis generates a small site and
what happens to it between crawls (pages added with and without rel=canonical, to the clean URL, a
tracking URL or another page; tracking, session and http variants; edits; pages removed; a server
that honours validators or ignores them; DEDUP_CLEAN_REQUESTS, DEDUP_PREFER_CLEAN_URL, DEDUP_CANONICAL, DEDUP_REVISIT,
DEDUP_UNCHANGED and DEDUP_WINDOW changed between crawls), crawls it through the middleware, the
conditional requests, the extension and the pipeline in process, and checks after every crawl
that no page is lost and no drop dangles. On LMDB and on a Redis Cluster's spread layout.
benchmarks/model_crawls.py runs the same machine longer."""

from __future__ import annotations

import itertools
import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from .crawl_model import Article, Model, Site, article_text, clean_url, edited, variant_url

VARIANTS = ("tracking", "tracking2", "session", "http")
CANONICALS = (None, "clean", "tracking", "other")
_prefixes = itertools.count()
_which = st.integers(0, 99)
CHANGES = st.one_of(
    st.tuples(st.just("add_article"), st.sampled_from(CANONICALS), _which),
    st.tuples(st.just("add_variant"), _which, st.sampled_from(VARIANTS)),
    st.tuples(st.just("set_canonical"), _which, st.sampled_from(CANONICALS), _which),
    st.tuples(st.just("edit"), _which),
    st.tuples(st.just("remove_url"), _which),
    st.tuples(st.just("restore_url"), _which),
    st.tuples(st.just("server"), st.booleans()),
    st.tuples(st.just("change_settings"), st.booleans(), st.booleans(), st.sampled_from(("update", "keep", "drop")),
              st.sampled_from(("drop", "keep")), st.sampled_from((0, 0, 1.5 * 86_400)), st.booleans()),
)


class Crawls(RuleBasedStateMachine):
    """One site, one index, crawled again and again while the site and the settings change."""

    store: dict = {}  # the index's settings (a Redis Cluster's for the spread layout)

    def __init__(self):
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="crawl-model-"))
        store = dict(type(self).store)
        if store.get("DEDUP_BACKEND") == "redis":
            store["DEDUP_REDIS_PREFIX"] = f"model-{os.getpid()}-{next(_prefixes)}"
        self.site = Site()
        self.model = Model(self.folder, self.site, store)
        self.settings: dict = {}
        self.crawled = 0

    def teardown(self):
        shutil.rmtree(self.folder, ignore_errors=True)
        prefix = self.model.store_settings.get("DEDUP_REDIS_PREFIX")
        if prefix:  # (the cluster's scans stay short: each sequence's index goes with it)
            import redis

            client = redis.RedisCluster.from_url(self.model.store_settings["DEDUP_REDIS_URL"])
            try:
                for pattern in (f"{prefix}:*", f"{{{prefix}}}*"):
                    for key in client.scan_iter(match=pattern, count=1000, target_nodes=redis.RedisCluster.PRIMARIES):
                        client.delete(key)
            finally:
                client.close()

    # -- the site ---------------------------------------------------------------------------------
    def _article(self, canonical: str | None, other: int) -> int:
        n = len(self.site.articles) + 1
        if canonical == "other":
            canonical = f"other:{1 + other % max(1, len(self.site.articles))}" if self.site.articles else None
        self.site.articles[n] = Article(n, article_text(n * 1009), canonical=canonical)
        self.site.add_url(clean_url(n), n)
        return n

    @initialize(canonical=st.sampled_from(CANONICALS), other=st.integers(0, 9))
    def start(self, canonical, other):
        self._article(canonical, other)

    # -- what happens to the site and the settings between two crawls ------------------------------
    def add_article(self, canonical, other):
        if len(self.site.articles) < 4:
            self._article(canonical, other)

    def add_variant(self, which, kind):
        n = 1 + which % len(self.site.articles)
        self.site.add_url(variant_url(n, kind), n)

    def set_canonical(self, which, canonical, other):
        art = self.site.articles[1 + which % len(self.site.articles)]
        if canonical == "other":
            others = [n for n in self.site.articles if n != art.number]
            canonical = f"other:{others[other % len(others)]}" if others else None
        art.canonical = canonical

    def edit(self, which):
        art = self.site.articles[1 + which % len(self.site.articles)]
        art.version += 1
        art.text = edited(art.text, art.number * 100 + art.version)

    def remove_url(self, which):
        if len(self.site.urls) > 1:
            url = sorted(self.site.urls)[which % len(self.site.urls)]
            del self.site.urls[url]
            self.site.removed.add(url)

    def restore_url(self, which):
        if self.site.removed:
            url = sorted(self.site.removed)[which % len(self.site.removed)]
            self.site.add_url(url, int(url.split("/a", 1)[1].split("?")[0].split(";")[0]))

    def server(self, honours):
        self.site.honours = honours

    def change_settings(self, clean, canonical, revisit, unchanged, window, requests=False):
        self.settings = {"DEDUP_PREFER_CLEAN_URL": clean, "DEDUP_CANONICAL": canonical, "DEDUP_REVISIT": revisit,
                         "DEDUP_UNCHANGED": unchanged, "DEDUP_WINDOW": window, "DEDUP_CLEAN_REQUESTS": requests}

    # -- a step: a few changes, then a crawl, checked --------------------------------------------
    @rule(changes=st.lists(CHANGES, max_size=3), seed=st.integers(0, 2**16), leaf=st.booleans(),
          item_html=st.booleans(), racing=st.booleans())
    def crawl(self, changes, seed, leaf, item_html, racing):
        for name, *args in changes:
            getattr(self, name)(*args)
        order = sorted(self.site.urls) + sorted(self.site.removed)
        random.Random(seed).shuffle(order)
        # two crawler processes at once where a store without transactions keeps groups once by claims
        crawlers = 2 if racing and self.model.store_settings.get("DEDUP_BACKEND") == "redis" else 1
        self.model.crawl(order, self.settings, leaf=leaf, item_html=item_html, crawlers=crawlers)
        self.crawled += 1
        self.model.check()

    @invariant()
    def nothing_lost(self):
        if self.crawled:
            assert set(self.model.storage.values()) >= self.model.seen


def run_machine(store: dict, examples: int, steps: int):
    Crawls.store = store
    test = Crawls.TestCase
    test.settings = settings(max_examples=examples, stateful_step_count=steps, deadline=None,
                             suppress_health_check=list(HealthCheck), derandomize=True)
    test().runTest()


def test_sequences_of_crawls_lose_nothing_on_lmdb():
    run_machine({}, examples=int(os.environ.get("CRAWL_MODEL_EXAMPLES", 12)), steps=10)


def test_sequences_of_crawls_lose_nothing_on_the_spread_layout(redis_cluster):
    pytest.importorskip("redis")
    run_machine({"DEDUP_BACKEND": "redis", "DEDUP_REDIS_URL": redis_cluster},
                examples=int(os.environ.get("CRAWL_MODEL_EXAMPLES", 6)), steps=8)


# -- the sequences the machine found or the issue named, kept as examples ---------------------------

def _site(canonical: str | None, *kinds: str) -> Site:
    site = Site()
    site.articles[1] = Article(1, article_text(1009), canonical=canonical)
    site.add_url(clean_url(1), 1)
    for kind in kinds:
        site.add_url(variant_url(1, kind), 1)
    return site


@pytest.mark.parametrize("first", [{}, {"DEDUP_PREFER_CLEAN_URL": False}])
def test_a_known_copys_304_keeps_the_page_its_canonical_names(tmp_path, first):
    """The site's rel=canonical names a tracking URL: crawl 1 keeps it and drops the clean URL as
    its copy. Crawl 2 (the clean-URL rule on, as it was or newly): the clean URL's 304 used to
    replace the tracking URL (storage removed it), then the clean URL came back as its own
    unchanged revisit: neither URL was stored."""
    site = _site("tracking", "tracking")
    model = Model(tmp_path, site)
    model.crawl([variant_url(1, "tracking"), clean_url(1)], first)
    model.check()
    assert set(model.storage) == {variant_url(1, "tracking")}
    second = model.crawl([clean_url(1), variant_url(1, "tracking")], {})
    model.check()
    # (dropped under other deciding settings, the copy is asked again in full and decided from its text)
    assert set(model.storage) == {variant_url(1, "tracking")} and second.statuses[clean_url(1)] == (200 if first else 304)


def test_a_known_copy_that_is_now_the_cleaner_url_replaces_the_kept_page_from_its_full_page(tmp_path):
    """DEDUP_PREFER_CLEAN_URL off in crawl 1: the clean URL was dropped as the tracking URL's copy.
    On in crawl 2: its 304 cannot replace the kept page (nothing of it was downloaded, its own
    rel=canonical is not known): it is asked again in full, and its 200 replaces the kept page, as
    storage is told. Crawl 3: both answer 304, nothing changes."""
    site = _site(None, "tracking")
    model = Model(tmp_path, site)
    model.crawl([variant_url(1, "tracking"), clean_url(1)], {"DEDUP_PREFER_CLEAN_URL": False})
    model.check()
    assert set(model.storage) == {variant_url(1, "tracking")}
    second = model.crawl([clean_url(1), variant_url(1, "tracking")], {})
    model.check()
    assert set(model.storage) == {clean_url(1)} and second.removed == [variant_url(1, "tracking")]
    third = model.crawl([clean_url(1), variant_url(1, "tracking")], {})
    model.check()
    assert set(model.storage) == {clean_url(1)} and set(third.statuses.values()) == {304}


def test_a_window_turned_on_then_off_on_the_spread_layout_leaves_one_value_a_key(redis_cluster):
    """Found by the machine on the spread layout: a page kept without DEDUP_WINDOW, then, the
    window on, out of it and kept again (its entries in the window's generations of shards), then
    read without the window: its URL's entry in the plain shards still named the record that
    left (a put wrote the newest place only), and `index verify` found the index broken. Entries
    are read in every generation an index was ever written in, and a put clears the others."""
    Crawls.store = {"DEDUP_BACKEND": "redis", "DEDUP_REDIS_URL": redis_cluster}
    machine = Crawls()
    try:
        machine.start(canonical=None, other=0)
        machine.crawl(changes=[("edit", 0)], seed=21, leaf=True, item_html=False, racing=True)
        machine.crawl(changes=[("add_article", None, 0), ("change_settings", True, True, "update", "drop", 129600.0)],
                      seed=0, leaf=False, item_html=False, racing=False)
        machine.crawl(changes=[], seed=0, leaf=False, item_html=False, racing=False)
        machine.crawl(changes=[("change_settings", True, True, "update", "drop", 0)], seed=0, leaf=False,
                      item_html=False, racing=False)
    finally:
        machine.teardown()
        Crawls.store = {}
