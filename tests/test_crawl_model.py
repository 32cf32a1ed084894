"""Sequences of crawls, model-checked: hypothesis generates a small site and what happens to it
between crawls (pages added with and without rel=canonical, to the clean URL, a tracking URL or
another page; tracking, session, http, print and mirror URLs of a page; edits; pages removed and
back; a server that honours ETags, Last-Modified dates or neither, of the page or of its text only
(a new rel=canonical keeps them), and redirects http to https;
DEDUP_CLEAN_REQUESTS, DEDUP_PREFER_CLEAN_URL, DEDUP_CANONICAL, DEDUP_REVISIT, DEDUP_UNCHANGED,
DEDUP_WINDOW, DEDUP_SCORE_THRESHOLD, DEDUP_ALLOW, DEDUP_COMMIT_BATCH and DEDUP_WORKERS changed between crawls; partial
recrawls, dry runs, crawls killed mid-way (and crawled again within the killed run's lease), a page's
preferred URL appearing where the page is stored under another (in one download batch with its copies, in any
order), a kept page naming another rel=canonical, a threshold raised after copies were dropped, index compact
and rebuild between crawls; on the cluster, crawls killed inside a commit), crawls it through the middleware,
the conditional requests, the extension and the pipeline in process (tests/crawl_model.py), and
after every crawl checks what storage must hold (tests/crawl_oracle.py: decisions, not only loss).
On LMDB and on a Redis Cluster's spread layout. benchmarks/model_crawls.py runs the same machine
longer and not derandomized; benchmarks/mutations.py reverts fixes one at a time and runs it."""

from __future__ import annotations

import itertools
import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings, target
from hypothesis.control import currently_in_test_context
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from .crawl_model import (MIRROR, Article, Model, Site, article_of, article_text, clean_url, edited,
                          variant_url, write_graded_model)
from .crawl_oracle import APART, Oracle

VARIANTS = ("tracking", "tracking2", "session", "http", "print", "mirror")
CANONICALS = (None, "clean", "tracking", "tracking", "other")
_prefixes = itertools.count()
_which = st.integers(0, 99)
SETTINGS = (  # one setting changed at a time: (name, value); the threshold and the URL rules most often
    ("DEDUP_SCORE_THRESHOLD", 0.97), ("DEDUP_SCORE_THRESHOLD", 0.97), ("DEDUP_SCORE_THRESHOLD", "auto"),
    ("DEDUP_SCORE_THRESHOLD", "auto"), ("DEDUP_PREFER_CLEAN_URL", False), ("DEDUP_PREFER_CLEAN_URL", True),
    ("DEDUP_CANONICAL", False), ("DEDUP_CANONICAL", True), ("DEDUP_CLEAN_REQUESTS", False),
    ("DEDUP_CLEAN_REQUESTS", True), ("DEDUP_ALLOW", [r"/print/"]), ("DEDUP_ALLOW", []),
    ("DEDUP_COMMIT_BATCH", 1), ("DEDUP_COMMIT_BATCH", 64), ("DEDUP_UNCHANGED", "keep"), ("DEDUP_UNCHANGED", "drop"),
    ("DEDUP_REVISIT", "keep"), ("DEDUP_REVISIT", "drop"), ("DEDUP_REVISIT", "update"), ("DEDUP_REVISIT", "update"),
    ("DEDUP_WINDOW", 1.5 * 86_400), ("DEDUP_WINDOW", 0), ("DEDUP_WINDOW", 0),
    ("DEDUP_WORKERS", 1), ("DEDUP_WORKERS", 0),  # (extraction in a worker process: its own canonical read)
)
CHANGES = st.one_of(
    st.tuples(st.just("add_article"), st.sampled_from(CANONICALS), _which),
    st.tuples(st.just("add_variant"), _which, st.sampled_from(VARIANTS)),
    st.tuples(st.just("set_canonical"), _which, st.sampled_from(CANONICALS), _which),
    st.tuples(st.just("edit"), _which),
    st.tuples(st.just("remove_url"), _which),
    st.tuples(st.just("restore_url"), _which),
    st.tuples(st.just("server"), st.booleans(), st.sampled_from(("etag", "last-modified", "both")), st.booleans()),
    st.tuples(st.just("redirects"), st.booleans()),
    st.tuples(st.just("setting"), st.sampled_from(SETTINGS)),
    st.tuples(st.just("setting"), st.sampled_from(SETTINGS)),
)

SERVER = st.tuples(st.just("server"), st.just(True), st.sampled_from(("etag", "last-modified", "both")), st.booleans())
BETWEEN = st.one_of(  # (between a kill and the next crawl: no URL removed, the killed crawl's items may be lost)
    st.tuples(st.just("edit"), _which),
    st.tuples(st.just("edit"), st.just(-1)),  # (the newest page: the one a `lead` kill cut off)
    st.tuples(st.just("set_canonical"), st.just(-1), st.sampled_from(CANONICALS), _which),  # (its canonical URL replaces it)
    st.tuples(st.just("set_canonical"), _which, st.sampled_from(CANONICALS), _which),
    st.tuples(st.just("add_variant"), _which, st.sampled_from(VARIANTS)),
)


