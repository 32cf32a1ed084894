"""Sequences of crawls, model-checked: hypothesis generates a small site and what happens to it
between crawls (pages added with and without rel=canonical, to the clean URL, a tracking URL or
another page; tracking, session, http, print and mirror URLs of a page; edits; pages removed and
back; a server that honours ETags, Last-Modified dates or neither, of the page or of its text only
(a new rel=canonical keeps them), and redirects http to https;
DEDUP_CLEAN_REQUESTS, DEDUP_PREFER_CLEAN_URL, DEDUP_CANONICAL, DEDUP_REVISIT, DEDUP_UNCHANGED,
DEDUP_WINDOW, DEDUP_SCORE_THRESHOLD, DEDUP_ALLOW, DEDUP_COMMIT_BATCH and DEDUP_WORKERS changed between crawls; partial
recrawls, dry runs, crawls killed mid-way (and crawled again within the killed run's lease), a page's
preferred URL appearing where the page is stored under another (in one download batch with its copies, in any
order), a kept page naming another rel=canonical, a threshold raised after copies were dropped, a page and
its copy met after the page left DEDUP_WINDOW or `index expire`, index compact, rebuild, remove, expire and
add and `restore --allow` between crawls; on the cluster, crawls killed inside a commit, one of two racing crawlers
killed at its page's second look, and a node stalled during a crawl), crawls it through the middleware,
the conditional requests, the extension and the pipeline in process (tests/crawl_model.py), and
after every crawl checks what storage must hold (tests/crawl_oracle.py: decisions, not only loss);
the index maintenance between crawls is tests/crawl_maintenance.py's.
On LMDB here, on a Redis Cluster's spread layout in tests/test_crawl_model_cluster.py.
benchmarks/model_crawls.py runs the same machine longer and not derandomized; benchmarks/mutations.py
reverts fixes one at a time and runs it."""

from __future__ import annotations

import itertools
import os
import random
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, Phase, settings, target
from hypothesis.control import currently_in_test_context
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from .crawl_model import (DAY, Article, Model, Site, article_of, article_text, clean_url, edited,
                          variant_url, write_graded_model)
from .crawl_maintenance import CANONICALS, Maintenance, _which
from .crawl_oracle import APART, Oracle

VARIANTS = ("tracking", "tracking2", "session", "http", "print", "mirror")
_prefixes = itertools.count()
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


