"""What storage must hold after each model crawl (tests/crawl_model.py), known from the site the
model generated and the settings each crawl ran with: never from the code under test. It reads
only what a user gets: the items stored, the page_superseded signals, the drop-log lines, and the
index's file bytes (a dry run must leave them as they were).

After every crawl (`Oracle.after`):
- nothing lost: every article a crawl was served has a URL in storage;
- each drop names the same page (the article in the dropped URL is the one in `duplicate_of`),
  and `duplicate_of`, followed through the replacements storage was told of, is in storage;
  an unchanged revisit's URL too; each URL storage was told to remove has its superseded line;
- one URL a page: two URLs of one article (whatever versions they carry: an older version under
  another URL is the page stored twice) are in storage only for a reason the oracle names (a
  print version and its page when either was stored while the threshold kept them apart, a
  print URL stored while allow-listed, a DEDUP_WINDOW that let pages expire, a URL that answers
  404 now: a limit named in docs/recrawls.md; the page a crawler killed inside its commit was
  deciding: filed from its journal, it never had its second look, a limit named in
  docs/distributed.md; a page whose kept page a user took out of the index, whose copies are
  kept from then on, docs/inspecting.md; a URL a store error kept unchecked, until a crawl checks
  it: a lasting reason it had before stands again then);
- the newest version: a stored URL answered 200 in this crawl holds what it served (revisits
  update or keep);
- a page out of the index (taken out by `index expire`, or kept longer ago than the crawl's
  DEDUP_WINDOW, known from the model's clock) is named by no drop, not even its own URL's
  unchanged revisit, until a crawl keeps it again;
- an allow-listed URL (DEDUP_ALLOW, a user's `restore --allow` among them) is never dropped;
- a near copy is never dropped under a threshold that keeps it apart (a print version under a score threshold of 0.97);
- a dry run leaves storage, signals and the index's file as they were, and flags (never drops);
- two crawlers at once (the cluster): nothing lost, each drop against the same page; what they
  stored of a page one of whose URLs the race superseded is tagged, and their drops are not followed into storage. OPEN, found by the model:
  crawler B's page_superseded for a page crawler A kept can come before A's item reaches storage
  (the signal is sent at once across runs), and a page the other crawler's claim withdraws after
  it superseded a URL leaves that URL's line naming a page never stored: two URLs of a page stay;
- a killed crawl (some of its items never written) is checked by the whole crawl after it: the
  pages it was served are stored then, under one URL each; by the first crawl after its lease ran
  out when the crawl after starts within it (the run looks alive: its pages met before the lease
  ran out are left to it), those met after it (or whose response came after it) at once; a URL
  its drop log says it replaced (the signal lost with it) is no revisit's old item left beside
  the page: storage must be told of it once the page comes back, unchanged or edited.
The whole crawl a day after a killed one of pages kept with their responses (`Oracle.after_kill`):
none the killed run kept, their server's validators unchanged, is downloaded again (a 304 passes it on).
After two full crawls with the same settings and no change (`Oracle.settled`):
- the second downloads nothing again where the server answers validators (LMDB keeps copies),
  but a URL first downloaded longer ago than DEDUP_CONDITIONAL_MAX_AGE (30 days; its entry's
  full download may be that old);
- the preferred URL is stored: the one the article's rel=canonical names (DEDUP_CANONICAL), else
  the cleanest of its URLs (DEDUP_PREFER_CLEAN_URL: no session parameter, https, fewer tracking
  parameters, a shorter query, a shorter URL), unless a mirror or print copy of it stands for it;
- under a score threshold of 0.97 every print version is stored, as a fresh index would keep it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from .crawl_model import HOST, MIRROR, Crawled, Model, article_of, clean_url, is_print, variant_url

APART = 0.97  # a DEDUP_SCORE_THRESHOLD under which a print version (resemblance ~0.75) is no copy
# docs/recrawls.md: a revisit whose new text copies another URL's kept page is dropped, and the
# URL's old entry stays, as storage still holds its old item (a page twice, by design)
REVISIT_COPY = "a revisit now a copy of another URL's page: its old item stays"
MAX_AGE = 30 * 86_400  # DEDUP_CONDITIONAL_MAX_AGE's default (docs/settings.md): then a URL is downloaded in full
UNCHECKED = "kept unchecked: a store error, named in the crawl's log"
DROPS = ("exact", "near", "conceptual")


def _score_threshold(cfg: dict) -> float:
    value = cfg.get("DEDUP_SCORE_THRESHOLD", "auto")
    return 0.5 if value == "auto" else float(value)  # (auto: the graded model's own, 0.5)


def allowed(cfg: dict, url: str) -> bool:
    """DEDUP_ALLOW's patterns, searched for in the URL (docs/settings.md): passed on unchecked."""
    return any(re.search(p, url) for p in cfg.get("DEDUP_ALLOW") or ())