class Crawls(RuleBasedStateMachine):
    """One site, one index, crawled again and again while the site and the settings change."""

    store: dict = {}  # the index's settings (a Redis Cluster's for the spread layout)

    def __init__(self):
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="crawl-model-"))
        store = {"DEDUP_MODEL": write_graded_model(self.folder), **type(self).store}
        if store.get("DEDUP_BACKEND") == "redis":
            store["DEDUP_REDIS_PREFIX"] = f"model-{os.getpid()}-{next(_prefixes)}"
        self.site = Site()
        self.model = Model(self.folder, self.site, store)
        self.oracle = Oracle(self.model)
        self.settings: dict = {}
        self.crawled = 0

    @property
    def lmdb(self) -> bool:
        return self.model.store_settings.get("DEDUP_BACKEND", "lmdb") == "lmdb"

    def teardown(self):
        lines = self.oracle.read
        if self.crawled and currently_in_test_context():  # (steer the search where features meet)
            crawls = self.model.crawls
            target(float(sum(len(c.removed) for c in crawls)), label="superseded")
            target(float(sum(1 for c in crawls for s in c.statuses.values() if s == 304)), label="304s")
            target(float(lines), label="drop-log lines")
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

    @initialize(canonical=st.sampled_from(CANONICALS), other=st.integers(0, 9), kind=st.sampled_from(VARIANTS),
                more=st.lists(st.tuples(st.sampled_from(CANONICALS), st.sampled_from(VARIANTS)), max_size=2),
                requests=st.sampled_from((False, False, True)))
    def start(self, canonical, other, kind, more=(), requests=True):
        """Pages and other URLs of them from the first crawl on (where features meet): the first
        page under every kind of URL but one; tracking URLs cleaned before download or not."""
        self.settings = {} if requests else {"DEDUP_CLEAN_REQUESTS": False}
        for i, (canonical, kind) in enumerate([(canonical, kind), *more]):
            n = self._article(canonical, other)
            for variant in ([v for v in VARIANTS if v != kind] if i == 0 else [kind]):
                self.site.add_url(variant_url(n, variant), n)
            if canonical == "tracking":  # (the URL its rel=canonical names is served)
                self.site.add_url(variant_url(n, "tracking"), n)

    # -- what happens to the site and the settings between two crawls ------------------------------
    def add_article(self, canonical, other):
        if len(self.site.articles) < 6:
            self._article(canonical, other)

    def add_variant(self, which, kind):
        n = 1 + which % len(self.site.articles)
        self.site.add_url(variant_url(n, kind), n)

    def set_canonical(self, which, canonical, other):
        art = self.site.articles[1 + which % len(self.site.articles)]
        if canonical == "other":
            others = [n for n in self.site.articles if n != art.number]
            canonical = f"other:{others[other % len(others)]}" if others else None
        if canonical != art.canonical:
            art.canonical, art.modified = canonical, art.modified + 1
        if canonical == "tracking":  # (a site names a URL it serves)
            self.site.add_url(variant_url(art.number, "tracking"), art.number)

    def edit(self, which):
        art = self.site.articles[1 + which % len(self.site.articles)]
        art.version += 1
        art.modified += 1
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

    def server(self, honours, validators="etag", text=False):
        self.site.honours, self.site.validators, self.site.text_validators = honours, validators, text

    def redirects(self, on):
        self.site.redirects = on

    def setting(self, named):
        name, value = named
        self.settings = {**self.settings, name: value}

    def change_settings(self, clean, canonical, revisit, unchanged, window):
        self.settings = {"DEDUP_PREFER_CLEAN_URL": clean, "DEDUP_CANONICAL": canonical, "DEDUP_REVISIT": revisit,
                         "DEDUP_UNCHANGED": unchanged, "DEDUP_WINDOW": window}

    # -- steps: a few changes, then a crawl, checked ------------------------------------------------
    def _crawl(self, order: list[str], leaf=True, item_html=False, crawlers=1, dry_run=False, width=None):
        self.oracle.before_crawl(dry_run)
        done = self.model.crawl(order, self.settings, leaf=leaf, item_html=item_html, crawlers=crawlers,
                                dry_run=dry_run, width=width)
        self.crawled += 1
        self.oracle.after(done)
        return done

    @rule(changes=st.lists(CHANGES, max_size=4), seed=st.integers(0, 2**16), leaf=st.booleans(),
          item_html=st.booleans(), racing=st.booleans(), part=st.sampled_from((1.0, 1.0, 0.5)),
          dry=st.sampled_from((False, False, False, True)))
    def crawl(self, changes, seed, leaf, item_html, racing, part, dry):
        for name, *args in changes:
            getattr(self, name)(*args)
        rnd = random.Random(seed)
        order = sorted(self.site.urls) + sorted(self.site.removed)
        rnd.shuffle(order)
        order = order[:max(1, int(len(order) * part))]  # (a partial recrawl)
        # two crawler processes at once where a store without transactions keeps groups once by claims
        crawlers = 2 if racing and not self.lmdb else 1
        self._crawl(order, leaf, item_html, crawlers, dry_run=dry and self.lmdb)

    @rule(changes=st.lists(st.one_of(CHANGES, SERVER), max_size=3), seed=st.integers(0, 2**16), asked=st.integers(1, 12),
          reached=st.sampled_from((0.0, 0.5, 1.0)), between=st.lists(BETWEEN, max_size=2), lead=st.booleans(),
          settle=st.booleans(), renamed=st.booleans(), revisit=st.sampled_from((None, None, None, "drop")),
          cut=st.sampled_from((False, False, True)), leaf=st.sampled_from((True, True, False)),
          soon=st.sampled_from((False, False, True)))
    def killed(self, changes, seed, asked, reached, between=(), lead=False, settle=False, renamed=False, revisit=None,
               cut=False, leaf=True, soon=False, inside=None):
        """A crawl killed after its first URLs (the server's validators often changed before it),
        with none, half or all of its items written to
        storage; the site edited (or not) before the same crawl again, whole: what the killed run
        filed is passed on again, and what it replaced is told to storage then. `lead`: the crawl
        starts with a new page's session and tracking URLs, then its clean URL (replacements within
        the run, told at its close, which the kill may cut off). `settle`: that crawl again, nothing
        changed, checked as settled (what the killed run wrote asks no URL in full for good).
        `renamed` (with `lead`): the new page names its tracking URL as its rel=canonical, which the
        killed crawl never met and the next crawl meets first: it replaces the page the killed run
        kept, with that run's replacements. `revisit`: DEDUP_REVISIT set so for the killed crawl and
        on (a revisit that checks no URL meeting a killed run's pages). `cut`: the kill came between
        the last URL's commit and its recording (its drop-log line, its signal, its item); on the
        spread layout, for an odd seed (or `inside`), inside that commit (half its commands sent). After the
        crawl that follows, `index verify` finds the index whole. `leaf`
        False: pages to follow links on, whose responses are kept (a killed run's page then gets a 304
        the next crawl, and is passed on again from its copy). `soon`: the crawl again a minute
        after the kill, the killed run's lease running out while the response of one of its pages
        whose item was lost is on its way (sent with its validators while the run looked alive, answered once known killed)."""
        for name, *args in changes:
            getattr(self, name)(*args)
        if revisit is not None:
            self.setting(("DEDUP_REVISIT", revisit))
        rnd = random.Random(seed)
        order = sorted(self.site.urls) + sorted(self.site.removed)
        rnd.shuffle(order)
        n = 0
        if (lead or soon) and len(self.site.articles) < 8:  # (a new page under its session and tracking URLs first)
            n = self._article("tracking" if renamed else None, 0)
            if renamed:  # (the URL it names is served, and not met before the kill)
                self.site.add_url(variant_url(n, "tracking"), n)
            first = [variant_url(n, "session"), variant_url(n, "tracking2")]
            for url in first:
                self.site.add_url(url, n)
            order = [*first, clean_url(n), *(u for u in order if article_of(u) != n)]
        if cut:  # (the kill cuts off the clean URL of a page an earlier crawl stored under another URL)
            others = sorted(u for u in self.model.storage if ("?" in u or ";" in u or u.startswith("http:"))
                            and self.site.articles[article_of(u)].canonical in (None, "clean")
                            and clean_url(article_of(u)) in self.site.urls)
            if others:
                target = clean_url(article_of(others[rnd.randrange(len(others))]))
                order = [u for u in order if u != target]
                order.insert(min(asked, len(order) + 1) - 1, target)
        self.oracle.before_crawl(False)
        self.model.elsewhere = True if soon else None  # (a lease to run out)
        leaf = leaf or soon  # (no copy kept: a 304 from a run found killed meanwhile leaves nothing to pass on)
        try:
            # (the spread layout: half its commit sent; a day before the next crawl, whose opening
            # applies it whole: within the lease of a writer in another container it is left to it)
            inside = cut and not self.lmdb and not soon and (seed % 2 if inside is None else inside)
            cut_off = self.model.crawl(order, self.settings, leaf=leaf, kill=(asked, reached, "inside" if inside else cut),
                                       width=1 if inside else None)  # (one page's commit cut, not a group's)
        finally:
            self.model.elsewhere = None
        self.oracle.after(cut_off)
        self.crawled += 1
        for name, *args in () if soon else between:  # (a minute later: the site as it was)
            getattr(self, name)(*args)
        order = sorted(set(self.site.urls) | set(order))
        rnd.shuffle(order)
        if n and renamed:
            named = variant_url(n, "tracking")
            order = [named, *(u for u in order if u != named)]
        fetched = sorted(u for u, s in cut_off.statuses.items()  # (kept by the killed run, its item lost first)
                         if s == 200 and u in self.site.urls and u != cut_off.cut
                         and u not in cut_off.dropped and u not in {r["url"] for r in cut_off.lines if r["action"] != "kept"})
        fetched = [u for u in fetched if u not in self.model.storage]  # (lost unless passed on again)
        if soon and fetched:
            late = fetched[rnd.randrange(len(fetched))]  # (met first of its page's URLs: none replaced it before)
            order.remove(late)
            order.insert(next(i for i, u in enumerate([*order, late]) if u == late or article_of(u) == article_of(late)), late)
            self.oracle.before_crawl(False)
            first = self.model.crawl(order, self.settings, leaf=leaf, gap=60.0, late=late)
            self.oracle.after(first)
            self.crawled += 1
        else:
            first = self._crawl(order, leaf)
        self._whole()
        if settle:
            self.oracle.settled(self._crawl(list(reversed(order)), leaf), first)

    def _whole(self) -> None:
        """After a kill and a crawl: `crawler-dedup index verify` (read only, as a user runs it
        after a crash) finds every entry where the kept records say: a commit cut off half-way was
        applied whole."""
        import contextlib
        import io
        import json

        from crawler_dedup.cli import main

        store = self.model.store_settings
        where = (["--redis", store["DEDUP_REDIS_URL"], "-s", f"DEDUP_REDIS_PREFIX={store['DEDUP_REDIS_PREFIX']}"]
                 if store.get("DEDUP_BACKEND") == "redis" else ["--dir", store["DEDUP_DIR"]])
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = main(["index", "verify", "--json", *where])
        said = json.loads(out.getvalue())
        assert code == 0 and said["whole"], f"index verify after a killed crawl and the crawl after: {said}"

    APPEARS = dict(canonical=st.sampled_from((None, "tracking")), kinds=st.permutations(("tracking2", "session", "http", "mirror")),
                   copies=st.sampled_from((0, 1)), place=st.sampled_from((1, 2, 0)), keep=st.booleans(),
                   kill=st.sampled_from((False, False, True)), reached=st.sampled_from((0.0, 1.0)), seed=st.integers(0, 2**16))

    @initialize(mirror=st.booleans(), **APPEARS)
    def begin(self, mirror=False, **scenario):
        """Every sequence meets one preferred URL appearing early (the rule below, later, meets the
        settings and the site as the sequence left them); `mirror`: the page stored first on the
        mirror host (a URL no request cleaning touches)."""
        if mirror:
            scenario["kinds"] = ["mirror", *(k for k in scenario["kinds"] if k != "mirror")]
        self.appears(**scenario)

    @initialize(seed=st.integers(0, 2**16), threshold=st.sampled_from((APART, 0.99)))
    def begin_threshold(self, seed, threshold):
        """And a threshold raised after the print versions were dropped as copies (a new user's
        walk: their servers answer 304): tried in a dry run first, then two crawls, the second
        checked as settled, under it; the threshold as it was from then on."""
        if not self.site.articles:  # (before `start`: a page and its print version)
            self._article(None, 0)
        self.add_variant(0, "print")
        order = sorted(self.site.urls)
        random.Random(seed).shuffle(order)
        self._crawl(order)
        saved, self.settings = self.settings, {**self.settings, "DEDUP_SCORE_THRESHOLD": threshold}
        try:
            if self.lmdb:  # (tried first in a dry run, as docs/tuning.md says: it changes nothing)
                self._crawl(order, dry_run=True)
            first = self._crawl(order)
            self.oracle.settled(self._crawl(list(reversed(order))), first)
        finally:
            self.settings = saved

    @initialize(seed=st.integers(0, 2**16), asked=st.integers(2, 8), reached=st.sampled_from((0.0, 0.5, 1.0, 1.0)),
                renamed=st.booleans(), server=st.booleans(), settle=st.booleans(), requests=st.booleans())
    def begin_killed(self, seed, asked, reached, renamed=False, server=False, settle=False, requests=True):
        """And one crawl killed in another container, its items (some, or all) lost, crawled again
        a minute later, within its lease (`killed`, `soon`); `renamed`: the new page the killed run
        replaced in turn (its rel=canonical names a URL met first next); `server`: the server's
        validators changed first (the killed run writes new ones for pages an ended run kept);
        `settle`: then checked as settled; `requests` False: tracking and session URLs downloaded as
        they are (so the killed run replaces them in turn), from then on."""
        if not requests:
            self.setting(("DEDUP_CLEAN_REQUESTS", False))
        kind = "last-modified" if self.site.validators != "last-modified" else "etag"
        self.killed(changes=[("server", True, kind, False)] if server else [], seed=seed, asked=asked,
                    reached=reached, lead=True, soon=True, renamed=renamed, settle=settle)

    @initialize(seed=st.integers(0, 2**16), asked=st.integers(3, 6), reached=st.sampled_from((0.5, 0.0)),
                revisit=st.sampled_from((None, "drop")), edit=st.sampled_from((True, False)),
                requests=st.sampled_from((False, False, True)))  # (the first value drawn most: hypothesis's simplest)
    def begin_killed_edited(self, seed, asked, reached, revisit, edit, requests):
        """And one crawl killed here, a day before the next (`killed`, `lead`): its new page met
        under its session and tracking URLs first, replaced in the run by its clean URL, its items
        (none or half) lost; the page edited or not meanwhile; under DEDUP_REVISIT=drop or not; then
        checked as settled. The settings as they were from then on."""
        saved = self.settings
        if not requests:  # (the session and tracking URLs downloaded, so replaced within the run)
            self.setting(("DEDUP_CLEAN_REQUESTS", False))
        try:
            self.killed(changes=[], seed=seed, asked=asked, reached=reached, between=[("edit", -1)] if edit else [],
                        lead=True, settle=True, revisit=revisit)
        finally:
            self.settings = saved

    @initialize(canonical=st.sampled_from((None, "tracking")), kinds=st.permutations(("tracking2", "session", "http", "mirror")),
                seed=st.integers(0, 2**16))
    def begin_repointed(self, canonical, kinds, seed):
        """And a page kept under one URL with a copy under another dropped, whose preferred URL
        appears first in one download batch beside them (`appears`): the copy's 304 dropped
        against the page replacing its own; then settled (asked again with its validators)."""
        self.appears(canonical, kinds, copies=1, place=0, keep=False, kill=False, reached=0.0, seed=seed)

    @initialize(kinds=st.permutations(("tracking2", "session", "http")), copies=st.sampled_from((0, 1)),
                seed=st.integers(0, 2**16))
    def begin_passed_on(self, kinds, copies, seed):
        """And, under DEDUP_UNCHANGED=keep, a page kept on the mirror host passed on again unchanged,
        then replaced in the same download batch by the URL its rel=canonical names (`appears`)."""
        self.appears("tracking", ["mirror", *kinds], copies=copies, place=1, keep=True, kill=False, reached=0.0,
                     seed=seed)

    @initialize(seed=st.integers(0, 2**16), which=_which, canonical=st.sampled_from(("tracking", "other", None)))
    def begin_renamed(self, seed, which, canonical):
        """And a kept page, its copies dropped, that names another rel=canonical with the same text
        (its tracking URL, another page, or none), then two crawls checked as settled."""
        if not self.site.articles:  # (before `start`: a page and a copy of its own)
            self._article(None, 0)
            self.add_variant(0, "tracking2")
        order = sorted(self.site.urls)
        random.Random(seed).shuffle(order)
        self._crawl(order)
        self.set_canonical(which, canonical, seed)
        order = sorted(self.site.urls)  # (the URL it names may be served only now)
        random.Random(seed + 1).shuffle(order)
        first = self._crawl(order)
        self.oracle.settled(self._crawl(list(reversed(order))), first)

    @rule(**APPEARS)
    def appears(self, canonical, kinds, copies, place, keep, kill, reached, seed):
        """A page's preferred URL appears where the page is stored under another (the clean URL, or
        the URL its rel=canonical names, first served now): one crawl stores the page under a
        variant (a copy under another URL dropped, or not), the next meets the preferred URL beside
        them, in any order, in one download batch, so one group commit (under DEDUP_UNCHANGED=keep
        or not; or killed right after the preferred URL's commit, then crawled again whole); then
        the same crawl again, nothing changed, checked as settled."""
        if len(self.site.articles) >= 10:
            return
        n = self._article(canonical, 0)
        preferred = variant_url(n, "tracking") if canonical else clean_url(n)
        del self.site.urls[clean_url(n)]  # (served from the next crawl on, when preferred)
        met = [variant_url(n, kind) for kind in kinds[:1 + copies]]
        for url in met:
            self.site.add_url(url, n)
        rnd = random.Random(seed)
        order = sorted(self.site.urls)
        rnd.shuffle(order)
        self._crawl(order)
        self.site.add_url(preferred, n)
        if canonical:  # (its clean URL served again too, a copy of the page its rel=canonical names)
            self.site.add_url(clean_url(n), n)
        rest = [u for u in sorted(self.site.urls) if u not in met and u != preferred]
        rnd.shuffle(rest)
        first = list(met)
        first.insert(min(place, len(first)), preferred)  # (the preferred URL before, between or after them)
        order = [*first, *rest]
        settings = {**self.settings, **({"DEDUP_UNCHANGED": "keep"} if keep else {})}
        if kill:  # (right after the preferred URL's commit: nothing of it recorded)
            self.oracle.before_crawl(False)
            self.oracle.after(self.model.crawl(order, settings, kill=(first.index(preferred) + 1, reached, True)))
            self.crawled += 1
        saved, self.settings = self.settings, settings
        try:
            before = self._crawl(order, width=3)
            self.oracle.settled(self._crawl(order, width=3), before)
        finally:
            self.settings = saved

    @rule(seed=st.integers(0, 2**16), named=st.one_of(st.none(), st.sampled_from(SETTINGS), st.sampled_from(SETTINGS[:4])),
          changes=st.lists(CHANGES, max_size=2))  # (a threshold changed often: known copies must follow it)
    def settle(self, seed, named=None, changes=()):
        """One setting changed (or none) and a few changes of the site, then two full crawls with
        nothing changed between them: the second decides as a fresh index would under the settings
        in force, and stores the preferred URLs (a new rel=canonical's, a loosened threshold's)."""
        for name, *args in changes:
            getattr(self, name)(*args)
        if named is not None:
            self.setting(named)
        order = sorted(self.site.urls)
        random.Random(seed).shuffle(order)
        first = self._crawl(order)
        self.oracle.settled(self._crawl(list(reversed(order))), first)

    @precondition(lambda self: self.lmdb and (Path(self.model.store_settings["DEDUP_DIR"]) / "data.mdb").exists())
    @rule(how=st.sampled_from(("compact", "rebuild")))
    def maintain(self, how):
        """Index maintenance between crawls changes no decision."""
        from crawler_dedup.cli import main

        assert main(["index", how, "--dir", self.model.store_settings["DEDUP_DIR"], "--yes"]) == 0

    @invariant()
    def nothing_lost(self):
        if self.crawled:
            assert {a for a, _ in self.model.storage.values()} >= self.oracle.seen - self.oracle.waiting


