"""The index as a user maintains it between crawls, for the crawl model (tests/test_crawl_model.py
mixes these rules in): `crawler-dedup index compact`, `rebuild`, `expire`, `add` and `remove`, and
`restore` (a dropped page taken back and allow-listed), each through the CLI as a user runs it, and
`index verify` after a kill or a race."""

from __future__ import annotations

import contextlib
import io
import json
import time
from pathlib import Path
from unittest import mock

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from crawler_dedup.cli import main

from .crawl_model import DAY, variant_url
from .crawl_oracle import DROPS, allowed

CANONICALS = (None, "clean", "tracking", "tracking", "other")
_which = st.integers(0, 99)


class Maintenance:
    """Rules of a `Crawls` machine (its model, site, oracle and settings)."""

    def _where(self) -> list[str]:
        """The index as the CLI names it."""
        store = self.model.store_settings
        return (["--redis", store["DEDUP_REDIS_URL"], "-s", f"DEDUP_REDIS_PREFIX={store['DEDUP_REDIS_PREFIX']}"]
                if store.get("DEDUP_BACKEND") == "redis" else ["--dir", store["DEDUP_DIR"]])

    def _whole(self) -> None:
        """After a kill and a crawl, or a race: `crawler-dedup index verify` (read only, as a user
        runs it after a crash) finds every entry where the kept records say: a commit cut off
        half-way was applied whole, a page that withdrew left its URL's entry to the page before."""
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = main(["index", "verify", "--json", *self._where()])
        said = json.loads(out.getvalue())
        assert code == 0 and said["whole"], f"index verify after a killed crawl and the crawl after, or a race: {said}"

    @precondition(lambda self: self.lmdb and (Path(self.model.store_settings["DEDUP_DIR"]) / "data.mdb").exists())
    @rule(how=st.sampled_from(("compact", "rebuild")))
    def maintain(self, how):
        """Index maintenance between crawls changes no decision."""
        assert main(["index", how, "--dir", self.model.store_settings["DEDUP_DIR"], "--yes"]) == 0

    @precondition(lambda self: self.lmdb and (Path(self.model.store_settings["DEDUP_DIR"]) / "data.mdb").exists())
    @rule(older=st.booleans())
    def expire(self, older):
        """`crawler-dedup index expire --window W` between crawls, half a day after the last
        (an index no crawl writes to now, docs/recrawls.md): every page kept before the cut-off leaves
        the index, all of them or (`older`) those before the last day's crawls. No drop may name
        one of them until a crawl keeps it again; a copy met first is kept (excused: one URL a page)."""
        times = sorted({c.at for c in self.model.crawls if not c.dry_run})
        now = times[-1] + DAY / 2
        earlier = [t for t in times if t < times[-1] - 7200] if older else []  # (a cut-off an hour from any crawl)
        cutoff = (earlier[-1] + times[-1]) / 2 if earlier else times[-1] + DAY / 4
        real = time.time
        with (mock.patch("time.time", lambda: real() + now), contextlib.redirect_stdout(io.StringIO()),
              contextlib.redirect_stderr(io.StringIO())):
            code = main(["index", "expire", "--window", str(int(now - cutoff)), *self._where(), "--yes"])
        assert code == 0, code
        self.oracle.after_expire(cutoff)
        self._whole()

    @precondition(lambda self: self.lmdb and len(self.site.articles) < 10)
    @rule(canonical=st.sampled_from(CANONICALS), other=_which)
    def add_corpus(self, canonical, other):
        """`crawler-dedup index add pages.jsonl` between crawls: a user's earlier corpus (a new
        page under its mirror URL, with its HTML, which storage holds) filed into the index. The
        crawls after drop the page's other URLs against it (or replace it by its rel=canonical
        URL), and meet the mirror URL itself as a revisit, checked as any page a crawl kept."""
        n = self._article(canonical, other)
        url = variant_url(n, "mirror")
        self.site.add_url(url, n)
        corpus = self.folder / f"corpus-{n}.jsonl"
        corpus.write_text(json.dumps({"url": url, "html": self.site.body(url).decode()}) + "\n", encoding="utf-8")
        now, real, out, err = self.model.clock.offset, time.time, io.StringIO(), io.StringIO()  # (at the model's time)
        with (mock.patch("time.time", lambda: real() + now), contextlib.redirect_stdout(out),
              contextlib.redirect_stderr(err)):
            code = main(["index", "add", "--json", str(corpus), "--jobs", "1", *self._where(), *self._settings_args()])
        assert code == 0 and json.loads(out.getvalue())["added"] == 1, (code, out.getvalue(), err.getvalue())  # (a new page's text)
        self.model.storage[url] = (n, self.site.articles[n].version)
        self.oracle.after_add(url, now)

    def _settings_args(self) -> list[str]:
        """The deciding settings in force, as `-s` options of the CLI."""
        def text(v) -> str:  # (a whole float as an int: DEDUP_WINDOW=129600, as a user writes it)
            return str(int(v)) if isinstance(v, float) and v.is_integer() else v if isinstance(v, str) else json.dumps(v)

        return [a for k, v in self.settings.items() if k.startswith("DEDUP_") for a in ("-s", f"{k}={text(v)}")]

    @precondition(lambda self: self.crawled and self.model.storage)
    @rule(which=_which)
    def unindex(self, which):
        """`crawler-dedup index remove URL` between crawls, a user's answer to a wrong match
        (docs/inspecting.md): the page's URL is kept as new when next met and its copies are kept
        from then on, so that page may be stored under two URLs (excused, that page only); nothing
        lost, every drop naming a page in storage, and `index verify` finds the index whole."""
        stored = sorted(self.model.storage)
        url = stored[which % len(stored)]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = main(["index", "remove", url, *self._where(), "--yes"])
        assert code in (0, 1), code  # (1: no page kept under it, an allow-listed print URL passed unchecked)
        if code == 0:
            self.oracle.unindexed.add(self.model.storage[url][0])
        self._whole()

    @precondition(lambda self: self.crawled)
    @rule(which=_which)
    def restore(self, which):
        """`crawler-dedup restore --url U --allow-file F` between crawls: a user takes back a page
        dropped as a copy (its item written back to storage) and allow-lists its URL (docs/inspecting.md).
        Restored: that URL's item only (none for a copy dropped on a 304: no text, stored by the
        next crawl); its pattern allows that URL and no other the site ever served; from then on it
        is stored beside its page (excused: allow-listed), never dropped."""
        latest = {r["url"]: (r, c) for c in self.model.crawls for r in c.lines if r["action"] == "dropped"}
        drops = {u: c for u, (r, c) in latest.items() if r["reason"] in DROPS}  # (restored from its latest drop)
        urls = sorted(u for u in drops if u in self.site.urls and u not in self.model.storage
                      and not allowed(self.settings, u))
        if not urls:
            return
        url = urls[which % len(urls)]
        out, allow = self.folder / "restored.jsonl", self.folder / "allow.txt"
        before = allow.read_text(encoding="utf-8").splitlines() if allow.exists() else []
        err = io.StringIO()
        with contextlib.redirect_stdout(err), contextlib.redirect_stderr(io.StringIO()):
            code = main(["restore", "--log", str(self.model.droplog), "--url", url, "--action", "dropped",
                         "-o", str(out), "--allow-file", str(allow)])  # (not a dry run's flagged lines)
        assert code == 0, code
        items = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines() if x.strip()]
        on_304 = latest[url][0].get("measure") == "not-modified"  # (no text: allow-listed, kept next crawl)
        assert [i["url"] for i in items] == ([] if on_304 else [url]), (url, items, err.getvalue())
        patterns = [p for p in allow.read_text(encoding="utf-8").splitlines()[len(before):] if p.strip()]
        assert patterns, "no DEDUP_ALLOW pattern for the restored URL"
        wide = sorted(u for u in self.site.order if u != url and allowed({"DEDUP_ALLOW": patterns}, u))
        assert allowed({"DEDUP_ALLOW": patterns}, url) and not wide, (url, patterns, wide)
        self.settings = {**self.settings, "DEDUP_ALLOW": [*(self.settings.get("DEDUP_ALLOW") or ()), *patterns]}
        if not on_304:
            self.model.storage[url] = drops[url].served[url]
        self.oracle.tags[url] = "restored and allow-listed by the user"