class Crawls(Maintenance, RuleBasedStateMachine):
    """One site, one index, crawled again and again while the site and the settings change."""

    store: dict = {}  # the index's settings (a Redis Cluster's for the spread layout)

    def __init__(self):
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="crawl-model-"))
        store = {"DEDUP_MODEL": write_graded_model(self.folder), **type(self).store}
        if store.get("DEDUP_BACKEND") == "redis":
            # (the same keys, so the same slots, each run: a cut commit's half is a draw of the sequence, not of the pid)
            store["DEDUP_REDIS_PREFIX"] = f"model-{next(_prefixes)}"
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
        spread layout, for an odd seed (or `inside`), inside that commit (half its commands sent: the
        first half, the second for `inside` "last"). After the
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
            cut_off = self.model.crawl(order, self.settings, leaf=leaf, kill=(asked, reached, ("inside-last" if inside == "last" else "inside") if inside else cut),
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
            if not leaf:
                self.oracle.after_kill(cut_off, first)
        self._whole()
        if settle:
            self.oracle.settled(self._crawl(list(reversed(order)), leaf), first)

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

    @initialize(how=st.sampled_from(("window", "expire")), first=st.sampled_from(("copy", "revisit")))
    def begin_out_of_index(self, how, first):
        """And a page and its mirror copy (dropped) crawled, then, two days later, one of them alone
        once the page has left the index: kept longer ago than DEDUP_WINDOW (1.5 days; still in the
        file), or taken out by `index expire`. The copy is kept, the revisit asked without its
        validators and kept again: neither is dropped against the page that left (`Oracle._no_match_past`)."""
        n = self._article(None, 0)
        page, copy = clean_url(n), variant_url(n, "mirror")
        self.site.add_url(copy, n)
        self._crawl([page, copy])
        settings = self.settings
        if how == "expire" and self.lmdb:  # (the spread layout keeps no time index to expire by)
            self.expire(older=False)
        else:
            settings = {**settings, "DEDUP_WINDOW": 1.5 * DAY}
        self.oracle.before_crawl(False)
        self.oracle.after(self.model.crawl([copy if first == "copy" else page], settings, gap=2 * DAY))
        self.crawled += 1

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
                requests=st.sampled_from((False, False, True)),  # (the first value drawn most: hypothesis's simplest)
                meets=st.sampled_from(("server", "renamed", None)))
    def begin_killed_edited(self, seed, asked, reached, revisit, edit, requests, meets=None):
        """And one crawl killed here, a day before the next (`killed`, `lead`): its new page met
        under its session and tracking URLs first, replaced in the run by its clean URL, its items
        (none or half) lost; the page edited or not meanwhile; under DEDUP_REVISIT=drop or not; then
        checked as settled. `meets` what two fixes guard: "server", the server's validators changed
        first, so the killed run writes new ones for pages ended runs kept (asked as far as them);
        "renamed", the new page names its tracking URL as canonical, which the next crawl meets first
        and which replaces the page the killed run kept (half its items written, `killed`'s `renamed`).
        The settings as they were from then on."""
        saved = self.settings
        if not requests:  # (the session and tracking URLs downloaded, so replaced within the run)
            self.setting(("DEDUP_CLEAN_REQUESTS", False))
        kind = "last-modified" if self.site.validators != "last-modified" else "etag"
        if meets == "server":
            asked = 6
        elif meets == "renamed":
            asked, reached = 3, 0.5
        try:
            self.killed(changes=[("server", True, kind, False)] if meets == "server" else [], seed=seed, asked=asked,
                        reached=reached, between=[("edit", -1)] if edit else [], lead=True, settle=True,
                        revisit=revisit, renamed=meets == "renamed")
        finally:
            self.settings = saved

    @initialize(place=st.sampled_from((1, 2, 0)), keep=st.booleans(), reached=st.sampled_from((0.0, 1.0)),
                seed=st.integers(0, 2**16))
    def begin_killed_appears(self, place, keep, reached, seed):
        """And a page's clean URL appearing beside its stored tracking URL and a copy of it, the
        crawl killed right after the clean URL's commit (`appears`, `kill`): the replacement it
        committed, never told, is told by the crawl after."""
        self.appears(None, ["tracking2", "session", "http", "mirror"], copies=1, place=place, keep=keep, kill=True,
                     reached=reached, seed=seed)

    @initialize(seed=st.integers(0, 2**16), asked=st.integers(2, 8), reached=st.sampled_from((0.0, 0.5, 1.0)),
                lead=st.booleans())
    def begin_killed_kept(self, seed, asked, reached, lead):
        """And one crawl of pages to follow links on (their responses kept) killed, crawled again a
        day later (`killed`): each page it kept is asked with its validators, and a 304 passes it on
        from its kept response, never downloaded again (`Oracle.after_kill`)."""
        self.killed(changes=[], seed=seed, asked=asked, reached=reached, lead=lead, leaf=False)

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

    @invariant()
    def nothing_lost(self):
        if self.crawled:
            assert {a for a, _ in self.model.storage.values()} >= self.oracle.seen - self.oracle.waiting


def run_machine(store: dict, examples: int, steps: int, machine: type[Crawls] = Crawls):
    machine.store = store
    test = machine.TestCase
    shrink = () if os.environ.get("CRAWL_MODEL_NO_SHRINK") else (Phase.shrink, Phase.explain)
    test.settings = settings(max_examples=examples, stateful_step_count=steps, deadline=None,
                             suppress_health_check=list(HealthCheck), derandomize=True,
                             phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, *shrink))
    test().runTest()


# (a beginning is a step too: the steps leave room for every beginning and a few rules after them)
def test_sequences_of_crawls_on_lmdb():
    run_machine({}, examples=int(os.environ.get("CRAWL_MODEL_EXAMPLES", 40)), steps=16)