class ClusterCrawls(Crawls):
    """On a Redis Cluster, crawlers at once also race on a page rewritten (claims decide)."""

    @initialize(seed=st.integers(0, 2**16), asked=st.integers(2, 6), reached=st.sampled_from((0.0, 0.5, 1.0)),
                lead=st.sampled_from((True, False)), requests=st.sampled_from((False, True)))
    def begin_cut_inside(self, seed, asked, reached, lead, requests):
        """And a crawler killed inside a commit, half its commands sent (`killed`, `cut`), crawled
        again a day later: that crawl's opening applies the commit whole, from its journal;
        `requests` False: the new page's session and tracking URLs downloaded as they are (so the
        commit cut may be one replacing another). The settings as they were from then on."""
        saved = self.settings
        if not requests:
            self.setting(("DEDUP_CLEAN_REQUESTS", False))
        try:
            self.killed(changes=[], seed=seed, asked=asked, reached=reached, lead=lead, cut=True, inside=True)
        finally:
            self.settings = saved

    @precondition(lambda self: self.crawled)
    @rule(which=_which, seed=st.integers(0, 2**16))
    def race_update(self, which, seed):
        """A kept page rewritten and a new copy of it on the mirror host, crawled at once by two
        crawlers, each starting with one of them: the update and its copy race (whichever claims
        first stays; an update that withdraws leaves its URL to the page's earlier record)."""
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
        self._crawl([*first, *rest], crawlers=2)