def rank(url: str) -> tuple:
    """The oracle's own order of one page's URLs, cleanest first."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query)
    session = sum(1 for k, _ in query if "session" in k.lower()) + (";jsessionid=" in parts.path)
    tracking = sum(1 for k, _ in query if k.startswith("utm_"))
    return session, parts.scheme != "https", tracking, len(parts.query), len(url), url


def index_bytes(model: Model) -> str | None:
    data = Path(model.store_settings["DEDUP_DIR"]) / "data.mdb"
    if model.store_settings.get("DEDUP_BACKEND", "lmdb") != "lmdb" or not data.exists():
        return None
    return hashlib.sha256(data.read_bytes()).hexdigest()


class Oracle:
    def __init__(self, model: Model):
        self.model = model
        self.seen: set[int] = set()  # articles a crawl was served (200 or 304)
        self.left: set[int] = set()  # articles of a killed run's pages met while its lease still hid the kill
        self.waiting: set[int] = set()  # those not in storage (see `after`)
        self.replaced: dict[str, str] = {}  # URL -> the URL storage was told replaced it
        self.tags: dict[str, str] = {}  # stored URL -> why it may stand beside another URL of its page
        self.beneath: dict[str, str] = {}  # URL stored unchecked -> its reason from before, which stands again once checked
        self.owed: set[str] = set()  # URLs a killed run's drop log says it replaced, storage not told yet
        self.halved: set[int] = set()  # articles a crawler killed inside a commit was deciding (see `after`)
        self.unindexed: set[int] = set()  # articles whose kept page a user took out (`index remove`): copies kept since
        self.windowed = False
        self.added: list[tuple[float, int]] = []  # (the model's clock, article) of each page `index add` filed
        self.expired: dict[int, set[str]] = {}  # articles `index expire` took out whole -> their URLs kept since
        self.versions: dict[int, int] = {}  # article -> the version a crawl was last served
        self.stored_before: dict[str, tuple[int, int]] = {}  # storage after the last crawl checked
        self.filed: set[str] = set()  # stored URLs that were kept as pages (not passed unchecked)
        self.apart: set[str] = set()  # URLs stored while the score threshold kept print versions apart
        self.read = 0  # drop-log lines read so far
        self.learned: dict[int, str | None] = {}  # article -> its rel=canonical when last downloaded in full
        self.before: tuple | None = None  # (storage, index bytes) before a dry run
        self.full: dict[str, float] = {}  # URL -> the model's clock when first answered 200

    # -- helpers ---------------------------------------------------------------------------
    def follow(self, url: str) -> str:
        seen = set()
        while url in self.replaced and url not in seen:
            seen.add(url)
            url = self.replaced[url]
        return url

    def new_lines(self) -> list[dict]:
        path = self.model.droplog
        if not path.exists():
            return []
        lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        new, self.read = lines[self.read:], len(lines)
        return new

    def before_crawl(self, dry_run: bool) -> None:
        self.before = (dict(self.model.storage), index_bytes(self.model)) if dry_run else None

    # -- after every crawl -------------------------------------------------------------------
    def after(self, done: Crawled) -> None:
        lines = done.lines = self.new_lines()
        if done.dry_run:
            return self._dry(done, lines)
        cfg = done.settings
        self._no_match_past(done, lines)
        self.windowed = bool(cfg.get("DEDUP_WINDOW"))  # (this crawl's; what it stored stays tagged)
        threshold = _score_threshold(cfg)
        for old, new in done.removed:  # (in order: a URL that replaces another is kept from then on)
            self.owed.discard(old)
            self.replaced[old] = new
            self.replaced.pop(new, None)
            self.tags.pop(old, None)
            self.beneath.pop(old, None)
            if old in self.apart:  # (the page stored apart from its print version, under its new URL now)
                self.apart.discard(old)
                self.apart.add(new)
        if done.crawlers > 1:  # (open: a supersede from one crawler can come before the other's item, see
            # above: only a page one of whose URLs the race superseded)
            raced = {article_of(r["url"]) for r in lines if r.get("reason") == "superseded"}
            self.tags.update({u: "stored while two crawlers raced" for u in done.stored if article_of(u) in raced})
        if self.windowed:  # (a page downloaded in full that long ago may have left the index: a copy of it may be kept again)
            out, _ = self._full(done.at - float(cfg["DEDUP_WINDOW"]) + 3600, but=done)
            self.tags.update({u: "stored while DEDUP_WINDOW let pages expire" for u in self.model.storage if article_of(u) in out})
        for url in done.stored:
            if url in done.unchecked:  # (a store error: kept as it came, named in the log; a copy may stand beside it)
                self._for_now(url, UNCHECKED)
                continue
            self._until_now(url, UNCHECKED)  # (checked and kept now)
            if not allowed(cfg, url):
                self.filed.add(url)  # (checked and kept: a page of the index that later copies match)
            if allowed(cfg, url):
                self.tags[url] = "stored while allow-listed"
            elif threshold >= APART:
                self.apart.add(url)  # (stored while print versions and their pages were two pages)
        for url in done.stored:
            self.owed.discard(url)  # (kept again: its item is this crawl's)
            self._until_now(url, REVISIT_COPY)
        if done.inside and done.cut:  # (a page filed from a killed writer's journal never had its second
            # look: what it replaces stays kept beside it, a group kept twice; docs/distributed.md)
            self.halved.add(article_of(done.cut))
        if done.killed:  # (its replacements were told at its close, which never came)
            self.owed |= {r["url"] for r in lines if r.get("reason") == "superseded"} - {old for old, _ in done.removed}
        for r in lines:  # (a stored URL whose new version copies another URL's page: dropped, its old item stays)
            url = r["url"]
            if (r["action"] == "dropped" and r["reason"] in DROPS and url in self.model.storage and url not in self.owed
                    and url in done.served and done.served[url] != self.model.storage[url]):
                self._for_now(url, REVISIT_COPY)
        lined = {r["url"] for r in done.lines}  # (a killed crawl's kept pages: fetched, never dropped)
        for url, status in done.statuses.items():
            if (status == 200 and url in self.model.site.urls and not is_print(url)
                    and (url in self.model.storage or (done.killed and url not in lined))):  # (a kept page in full)
                n = self.model.site.urls[url]
                canonical = self.model.site.articles[n].canonical
                if n in self.learned and self.learned[n] != canonical:
                    done.recanonical.add(n)  # (its kept page filed again: an update of the index only)
                self.learned[n] = canonical
        now = self.model.clock.offset
        # (DEDUP_CONDITIONAL_MAX_AGE counts from the full download its entry recorded, which only an
        # unchanged one past half that age renews, and none under DEDUP_REVISIT=drop: the oracle
        # cannot tell when, so a URL first downloaded that long ago may be downloaded again)
        for url, status in done.statuses.items():
            if status == 200:
                if now - self.full.setdefault(url, now) > MAX_AGE - 2 * 86_400:
                    done.aged.add(url)
        for article, version in done.served.values():
            if self.versions.get(article, version) != version:
                done.changed.add(article)
            self.versions[article] = version
        self.seen |= {a for a, _ in done.served.values()}
        storage = self.model.storage
        done.updated = {storage[u][0] for u in done.stored if u in storage and u in self.stored_before
                        and self.stored_before[u] != storage[u]}
        self.stored_before = dict(storage)
        if done.killed:  # (what it passed on may be lost: the next whole crawl is checked for it)
            for r in lines:
                assert r["action"] == "kept" or article_of(r["url"]) == article_of(r["duplicate_of"]), r
            return
        have = {a for a, _ in storage.values()}
        # a crawl started within a killed run's lease takes it for alive until the lease runs out: a
        # page that run kept (its item lost), met before then, is left to it as an unchanged revisit,
        # and passed on again by the first crawl after (docs/recrawls.md); met after, now
        # (a whole crawl after the lease passed them on again, and told what that run replaced; a
        # partial one may meet only a copy)
        self.left = (set() if done.full else self.left) | {article_of(u) for u in done.early}
        self.waiting = self.left - have
        lost = sorted(self.seen - have - self.waiting)
        assert not lost, f"articles with no URL in storage: {lost}; storage {sorted(storage)}"
        self._lines(done, lines, threshold)
        self._one_url_a_page()
        if cfg.get("DEDUP_REVISIT", "update") != "drop" and not self.windowed:
            for url, status in done.statuses.items():
                if (status == 200 and url in storage and url in done.served and url not in self.tags
                        and url not in done.dropped):  # (a revisit now a copy of another URL: dropped, its old item stays)
                    assert storage[url] == done.served[url], (
                        f"{url} served version {done.served[url][1]} this crawl, storage holds {storage[url][1]}")

    def _lines(self, done: Crawled, lines: list[dict], threshold: float) -> None:
        storage = self.model.storage
        signalled = {old for old, _ in done.removed}
        told = {r["url"] for r in lines if r.get("reason") == "superseded"}
        assert signalled <= told, f"left storage without a superseded line: {signalled - told}"
        named = {(r["url"], r["duplicate_of"]) for r in lines if r.get("reason") == "superseded"}
        assert set(done.removed) <= named, f"a signal names another replacement than its line: {set(done.removed) - named}"
        for r in lines:
            if r["action"] == "kept":
                continue
            assert r["action"] == "dropped", f"a {r['action']} line outside a dry run: {r}"
            url, dup, reason = r["url"], r["duplicate_of"], r["reason"]
            assert reason == "superseded" or not allowed(done.settings, url), f"{url} allow-listed, dropped ({reason})"
            assert article_of(url) == article_of(dup), f"{url} dropped ({reason}) against another page: {dup}"
            # (`dup` met before a killed run's lease ran out is that run's page, left to it: its
            # item comes with the first crawl after, docs/recrawls.md)
            if ((reason in DROPS or reason in ("unchanged", "superseded")) and done.crawlers == 1
                    and article_of(url) not in self.waiting and url not in done.early and dup not in done.early):
                assert self.follow(dup) in storage, (
                    f"{url} dropped ({reason}, rule {r.get('rule')}) against {dup} -> {self.follow(dup)}, "
                    f"not in storage {sorted(storage)}")
            if reason in DROPS and is_print(url) != is_print(dup) and threshold >= APART:
                assert False, f"{url} dropped ({reason}, {r.get('measure')}) as a copy of {dup} under threshold {threshold}"
            if reason == "superseded":
                assert url in signalled, f"a superseded line for {url} but storage was not told"

    def _for_now(self, url: str, tag: str) -> None:
        """A reason that lasts until the URL is checked and kept again; a lasting one from before
        (a copy kept beside it while DEDUP_WINDOW let pages expire, say) stands again then."""
        if self.tags.get(url, tag) not in (UNCHECKED, REVISIT_COPY):
            self.beneath[url] = self.tags[url]
        self.tags[url] = tag

    def _until_now(self, url: str, tag: str) -> None:
        if self.tags.get(url) == tag:
            del self.tags[url]
            if url in self.beneath:
                self.tags[url] = self.beneath.pop(url)

    def _one_url_a_page(self) -> None:
        if self.windowed:
            return  # (a page that left the index's window is kept again under another URL)
        by_page: dict[int, list[str]] = defaultdict(list)  # (an older version under another URL: twice too)
        gone = self.model.site.removed  # (a URL that answers 404 now: its page stays kept under it, the
        # index never learns of the 404; the page's live URLs are its copies until edits drift apart)
        for url, (article, _) in self.model.storage.items():  # (a killed run's replacements left to it: told later)
            if url not in self.tags and url not in gone and article not in self.left | self.halved | self.unindexed:
                by_page[article].append(url)
        # a print version and its page are two pages when either was stored while the threshold said so
        twice = {k: sorted(v) for k, v in by_page.items()
                 if max(sum(1 for u in v if is_print(u) == p) for p in (True, False)) > 1
                 or (len(v) > 1 and not self.apart & set(v))}
        assert not twice, f"one page stored under two URLs, for no reason the model knows: {twice}"

    def _dry(self, done: Crawled, lines: list[dict]) -> None:
        assert self.before is not None
        storage, data = self.before
        assert not done.removed, f"a dry run told storage to remove {done.removed}"
        assert self.model.storage == storage, "a dry run changed storage"
        assert all(r["action"] in ("flagged", "kept") for r in lines), [r for r in lines if r["action"] == "dropped"]
        assert index_bytes(self.model) == data, "a dry run changed the index's file"

    # -- pages out of the index: `index expire`, DEDUP_WINDOW ------------------------------------
    def _full(self, cutoff: float, but: Crawled | None = None) -> tuple[set[int], set[int]]:
        """Articles downloaded in full (so perhaps filed, at the crawl's time on the model's
        clock) by a crawl that started before `cutoff`, and those by a crawl at or after it."""
        before: set[int] = set()
        since: set[int] = set()
        for at, n in self.added:
            (before if at < cutoff else since).add(n)
        for c in self.model.crawls:
            if not c.dry_run and c is not but:
                (before if c.at < cutoff else since).update(article_of(u) for u, s in c.statuses.items() if s == 200)
        return before, since

    def after_add(self, url: str, at: float) -> None:
        """`index add` filed `url` (storage holds it) at `at` on the model's clock: a page of the
        index, as one a crawl kept."""
        n = article_of(url)
        self.added.append((at, n))
        self.filed.add(url)
        self.seen.add(n)
        self.stored_before[url] = self.model.storage[url]
        self.learned.setdefault(n, self.model.site.articles[n].canonical)  # (its HTML shows the rel=canonical)

    def after_expire(self, cutoff: float) -> None:
        """`index expire` took out every page kept before `cutoff` (the model's clock): an article
        downloaded in full only before it left whole (no drop may name it until kept again); one
        downloaded before it may be kept again beside its stored URL when a copy comes first."""
        before, since = self._full(cutoff)
        self.unindexed |= before
        self.expired.update({a: set() for a in before - since})

    def _no_match_past(self, done: Crawled, lines: list[dict]) -> None:
        """A page out of the index (expired, or kept longer ago than this crawl's DEDUP_WINDOW: it
        stops matching at once, docs/recrawls.md) is named by no drop, not even as its own URL's
        unchanged revisit, until a crawl keeps it again."""
        gone = self.expired
        window = float(done.settings.get("DEDUP_WINDOW") or 0)
        if window:  # (an hour either side: a crawl's real seconds never reach it)
            before, since = self._full(done.at - window - 3600, but=done)
            gone = {**{a: set() for a in before - since}, **gone}
        dropped = {r["url"] for r in lines if r["action"] == "dropped" and r["reason"] != "superseded"}  # (kept, then replaced)
        for url, status in done.statuses.items():
            if status == 200 and url not in dropped and article_of(url) in gone:
                gone[article_of(url)].add(url)
        for r in lines:
            n = article_of(r["duplicate_of"]) if r["action"] == "dropped" and r["reason"] != "superseded" else None
            assert n not in gone or r["duplicate_of"] in gone[n], (
                f"{r['url']} dropped ({r['reason']}) against {r['duplicate_of']}, a page out of the index "
                f"({'expired' if n in self.expired else f'kept more than DEDUP_WINDOW={window:g} s ago'}) not kept since "
                f"(answered {done.statuses.get(r['duplicate_of'])} this crawl)")

    # -- after a killed crawl and the whole crawl after it ----------------------------------------
    def after_kill(self, killed: Crawled, done: Crawled) -> None:
        """The crawl a day after a kill: a page the killed run downloaded and kept (its response
        kept: pages to follow links on), its server's validators the same since, is asked with them
        and its 304 passes it on again from the copy kept, never downloaded again (docs/recrawls.md)."""
        site, cfg = self.model.site, done.settings
        if (not site.honours or self.model.store_settings.get("DEDUP_BACKEND", "lmdb") != "lmdb" or done.dry_run
                or self.windowed or cfg.get("DEDUP_REVISIT", "update") != "update" or killed.late is not None):
            return
        lined = {r["url"]: r for r in killed.lines}
        kept = [u for u, s in killed.statuses.items() if s == 200 and u in site.urls and u != killed.cut
                and u not in killed.dropped and lined.get(u, {}).get("action", "kept") == "kept"
                and not allowed(cfg, u)]
        # (replaced in this crawl before its response was decided: its 304 names a record gone, asked
        # in full once more, as `settled` allows for a page its crawl replaced)
        replaced = {r["url"] for r in done.lines if r["reason"] == "superseded"}
        again = sorted(u for u in kept if done.statuses.get(u) == 200 and done.validators[u] == killed.validators[u]
                       and u not in done.aged and u not in replaced)
        assert not again, f"a killed run's kept pages downloaded again the day after, nothing changed: {again}"

    # -- after two full crawls with the same settings ------------------------------------------
    def settled(self, done: Crawled, before: Crawled) -> None:
        cfg = done.settings
        if done.dry_run or self.windowed or cfg.get("DEDUP_REVISIT", "update") != "update":
            return
        storage, site = self.model.storage, self.model.site
        if (site.honours and self.model.store_settings.get("DEDUP_BACKEND", "lmdb") == "lmdb"
                and cfg.get("DEDUP_UNCHANGED", "drop") == "drop"):  # (`keep` passes a leaf's body on again)
            # nothing changed since `before`: every page it downloaded (kept, a copy, a replaced
            # URL) is asked with its validators and answered 304, none downloaded again
            # (a copy dropped against a page that its crawl then updated or replaced names a record
            # that left: it is asked in full once more, a download, not a wrong decision)
            replaced = {old for old, _ in before.removed}
            stale = {r["url"] for r in before.lines if r["duplicate_of"] in replaced}
            # (a page updated then, or filed again for a new rel=canonical: its copies' entries
            # name the record the update replaced)
            stale |= {u for u in done.statuses if u in site.urls and site.urls[u] in before.updated | before.recanonical}
            # (answered while a killed run still looked alive: its copies' entries, which a crawl
            # knowing it killed asks in full once more, as killed runs' entries are)
            stale |= before.early
            again = sorted(u for u, s in done.statuses.items() if s == 200 and before.statuses.get(u) in (200, 304)
                           and not allowed(cfg, u) and site.urls.get(u) not in before.changed
                           and u not in stale and u not in done.aged)
            assert not again, f"downloaded again with nothing changed (the server answers 304): {again}"
        threshold = _score_threshold(cfg)
        fetched = {u for u, s in done.statuses.items() if s in (200, 304) and u in site.urls}
        for n, art in site.articles.items():
            mine = [u for u in fetched if site.urls[u] == n]
            copies = [u for u in mine if is_print(u) or urlsplit(u).hostname == MIRROR]
            same = [u for u in mine if u not in copies and urlsplit(u).hostname == HOST]
            if threshold >= APART:
                for url in (u for u in copies if is_print(u) and not allowed(cfg, u)):
                    assert url in storage, f"{url} is no copy under threshold {threshold} (a fresh index keeps it)"
            if not same:
                continue
            if self.learned.get(n, art.canonical) != art.canonical:
                continue  # (validators of the text only kept answering 304: no crawl was shown its rel=canonical)
            named = {"clean": clean_url(n), "tracking": variant_url(n, "tracking")}.get(art.canonical or "")
            # (a URL gone from the site stays kept, in the index and in storage: it is still a candidate)
            kept = [u for u in storage if article_of(u) == n and urlsplit(u).hostname == HOST and not is_print(u)]
            if cfg.get("DEDUP_CANONICAL", True) and (named in same or named in kept):
                want = named
            elif cfg.get("DEDUP_PREFER_CLEAN_URL", True):
                want = min(same + kept, key=rank)
            else:
                continue
            stands = [u for u in storage if article_of(u) == n and u in self.filed
                      and (is_print(u) or urlsplit(u).hostname == MIRROR)]  # (a copy kept first stands for it)
            assert want in storage or stands, (f"article {n}: {want} is its preferred URL (canonical {art.canonical}, "
                                               f"settings {cfg}); storage holds {sorted(u for u in storage if article_of(u) == n)}")