def run_machine(store: dict, examples: int, steps: int, machine: type[Crawls] = Crawls):
    machine.store = store
    test = machine.TestCase
    shrink = () if os.environ.get("CRAWL_MODEL_NO_SHRINK") else (Phase.shrink, Phase.explain)
    test.settings = settings(max_examples=examples, stateful_step_count=steps, deadline=None,
                             suppress_health_check=list(HealthCheck), derandomize=True,
                             phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, *shrink))
    test().runTest()


def test_sequences_of_crawls_on_lmdb():
    run_machine({}, examples=int(os.environ.get("CRAWL_MODEL_EXAMPLES", 40)), steps=10)


def test_sequences_of_crawls_on_the_spread_layout(redis_cluster):
    pytest.importorskip("redis")
    run_machine({"DEDUP_BACKEND": "redis", "DEDUP_REDIS_URL": redis_cluster},
                examples=int(os.environ.get("CRAWL_MODEL_EXAMPLES", 40)) // 4, steps=8, machine=ClusterCrawls)


# -- the sequences the machine found or the issue named, kept as examples ---------------------------

def _site(canonical: str | None, *kinds: str) -> Site:
    site = Site()
    site.articles[1] = Article(1, article_text(1009), canonical=canonical)
    site.add_url(clean_url(1), 1)
    for kind in kinds:
        site.add_url(variant_url(1, kind), 1)
    return site


def _checked(model: Model, oracle: Oracle, order: list[str], settings: dict):
    """A crawl of `order`, the tracking URLs downloaded as they are (no DEDUP_CLEAN_REQUESTS), checked."""
    oracle.before_crawl(False)
    done = model.crawl(order, {"DEDUP_CLEAN_REQUESTS": False, **settings})
    oracle.after(done)
    return done


@pytest.mark.parametrize("first", [{}, {"DEDUP_PREFER_CLEAN_URL": False}])
def test_a_known_copys_304_keeps_the_page_its_canonical_names(tmp_path, first):
    """The site's rel=canonical names a tracking URL: crawl 1 keeps it and drops the clean URL as
    its copy. Crawl 2 (the clean-URL rule on, as it was or newly): the clean URL's 304 used to
    replace the tracking URL (storage removed it), then the clean URL came back as its own
    unchanged revisit: neither URL was stored."""
    model = Model(tmp_path, _site("tracking", "tracking"))
    oracle = Oracle(model)
    _checked(model, oracle, [variant_url(1, "tracking"), clean_url(1)], first)
    assert set(model.storage) == {variant_url(1, "tracking")}
    second = _checked(model, oracle, [clean_url(1), variant_url(1, "tracking")], {})
    # (dropped under other deciding settings, the copy is asked again in full and decided from its text)
    assert set(model.storage) == {variant_url(1, "tracking")} and second.statuses[clean_url(1)] == (200 if first else 304)


def test_a_known_copy_that_is_now_the_cleaner_url_replaces_the_kept_page_from_its_full_page(tmp_path):
    """DEDUP_PREFER_CLEAN_URL off in crawl 1: the clean URL was dropped as the tracking URL's copy.
    On in crawl 2: its 304 cannot replace the kept page (nothing of it was downloaded, its own
    rel=canonical is not known): it is asked again in full, and its 200 replaces the kept page, as
    storage is told. Crawl 3: both answer 304, nothing changes."""
    model = Model(tmp_path, _site(None, "tracking"))
    oracle = Oracle(model)
    _checked(model, oracle, [variant_url(1, "tracking"), clean_url(1)], {"DEDUP_PREFER_CLEAN_URL": False})
    assert set(model.storage) == {variant_url(1, "tracking")}
    second = _checked(model, oracle, [clean_url(1), variant_url(1, "tracking")], {})
    assert set(model.storage) == {clean_url(1)} and second.removed == [(variant_url(1, "tracking"), clean_url(1))]
    third = _checked(model, oracle, [clean_url(1), variant_url(1, "tracking")], {})
    assert set(model.storage) == {clean_url(1)} and set(third.statuses.values()) == {304}


def test_a_crawl_killed_after_a_cleaner_url_replaced_a_page_it_kept_is_told_again(tmp_path):
    """Found by the machine once it killed crawls: a crawl keeps a tracking URL, then its clean URL
    replaces it; the signal for a page kept earlier in the same crawl waits for the spider's close
    (its item may still be on its way to storage), and the crawl is killed first, with the
    tracking URL's item written and the clean URL's lost. The next crawl passed the clean URL on
    again but never told storage to remove the tracking URL: both stayed. The page passed on again
    carries the replacement it made."""
    model = Model(tmp_path, _site(None, "tracking2"))
    oracle = Oracle(model)
    tracking = variant_url(1, "tracking2")
    oracle.after(model.crawl([tracking, clean_url(1)], {"DEDUP_CLEAN_REQUESTS": False}, kill=(2, 0.5)))
    assert set(model.storage) == {tracking}
    again = _checked(model, oracle, [tracking, clean_url(1)], {})
    assert set(model.storage) == {clean_url(1)} and (tracking, clean_url(1)) in again.removed


def test_a_killed_crawls_chain_of_replacements_is_told_whole(tmp_path):
    """Found by the machine: a killed crawl kept a tracking URL, a cleaner tracking URL replaced it,
    then the canonical URL replaced that one, each signal waiting for the close; storage got the
    first URL's item only. The page passed on again told storage of the URL it replaced, not of
    the one before: the first URL stayed beside it. A record carries the chain."""
    model = Model(tmp_path, _site("clean", "tracking", "tracking2"))
    oracle = Oracle(model)
    first, cleaner = variant_url(1, "tracking2"), variant_url(1, "tracking")
    oracle.after(model.crawl([first, cleaner, clean_url(1)], {"DEDUP_CLEAN_REQUESTS": False}, kill=(3, 0.34)))
    assert set(model.storage) == {first}
    _checked(model, oracle, [first, cleaner, clean_url(1)], {})
    assert set(model.storage) == {clean_url(1)}


def test_a_page_whose_rel_canonical_changes_is_filed_again_so_the_url_it_names_replaces_it(tmp_path):
    """Found by the machine: the clean URL kept, its tracking URL dropped as its copy; the site
    then names the tracking URL as canonical. The clean URL's text was unchanged, so its record
    kept no canonical and the tracking URL stayed a copy for good. A new rel=canonical is an update."""
    model = Model(tmp_path, _site(None, "tracking"))
    oracle = Oracle(model)
    order = [clean_url(1), variant_url(1, "tracking")]
    _checked(model, oracle, order, {})
    assert set(model.storage) == {clean_url(1)}
    art = model.site.articles[1]
    art.canonical, art.modified = "tracking", art.modified + 1
    _checked(model, oracle, order, {})
    _checked(model, oracle, order, {})
    assert set(model.storage) == {variant_url(1, "tracking")}


@pytest.mark.parametrize("edit", [False, True])
def test_a_killed_crawls_page_is_passed_on_again_under_revisit_drop(tmp_path, edit):
    """Found by the machine: DEDUP_REVISIT=drop checks no URL, so a page filed by a killed crawl
    (its item never written) was dropped the next crawl as a copy of its own URL: lost. Edited
    since, it was a near copy of itself (a review's find): a killed run's page is a revisit there."""
    model = Model(tmp_path, _site(None))
    oracle = Oracle(model)
    drop = {"DEDUP_REVISIT": "drop"}
    oracle.after(model.crawl([clean_url(1)], drop, kill=(1, 0.0)))
    assert model.storage == {}
    if edit:
        art = model.site.articles[1]
        art.version, art.modified, art.text = art.version + 1, art.modified + 1, edited(art.text, 7)
    _checked(model, oracle, [clean_url(1)], drop)
    assert set(model.storage) == {clean_url(1)}


def test_a_url_whose_entry_a_killed_crawl_wrote_is_asked_with_its_validators_again():
    """Found by the machine: a killed crawl rewrote a URL's validators (the server changed them)
    while its kept page, filed by a crawl that ended, was not passed on again; the entry named
    the killed run, so every later request for it went out unconditional: downloaded in full
    on every crawl (the settled crawls' check: nothing downloaded again where the server answers 304)."""
    Crawls.store = {}
    machine = Crawls()
    try:
        machine.start(canonical=None, other=0, kind="tracking", more=[], requests=False)
        machine.settle(named=None, seed=0)
        machine.killed(asked=9, changes=[("add_article", None, 0), ("redirects", False)], reached=0.0, seed=0)
        machine.crawl(changes=[("set_canonical", 78, None, 58), ("server", False, "both"), ("add_variant", 79, "tracking"),
                               ("server", True, "last-modified")], dry=True, item_html=True, leaf=False, part=1.0,
                      racing=False, seed=9729)
        machine.killed(asked=9, changes=[], reached=1.0, seed=1157)
        machine.crawl(changes=[], dry=False, item_html=False, leaf=False, part=0.5, racing=False, seed=86)
        machine.settle(named=None, seed=925)
        assert set(machine.model.crawls[-1].statuses.values()) == {304}
    finally:
        machine.teardown()


def test_a_loosened_threshold_reaches_a_known_copy_whose_server_answers_304(tmp_path):
    """A new user's walk: a print version dropped as a near copy under one threshold; the threshold
    raised after reading the drop log, the server answered the copy's conditional request with 304
    and the kept page's fingerprint stood in for it ("similarity 1.0, not-modified"). A copy
    dropped under other deciding settings is asked again in full and kept, as a fresh index keeps it."""
    model = Model(tmp_path, _site(None, "print"), {"DEDUP_MODEL": write_graded_model(tmp_path)})
    oracle = Oracle(model)
    _checked(model, oracle, [clean_url(1), variant_url(1, "print")], {})
    assert set(model.storage) == {clean_url(1)}
    loose = {"DEDUP_SCORE_THRESHOLD": 0.97}
    second = _checked(model, oracle, [clean_url(1), variant_url(1, "print")], loose)
    assert second.statuses[variant_url(1, "print")] == 200 and set(model.storage) == {clean_url(1), variant_url(1, "print")}
    third = _checked(model, oracle, [clean_url(1), variant_url(1, "print")], loose)
    assert set(third.statuses.values()) == {304}


def test_a_window_turned_on_then_off_on_the_spread_layout_leaves_one_value_a_key(redis_cluster):
    """Found by the machine on the spread layout: a page kept without DEDUP_WINDOW, then, the
    window on, out of it and kept again (its entries in the window's generations of shards), then
    read without the window: its URL's entry in the plain shards still named the record that
    left (a put wrote the newest place only), and `index verify` found the index broken. Entries
    are read in every generation an index was ever written in, and a put clears the others."""
    from crawler_dedup import Deduplicator
    from crawler_dedup.core.index.integrity import verify

    Crawls.store = {"DEDUP_BACKEND": "redis", "DEDUP_REDIS_URL": redis_cluster}
    machine = Crawls()
    try:
        machine.start(canonical=None, other=0, kind="tracking")  # (the page and a tracking URL)
        steps = [[("edit", 0)], [("add_article", None, 0), ("change_settings", True, True, "update", "drop", 129600.0)],
                 [], [("change_settings", True, True, "update", "drop", 0)]]
        for i, changes in enumerate(steps):
            machine.crawl(changes=changes, seed=21 if i == 0 else 0, leaf=i == 0, item_html=False, racing=False,
                          part=1.0, dry=False)
        cfg = {k.removeprefix("DEDUP_").lower(): v for k, v in machine.model.store_settings.items()}
        with Deduplicator(**cfg) as d:
            assert d.index is not None
            report = verify(d.index)
            assert report.ok, report.problems
    finally:
        machine.teardown()
        Crawls.store = {}


@pytest.mark.parametrize("order", ["tracking first", "clean only"])
def test_a_killed_crawls_replacement_is_told_when_its_page_comes_back_edited(tmp_path, order):
    """A killed crawl kept a tracking URL, then its clean URL replaced it (the signal waiting for the
    close), storage got the tracking URL's item only. The site edits the page before the next crawl:
    the clean URL comes back as an update, not unchanged, and storage must still be told."""
    model = Model(tmp_path, _site(None, "tracking2"))
    oracle = Oracle(model)
    tracking = variant_url(1, "tracking2")
    oracle.after(model.crawl([tracking, clean_url(1)], {"DEDUP_CLEAN_REQUESTS": False}, kill=(2, 0.5)))
    assert set(model.storage) == {tracking}
    art = model.site.articles[1]
    art.version, art.modified, art.text = art.version + 1, art.modified + 1, edited(art.text, 7)
    again = _checked(model, oracle, [tracking, clean_url(1)] if order == "tracking first" else [clean_url(1)], {})
    assert set(model.storage) == {clean_url(1)} and (tracking, clean_url(1)) in again.removed


def test_a_crawl_killed_in_another_container_is_passed_on_again(tmp_path):
    """A killed crawl's open-run marker as another container leaves it (another hostname, a pid
    alive here): known killed once its lease ran out, so its update, never stored, is passed on
    again by the next crawl a day later."""
    model = Model(tmp_path, _site(None))
    oracle = Oracle(model)
    _checked(model, oracle, [clean_url(1)], {})
    art = model.site.articles[1]
    art.version, art.modified, art.text = art.version + 1, art.modified + 1, edited(art.text, 7)
    oracle.after(model.crawl([clean_url(1)], {}, kill=(1, 0.0)))  # (run 2: the marker of another container)
    assert model.storage[clean_url(1)] == (1, 0)
    _checked(model, oracle, [clean_url(1)], {})
    assert model.storage[clean_url(1)] == (1, 1)


def test_a_killed_runs_copy_answered_304_within_its_lease_may_be_asked_in_full_once_after():
    """Found by a nightly run (an oracle error): a print version kept apart under a raised
    threshold, the threshold back, then a crawl killed in another container, whose run wrote the
    print version's entry as a copy's; the crawl a minute later met it while the run still looked
    alive (304), the next, knowing the run killed, asked it in full once (a killed run's copy entry
    is asked again): one download, not a crawl that never settles."""
    machine = Crawls()
    try:
        machine.begin(place=1, keep=False, kinds=["tracking2", "session", "http", "mirror"], copies=0, mirror=False,
                      canonical=None, kill=False, reached=0.0, seed=3)
        machine.begin_killed(seed=0, asked=2, reached=0.0, requests=False)
        machine.begin_threshold(seed=7, threshold=0.97)
        machine.start(kind="tracking", other=0, canonical=None, more=[], requests=False)
        machine.killed(asked=11, changes=[], reached=0.0, seed=231, settle=True, soon=True)
        assert set(machine.model.crawls[-1].statuses.values()) <= {200, 304}
    finally:
        machine.teardown()


def test_each_mutation_of_the_mutation_check_still_reverts_one_place_of_the_package():
    """benchmarks/mutations.py edits the package's source by text: each edit must still meet the
    line it reverts, once, and each test it names must exist (code moves; the check must not go blind)."""
    import importlib.util
    import sys

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "mutations.py"
    spec = importlib.util.spec_from_file_location("mutations", path)
    assert spec is not None and spec.loader is not None
    mutations = importlib.util.module_from_spec(spec)
    sys.modules["mutations"] = mutations  # (its dataclass looks its module up)
    try:
        spec.loader.exec_module(mutations)
    finally:
        del sys.modules["mutations"]
    root = path.parent.parent
    for m in mutations.MUTATIONS:
        source = (mutations.PKG / m.path).read_text(encoding="utf-8")
        assert source.count(m.old) == 1, f"{m.name}: its line is in {m.path} {source.count(m.old)} times"
        for test in m.tests.split():
            file, _, name = test.partition("::")
            assert (root / file).exists() and (not name or f"def {name}(" in (root / file).read_text()), (m.name, test)


def test_a_tracking_url_the_site_names_as_canonical_is_revisited_under_clean_requests(tmp_path):
    """Found by the machine's stricter one-URL check: the site's rel=canonical names a tracking
    URL, kept as the page; DEDUP_CLEAN_REQUESTS then sent that URL as the clean one, so it was
    never asked again, and each edit of the page was dropped as a near copy of the version kept
    under it: storage held the first version for good. A URL the index keeps is asked as it is."""
    model = Model(tmp_path, _site("tracking", "tracking"))
    oracle = Oracle(model)
    tracking = variant_url(1, "tracking")
    _checked(model, oracle, [tracking, clean_url(1)], {})
    assert set(model.storage) == {tracking}
    art = model.site.articles[1]
    art.version, art.modified, art.text = art.version + 1, art.modified + 1, edited(art.text, 7)
    oracle.before_crawl(False)
    done = model.crawl([tracking, clean_url(1)], {"DEDUP_CLEAN_REQUESTS": True})
    oracle.after(done)
    assert model.storage == {tracking: (1, 1)} and done.statuses[tracking] == 200


def test_a_killed_crawls_replacement_is_told_when_its_page_is_replaced_in_turn(tmp_path):
    """Found by the machine: a killed crawl kept a tracking URL, then its clean URL replaced it
    (the signal waiting for the close, lost with the kill), every item written. The next crawl
    meets the URL the site's rel=canonical names first: it replaces the clean URL, whose record
    carried the replacement it had made, and went with it: the first tracking URL stayed stored."""
    model = Model(tmp_path, _site("tracking", "tracking", "tracking2"))
    oracle = Oracle(model)
    first, named = variant_url(1, "tracking2"), variant_url(1, "tracking")
    oracle.after(model.crawl([first, clean_url(1)], {"DEDUP_CLEAN_REQUESTS": False}, kill=(2, 1.0)))
    assert set(model.storage) == {first, clean_url(1)}
    again = _checked(model, oracle, [named, first, clean_url(1)], {})
    assert set(model.storage) == {named} and (first, named) in again.removed


def test_a_killed_crawls_replacement_is_told_after_the_second_look_on_the_spread_layout(redis_cluster):
    """Found by the machine on the spread layout: a killed crawl kept a page's session URL, then its
    clean URL replaced it (the signal lost with the kill); before the next crawl the page names
    another rel=canonical, so the clean URL is filed again (an update). Its first look told storage
    of the session URL, but the claim's second look decided again and its verdict, which did not,
    was the one used: both URLs stayed stored. The second look tells it as the first did."""
    Crawls.store = {"DEDUP_BACKEND": "redis", "DEDUP_REDIS_URL": redis_cluster}
    machine = Crawls()
    try:
        machine.start(requests=True, other=6, kind="print", canonical=None, more=[(None, "tracking")])
        machine.killed(asked=10, between=[("set_canonical", 47, "other", 36), ("add_variant", 50, "http")],
                       changes=[("redirects", False), ("remove_url", 1)], lead=True, reached=1.0, seed=738)
        assert not [u for u in machine.model.storage if ";jsessionid=" in u and "/a3" in u]
    finally:
        machine.teardown()
        Crawls.store = {}


def test_a_killed_crawls_page_whose_copy_cannot_be_read_is_passed_on_after_its_304(tmp_path):
    """A 304 for a page a killed crawl filed (its item never written; a page to follow links on,
    whose copy is kept) whose stored copy cannot be read (it rotted, or went meanwhile): the page
    is downloaded again and passed on, not dropped as this run's unchanged page (lost)."""
    from crawler_dedup import Deduplicator
    from crawler_dedup.core.index.records import url_key

    model = Model(tmp_path, _site(None))
    oracle = Oracle(model)
    url = clean_url(1)
    plain = {"DEDUP_CLEAN_REQUESTS": False}
    oracle.after(model.crawl([url], plain, leaf=False, kill=(1, 0.0)))  # (a page to follow links on: its copy kept)
    assert model.storage == {}
    with Deduplicator(dir=model.store_settings["DEDUP_DIR"]) as dedup:
        kept, killed = dedup.fetch_entry(url)
        assert killed and kept.copy is not None
        kept.copy = b"not zlib"
        dedup.index.write(lambda txn: txn.fetch_put(url_key(url), kept.encode()))
    oracle.before_crawl(False)
    done = model.crawl([url], plain, leaf=False)
    oracle.after(done)
    assert done.statuses[url] == 200 and set(model.storage) == {url}


def test_a_known_copys_304_dropped_against_the_page_replacing_its_own_names_that_page_after(tmp_path):
    """Found by the long run: a known copy's entry names the page it copies; in one group commit that
    page is replaced (the URL the site's rel=canonical names comes first) and the copy's 304 is
    dropped against the replacing page. Its entry, unchanged, still named the record gone, so the
    next crawl, with nothing changed, downloaded the copy in full again. A copy's 304 dropped against
    another record than its entry's names that record from then on."""
    model = Model(tmp_path, _site("tracking", "tracking", "tracking2", "session", "http"))
    oracle = Oracle(model)
    named, feed = variant_url(1, "tracking"), variant_url(1, "tracking2")
    _checked(model, oracle, [feed, clean_url(1)], {})  # (the clean URL replaces the feed URL, its entry a copy's)
    assert set(model.storage) == {clean_url(1)}
    order = [named, feed, clean_url(1), variant_url(1, "session"), variant_url(1, "http")]  # (three at once)
    first = _checked(model, oracle, order, {})
    assert first.statuses[feed] == 304 and set(model.storage) == {named}
    oracle.before_crawl(False)
    again = model.crawl(order, {"DEDUP_CLEAN_REQUESTS": False})
    oracle.after(again)
    oracle.settled(again, first)
    assert again.statuses[feed] == 304 and feed not in again.stored


def test_a_page_passed_on_unchanged_then_replaced_in_the_same_crawl_leaves_storage(tmp_path):
    """Found by the long run: under DEDUP_UNCHANGED=keep a kept mirror page was passed on again,
    unchanged; in the same downloads the URL its rel=canonical names (served again now) replaced it.
    Its record was an earlier run's, so storage was told at once, before the mirror's item got
    there: the item came after the deletion and both URLs stayed stored. A page passed on again is
    this run's: the replacement is told at the close, after its item."""
    model = Model(tmp_path, _site("tracking", "mirror", "session", "http"))
    oracle = Oracle(model)
    mirror, named = variant_url(1, "mirror"), variant_url(1, "tracking")
    keep = {"DEDUP_UNCHANGED": "keep"}
    _checked(model, oracle, [mirror, clean_url(1)], keep)  # (the URL it names is not served yet)
    assert set(model.storage) == {mirror}
    model.site.add_url(named, 1)
    done = _checked(model, oracle, [mirror, named, clean_url(1), variant_url(1, "session"), variant_url(1, "http")], keep)
    assert (mirror, named) in done.removed and set(model.storage) == {named}


def test_a_crawl_killed_between_a_replacements_commit_and_its_telling_tells_it_after(tmp_path):
    """Found by the fault run: a crawler kept a page's clean URL, which replaced the tracking URL
    another crawl had kept, and was killed after the commit, before the drop-log line and the
    signal (told at once for an earlier crawl's page, not held to the close). Run again, the clean
    URL was passed on again, but only a replacement made in its own run was told: both URLs stayed
    stored and no `superseded` line said why. The replacing page's record carries it either way."""
    model = Model(tmp_path, _site(None, "tracking"))
    oracle = Oracle(model)
    tracking = variant_url(1, "tracking")
    _checked(model, oracle, [tracking], {})
    # (killed right after the clean URL's commit: nothing of it recorded, no item stored)
    oracle.after(model.crawl([clean_url(1)], {"DEDUP_CLEAN_REQUESTS": False}, kill=(1, 0.0, True)))
    assert set(model.storage) == {tracking}
    again = _checked(model, oracle, [clean_url(1), tracking], {})
    assert (tracking, clean_url(1)) in again.removed and set(model.storage) == {clean_url(1)}


def test_a_page_replacing_one_of_a_crawl_killed_elsewhere_before_its_lease_ran_out_tells_that_crawls_replacements(tmp_path):
    """Found by the machine once a crawl could start again within a killed crawl's lease: a crawl
    in another container kept a page's session URL, then its feed URL, then its clean URL, each
    replacing the one before (the signals held for its close, lost with the kill; every item
    written). A minute later the next crawl meets the URL the page's rel=canonical names first: it
    replaced the clean URL, but the killed run still looked alive (its lease had not run out), so
    its replacements were left for its close, which never came: three URLs of the page stayed."""
    model = Model(tmp_path, _site("tracking", "tracking", "tracking2", "session"))
    oracle = Oracle(model)
    session, feed, named = variant_url(1, "session"), variant_url(1, "tracking2"), variant_url(1, "tracking")
    model.elsewhere = True
    oracle.after(model.crawl([session, feed, clean_url(1)], {"DEDUP_CLEAN_REQUESTS": False}, kill=(3, 1.0)))
    model.elsewhere = None
    assert set(model.storage) == {session, feed, clean_url(1)}
    oracle.before_crawl(False)
    done = model.crawl([named, session, feed, clean_url(1)], {"DEDUP_CLEAN_REQUESTS": False}, gap=60.0)
    oracle.after(done)
    assert set(model.storage) == {named}


def test_a_killed_crawls_page_whose_304_comes_after_its_lease_ran_out_is_passed_on_from_its_full_page():
    """Found by the machine: a crawl in another container kept a page (a leaf: no copy) and was
    killed before its item was stored; the next crawl, a minute later, sent the page's validators
    (the run looked alive) and the lease ran out before its 304 was decided. The decision passed it
    on again (the run was killed) and made its record this run's, but with nothing to pass on the
    page was asked again in full, and that response was this run's unchanged page: dropped, and
    dropped by every crawl after. The 304 now asks in full first and leaves the record to that run."""
    machine = Crawls()
    try:
        machine.start(more=[(None, "http"), ("clean", "print")], kind="tracking", requests=True, other=3, canonical="clean")
        machine.begin_killed(asked=7, seed=65535, reached=0.0)
        machine.begin(canonical=None, reached=1.0, kill=False, kinds=["http", "tracking2", "session", "mirror"],
                      place=0, keep=False, seed=65536, copies=0)
        assert 2 in {a for a, _ in machine.model.storage.values()}
    finally:
        machine.teardown()
