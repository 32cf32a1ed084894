"""DEDUP_* settings parsed and checked once, from Scrapy settings or any mapping.

SETTINGS is the one list of them (each a setting.Setting, whose kind says how it is checked): crawler_dedup/defaults.py, DedupConfig's defaults, the checks in
DedupConfig._checked and the settings page docs/settings.md (scripts/settings_table.py) all come from it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..exceptions import ConfigError

from .setting import (
    AUTO_BOOL,
    AUTO_FLOAT,
    BACKEND,
    BACKENDS,
    BOOL,
    CHOICE,
    FIELD,
    FLOAT,
    INT,
    MAX_K,
    PATH,
    REGEXES,
    TEXT,
    URL,
    VERIFIER,
    VERIFIER_NAMES,
    WORKERS,
    Setting,
)

# In the settings page's order: ENABLED first, the rest alphabetical.
SETTINGS: tuple[Setting, ...] = (
    Setting("DEDUP_ENABLED", BOOL, True, doc=(
        "turn the add-on off without removing it")),
    Setting("DEDUP_ALLOW", REGEXES, [], doc=(
        "URL regexes that are never checked nor dropped: a list, or on the command line `^a,^b` or a JSON "
        "list (`'[\"x{1,3}\"]'` for patterns with commas)")),
    Setting("DEDUP_ALLOW_FILE", PATH, None, doc=(
        "a file of more `DEDUP_ALLOW` regexes, one a line (`#` starts a comment; `crawler-dedup restore "
        "--allow-file` appends to it); a relative path is looked for in the project's data folder (`.scrapy/`), "
        "then beside `scrapy.cfg`, then in the current folder; a file not found stops the crawl at start")),
    Setting("DEDUP_BACKEND", BACKEND, "lmdb", choices=BACKENDS, doc=(
        "`lmdb` (on disk, shared by processes on one machine), `memory` (lost at exit), `redis` (shared "
        "by processes on many machines: `DEDUP_REDIS_URL`; `pip install \"crawler-dedup[redis]\"`), or a dotted path "
        "to a store class")),
    Setting("DEDUP_BOILERPLATE", BOOL, False, doc=(
        "learn boilerplate from the markup too: each kept page files the lines it shows outside its main text, "
        "and the share of a page's text in such lines counts in the measurement of how much of it is its "
        "site's boilerplate (`sitelines_page`), as its site's lines do. For sites whose pages load their article "
        "by script; off by default: no gain on the quality benchmark and 1.5 ms a page (see Detection quality)")),
    Setting("DEDUP_CANONICAL", BOOL, True, doc=(
        "a page that a kept copy names as its `rel=canonical` (or `og:url`) replaces that copy, with a "
        "`superseded` drop-log line and the `page_superseded` signal for it ([Recrawls](#recrawls)); "
        "`False`: the first copy stays")),
    Setting("DEDUP_PREFER_CLEAN_URL", BOOL, True, doc=(
        "a copy of a kept page under a cleaner URL of the same page (the same host, path and query but for "
        "tracking and session parameters such as `utm_*`, `gclid`, `fbclid`, `sessionid`, `;jsessionid=`, "
        "on http or https; fewer session parameters, then https, then fewer tracking parameters, a shorter query, a shorter URL) replaces the kept one, as `DEDUP_CANONICAL` "
        "does (a `superseded` drop-log line with `rule` `clean_url`, the `page_superseded` signal): the same "
        "URL is kept whatever order the crawl meets the copies in; `False`: the first copy stays")),
    Setting("DEDUP_CLEAN_REQUESTS", BOOL, True, doc=(
        "a request whose URL carries known tracking parameters (`utm_*`, `gclid`, `fbclid`, `mc_eid`, ... "
        "and `DEDUP_TRACKING_PARAMS`) is sent as its clean URL, the others kept in their order, as Nutch's "
        "and Heritrix's URL normalizers do: Scrapy's duplicate filter then drops the repeat of a URL "
        "requested before, and no item carries the parameters. Counted in `dedup/requests/cleaned`; "
        "allow-listed URLs (`DEDUP_ALLOW`), `dont_dedup` and `dont_filter` requests, a redirect's target and "
        "a URL the index keeps a page under (a tracking URL the site's rel=canonical names) are sent as they "
        "are; "
        "`False`: every URL as it is (the clean-URL rule still keeps the clean copy)")),
    Setting("DEDUP_TRACKING_PARAMS", REGEXES, [], doc=(
        "more query parameters that only track a visitor, as regexes a parameter's whole name matches "
        "(`ref`, `campaign_.*`), taken out with the known ones under `DEDUP_CLEAN_REQUESTS`")),
    Setting("DEDUP_COMMIT_BATCH", INT, 64, lo=1, hi=10_000, doc=(
        "most pages decided in one write transaction and one durable commit (group commit), 1-10,000; `1` "
        "= a commit a page (on a Redis Cluster a batch's pages read, commit and claim together: batches of "
        "8 decide more pages a second than one at a time; on one redis-server a conflict reruns a batch "
        "whole, docs/distributed.md Speed)")),
    Setting("DEDUP_COMMIT_DELAY", FLOAT, 0.02, lo=0, hi=1, doc=(
        "seconds (0-1) a decided page may wait for others to share its commit; `0`: only pages ready in "
        "the same reactor turn share one. A page alone in the downloader (`CONCURRENT_REQUESTS=1`, the "
        "crawl's last pages) is committed at once. A response goes on (or is dropped, with its drop-log "
        "line) only once its commit is durable. The LMDB write lock is held for a whole group, so other "
        "processes on the same `DEDUP_DIR` wait that long. With `DEDUP_WEIGHTING=tfidf`, "
        "`DEDUP_FEATURES=docimage` or `DEDUP_CONCEPTUAL` on, a fingerprint depends on the pages kept "
        "before it, so each page gets a commit of its own. Items checked by the pipeline are committed "
        "one at a time")),
    Setting("DEDUP_CONCEPTUAL", CHOICE, "off", choices=("off", "flag", "drop"), doc=(
        "`flag` or `drop` LSI conceptual duplicates (seed 000): same story, different words")),
    Setting("DEDUP_CONCEPTUAL_THRESHOLD", FLOAT, 0.9, lo=0, hi=1, doc=(
        "LSI cosine for a conceptual duplicate")),
    Setting("DEDUP_CONDITIONAL", BOOL, True, doc=(
        "recrawls ask the server whether a kept page changed: the request for a URL the index holds "
        "carries the validators of its last response (`If-None-Match` with its ETag, `If-Modified-Since` "
        "with its Last-Modified), and a `304 Not Modified` is an unchanged revisit (`measure` "
        "`not-modified`, `dedup/not_modified`) that downloads no body. A URL dropped as a copy is asked too "
        "(its validators kept beside the page it duplicates, a few bytes): a 304 drops it again unread. Per request: "
        "`meta={\"dedup_conditional\": False}`; see [Recrawls](recrawls.md#conditional-requests)")),
    Setting("DEDUP_CONDITIONAL_COPY", AUTO_BOOL, "auto", doc=(
        "keep a compressed copy of each kept page's body that has validators (about a quarter of its bytes: 47 KB a page on the recrawl benchmark's real pages, five times the rest of the index), "
        "so a 304 is handed to the spider as the page it was and its links are still followed; without a "
        "copy only requests marked `meta={\"dedup_leaf\": True}` (nothing to follow on them: the `pages` "
        "spider's without `-a follow=1`) are sent conditional. `auto`: a copy with LMDB and memory, none "
        "with Redis (memory there is dear)")),
    Setting("DEDUP_CONDITIONAL_MAX_AGE", INT, 30 * 86400, lo=0, doc=(
        "seconds after a page's last full download when its next request goes out unconditional, so a "
        "server whose 304 hides a change is caught within that time (`0`: never)")),
    Setting("DEDUP_CONTAINMENT", FLOAT, 0.9, lo=0, hi=1, doc=(
        "a lookup threshold: a candidate holding this share of the new page's shingles (with "
        "`DEDUP_MIN_RESEMBLANCE`) is one a plain near-duplicate check drops; the score decides, and a page it "
        "keeps apart from such a candidate gets a `kept` drop-log line (`DEDUP_LOG_KEPT`); `0`: containment "
        "alone never counts")),
    Setting("DEDUP_DEBUG", BOOL, False, doc=(
        "log every verdict (and let trafilatura's DEBUG lines through)")),
    Setting("DEDUP_DIR", PATH, None, shown=".scrapy/dedup", doc=(
        "the LMDB index directory; a relative path is inside Scrapy's data folder (`.scrapy/`), as "
        "`HTTPCACHE_DIR` is, wherever the crawl is started from")),
    Setting("DEDUP_DROPLOG", PATH, None, shown="<DEDUP_DIR>/droplog.jsonl", doc=(
        "the JSONL drop log; a Redis index's default is `<DEDUP_DIR>/droplog-redis-<DEDUP_REDIS_PREFIX>.jsonl`, "
        "so two indexes never share one; a relative path is inside Scrapy's data folder, as `DEDUP_DIR`")),
    Setting("DEDUP_DROPLOG_ITEMS", BOOL, True, doc=(
        "at the item stage, write the whole dropped item into its drop-log line")),
    Setting("DEDUP_DRY_RUN", BOOL, False, doc=(
        "never drop and change nothing: decide on a scratch copy of the LMDB index (removed at the end), write "
        "`flagged` lines (`inspect --action flagged`) and count `dedup/flagged`; refused on Redis")),
    Setting("DEDUP_EXPECTED_PAGES", INT, 1_000_000, lo=1, doc=(
        "sizes the permuted tables when a new index is created (an existing index keeps its plan)")),
    Setting("DEDUP_EXTRACT_MODE", CHOICE, "thorough", choices=("thorough", "fast"), doc=(
        "`fast`: trafilatura without its fallback extractors — about 60% of the extraction time, and 41 "
        "copies missed instead of 38 of about 1,500 on copies of real pages (recall median 0.974 either "
        "way; `python benchmarks/realcopies.py --seeds 3 --extract-mode fast`), precision the same")),
    Setting("DEDUP_FEATURES", CHOICE, "shingles", choices=("shingles", "docimage"), doc=(
        "`docimage`: seed 001's document image (top-30 TF-IDF words of each 100-word part) instead of "
        "word shingles")),
    Setting("DEDUP_FEED_FILTER", BOOL, True, doc=(
        "the add-on writes the crawl's feeds (`-o`, `FEEDS`: JSON lines, JSON, CSV) without the pages superseded "
        "later in the same crawl (a `superseded` drop-log line each: replaced by their `rel=canonical` or a cleaner "
        "URL), through a post-processing plugin first in each feed's chain (`dedup/feed/superseded_removed`); "
        "`False`: feeds hold every item as the pipelines passed it ([Recrawls](#recrawls))")),
    Setting("DEDUP_ITEM_HTML_FIELD", FIELD, "html", doc=(
        "item field with a page's HTML")),
    Setting("DEDUP_ITEM_TEXT_FIELD", FIELD, "text", doc=(
        "item field with a page's text (used instead of extraction)")),
    Setting("DEDUP_ITEM_TITLE_FIELD", FIELD, "title", doc=(
        "item field with the page's title, read with a text field (an HTML field's title is its "
        "`<title>`): the score weighs titles, so an item with its title is decided better than its text alone")),
    Setting("DEDUP_ITEM_URL_FIELD", FIELD, "url", doc=(
        "item field with the page's URL")),
    Setting("DEDUP_K", INT, 3, lo=0, hi=MAX_K, doc=(
        "simhash bits two pages may differ in to be candidates (0-8); fixed per index")),
    Setting("DEDUP_LMDB_MAP_SIZE", INT, 256 * 1024**2, lo=1024**2, doc=(
        "initial LMDB map size in bytes (at least 1048576); doubles when full")),
    Setting("DEDUP_LMDB_SYNC", BOOL, True, doc=(
        "fsync the data of every commit: a killed crawl never loses a kept page, a power cut at worst "
        "undoes the last commit (the meta page is synced with the next one). Off: no fsync, faster; a "
        "machine crash may lose the last pages")),
    Setting("DEDUP_LOGSTATS_INTERVAL", FLOAT, 60, lo=0, hi=86400, doc=(
        "seconds between periodic `Dedup: checked N pages (x/min), dropped M (r%), ...` crawl-log lines, "
        "like Scrapy's LogStats; `0` turns them off")),
    Setting("DEDUP_LOG_KEPT", BOOL, True, doc=(
        "a page kept although a candidate passed the lookup thresholds (the score kept them apart) gets a "
        "drop-log line with `action` `kept`, naming that candidate, its score and each measurement's part in it, so "
        "the copies let through can be looked over (`crawler-dedup inspect --kept`); it drops nothing. "
        "Counted in `dedup/scored_apart` either way")),
    Setting("DEDUP_LSI_DIMS", INT, 64, lo=2, hi=512, doc=(
        "concepts of the LSI model")),
    Setting("DEDUP_LSI_TRAIN", INT, 300, lo=10, doc=(
        "kept pages the LSI model is fitted on, once per index (at least 10, and at least "
        "`DEDUP_LSI_DIMS`)")),
    Setting("DEDUP_MAX_BYTES", INT, 5 * 1024**2, lo=1, doc=(
        "larger bodies are kept unchecked (`dedup/skipped/too_large`)")),
    Setting("DEDUP_MIN_RESEMBLANCE", FLOAT, 0.2, lo=0, hi=1, doc=(
        "a lookup threshold: the resemblance a containment candidate needs too (`DEDUP_CONTAINMENT`)")),
    Setting("DEDUP_MODEL", PATH, None, shown="the model shipped with the package", doc=(
        "the score that decides whether a weighed candidate is a copy: a model file written by "
        "`crawler-dedup eval --fit` (your own labelled pairs); see [Tuning](tuning.md#teach-it-your-sites)")),
    Setting("DEDUP_MIN_TOKENS", INT, 15, lo=1, doc=(
        "texts with fewer words are kept unchecked (`dedup/skipped/too_short`)")),
    Setting("DEDUP_REDIS_PREFIX", TEXT, "dedup", doc=(
        "`DEDUP_BACKEND=redis`: the index's keys start with the prefix (`{PREFIX}:...` in one slot, or "
        "`PREFIX:...` spread over a cluster: `DEDUP_REDIS_LAYOUT`); one prefix an index")),
    Setting("DEDUP_REDIS_LAYOUT", CHOICE, "auto", choices=("auto", "slot", "spread"), doc=(
        "how a Redis index lies: `auto` spreads it over every slot of a Redis Cluster (its nodes share "
        "the memory and the load; a duplicate group is kept once by claims, see docs/distributed.md) and "
        "keeps it in one slot on one server; `slot`: one slot on a cluster too (the layout of earlier "
        "versions, each write one transaction); `spread`: a cluster only")),
    Setting("DEDUP_REDIS_RETRY", FLOAT, 30.0, lo=0, hi=3600, doc=(
        "`DEDUP_BACKEND=redis`: seconds a page waits through a resharding, a failover or a node restarting "
        "(the cluster's answers MOVED, ASK, TRYAGAIN, CLUSTERDOWN, LOADING, and lost connections are tried "
        "again until then) before it is kept unchecked (`dedup/errors/store`, named in the log); after such a "
        "failure the next pages fail at once for three times as long, so an outage costs the crawl little "
        "time. Longer than the cluster's `cluster-node-timeout` (15 s by default), so a failover costs time, "
        "not recall; `0`: one try. Opening the index waits at most 10 s of it (a wrong URL is told in "
        "seconds, exit 1)")),
    Setting("DEDUP_REDIS_URL", URL, "redis://localhost:6379/0", doc=(
        "`DEDUP_BACKEND=redis`: the server, `redis://[user:password@]host:port/db`, `rediss://` for TLS "
        "(`?ssl_ca_certs=FILE` for a private CA), or a Redis Cluster node; see docs/distributed.md")),
    Setting("DEDUP_RESET", BOOL, False, doc=(
        "start from an empty index; the old `DEDUP_DIR` is moved aside to `DEDUP_DIR.reset-<UTC time>`. "
        "Per crawl: `-a dedup_reset=1`")),
    Setting("DEDUP_REVISIT", CHOICE, "update", choices=("update", "keep", "drop"), doc=(
        "a page whose URL is in the index: `update` (unchanged pages per `DEDUP_UNCHANGED`, changed ones "
        "kept and replacing the entry, copies of other URLs dropped), `keep` (never drop a revisit), "
        "`drop` (no URL check: a page can be dropped as a copy of its own URL, the behaviour before the "
        "URL table)")),
    Setting("DEDUP_SHINGLE", INT, 3, lo=1, hi=16, doc=(
        "words per shingle; fixed per index")),
    Setting("DEDUP_SITE_BOILERPLATE", BOOL, True, doc=(
        "learn each site's boilerplate from the crawl: every kept page files the lines of its extracted text and "
        "the parts of its title under its site (registered domain) until it leaves the index. A line another "
        "kept page of the site shows is that site's: the score weighs how much of each text is such lines, "
        "and how alike the two texts are without them (a copy whose extraction carries another site's promo, "
        "bio or privacy text: `measure` `content`); a title part other pages of the site carry under other "
        "titles is its name or a section, left out when titles are compared. Needs `DEDUP_STORE_TEXT` (the "
        "kept page's text); about 0.6 KB a kept page in the index and 0.4 ms a page (see Detection quality)")),
    Setting("DEDUP_SKETCH_PROBES", INT, 8, lo=0, hi=128, doc=(
        "smallest shingle hashes each page files in the index: candidates whose simhash moved more than k "
        "bits (0 = simhash tables only)")),
    Setting("DEDUP_STORE_TEXT", BOOL, True, doc=(
        "keep each kept page's extracted text (zlib) in the index and each dropped page's text in its "
        "drop-log line (`text`), so `show` and `report` can diff a decision after the crawl, and so the score "
        "measures the texts exactly (where the words two texts share sit, how much of each a template holds: a "
        "page quoting a kept page's opening is told from its copy by them); off, those are measured from the "
        "kept page's sketch and samples or left unknown; costs about "
        "1.7 KB a kept page in the index and the text's size a drop-log line (see [the "
        "cost](#inspecting-what-was-dropped))")),
    Setting("DEDUP_THRESHOLD", FLOAT, 0.5, lo=0, hi=1, doc=(
        "a lookup threshold: a candidate with this verifier score (resemblance by default) is one a plain "
        "near-duplicate check drops; the score decides whether it is a copy (`DEDUP_SCORE_THRESHOLD`), and a "
        "page it keeps apart from such a candidate gets a `kept` drop-log line (`DEDUP_LOG_KEPT`)")),
    Setting("DEDUP_SCORE_THRESHOLD", AUTO_FLOAT, "auto", lo=0.01, hi=0.999, doc=(
        "the score's threshold: a candidate whose score (the probability, from the pair's measurements, that "
        "the page is its copy) is at or over it is a copy; `auto`: the model's own, chosen when it was fitted "
        "for precision 0.999 out of fold on sites it never saw (a model from `eval --fit`: its `--precision`, 0.997 by default). Raise it for fewer drops, lower it for more; "
        "`crawler-dedup eval --pairs` sweeps it on your own pairs ([Tuning](tuning.md))")),
    Setting("DEDUP_UNCHANGED", CHOICE, "drop", choices=("drop", "keep"), doc=(
        "a revisit with the same words (churn aside: dates, times, counters): `drop` (a drop-log line "
        "with `reason: unchanged`; the spider still parses it and follows its links, its items are "
        "dropped) or `keep` (passed on, counted in `dedup/revisits/unchanged`; its index record is marked this "
        "crawl's, one write a page, so a page replacing it later in the crawl is told to storage after its item)")),
    Setting("DEDUP_VERIFIER", VERIFIER, "resemblance", choices=VERIFIER_NAMES, doc=(
        "`resemblance` (min-hash, seed 003), `qgram` (character 4-gram overlap, seed 004; use a threshold "
        "of 0.7), `swlr` (LCS of shingle sequences, seed 002), or a dotted path to a `Verifier` subclass "
        "of one's own (`crawler_dedup.core.decide.verify`)")),
    Setting("DEDUP_VISIBLE_CONTAINMENT", FLOAT, 0.8, lo=0, hi=1, doc=(
        "each page's view of its markup (every word it shows, and how much of its main text is its chrome: "
        "navigation, header, footer, a consent dialog) feeds the measurements of how much of one page's main text "
        "the other page shows; a kept page under the same headline that shares no words with the page is weighed "
        "when this share of one main text (5-word shingles) is in the other page's visible text: a copy whose "
        "extraction took the wrong block on one side (`measure` `visible`). Kept pages are filed under their "
        "title's parts and keep a sample of their visible text (about 2 KB a kept page in the index); about 3 ms "
        "a page in the extraction workers; `0` turns the views off (see Detection quality)")),
    Setting("DEDUP_WEIGHTING", CHOICE, "none", choices=("none", "tfidf"), doc=(
        "`tfidf`: weight shingles by TF-IDF in the simhash (seed 000); document frequencies are kept in "
        "the index")),
    Setting("DEDUP_WINDOW", INT, 0, lo=0, doc=(
        "seconds a kept page can be matched (0 = forever, seed 004 uses a day: `86400`); older pages stop "
        "matching at once and leave the index a few at a time as new pages come, so its size stays flat "
        "on a steady stream; on Redis a page's keys also expire at twice the window")),
    Setting("DEDUP_WORKERS", WORKERS, "auto", doc=(
        "worker processes for extraction and fingerprinting (`python -m crawler_dedup.workers`, fed over "
        "pipes; they import nothing of the crawl's script): the crawler keeps downloading while "
        "trafilatura runs, and only the lookup and insert stay in the crawler; `auto`: one a core the "
        "crawl may use; `0`: extraction in the crawler's thread (see [Speed](#speed))")),
)
_BY_NAME = {s.name: s for s in SETTINGS}
# as DedupConfig holds them (a tuple for DEDUP_ALLOW); checking them also checks the declarations
_DEFAULTS: dict[str, Any] = {s.attr: s.check(s.default) for s in SETTINGS}


def default_droplog(dir_: str, backend: str = "lmdb", redis_prefix: str = "dedup") -> str:
    """The drop log a crawl writes when DEDUP_DROPLOG is not set: the LMDB index's beside it in
    DEDUP_DIR, a Redis index's named after its prefix (the two never mix in one file)."""
    if backend != "redis":  # (LMDB, or a store of the user's own in DEDUP_DIR)
        return os.path.join(dir_, "droplog.jsonl")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", redis_prefix or "dedup").strip(".") or "dedup"
    return os.path.join(dir_, f"droplog-{backend}-{safe}.jsonl")


def _lsi_train_covers_dims(raw: Mapping[str, Any], out: Mapping[str, Any]) -> None:
    if out["lsi_train"] < out["lsi_dims"]:
        raise ConfigError("DEDUP_LSI_TRAIN", raw["lsi_train"], f"at least DEDUP_LSI_DIMS ({out['lsi_dims']}) pages")


def _allow_file_read(raw: Mapping[str, Any], out: Mapping[str, Any]) -> None:
    """DEDUP_ALLOW_FILE's regexes added to DEDUP_ALLOW (once each: a config checked again keeps one copy)."""
    path = out["allow_file"]
    if not path:
        return
    try:
        with open(path, encoding="utf-8") as fh:
            lines = [line.strip() for line in fh]
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise ConfigError("DEDUP_ALLOW_FILE", raw["allow_file"], f"a readable file of URL regexes ({why})") from None
    more = _BY_NAME["DEDUP_ALLOW"].check([line for line in lines if line and not line.startswith("#")])
    have = {p.pattern for p in out["allow"]}
    out["allow"] = tuple(out["allow"]) + tuple(p for p in more if p.pattern not in have)  # type: ignore[index]


# settings a release took out, and what replaced them (named at crawl start, not a typo's "did you mean")
REMOVED: dict[str, str] = {
    "DEDUP_STRICT_TEXT": "it was removed when one fitted score replaced the rules it switched on (a page quoting "
                         "another's opening is weighed by the score); for fewer drops raise DEDUP_SCORE_THRESHOLD, or "
                         "teach the score your sites with `crawler-dedup eval --fit` and DEDUP_MODEL (docs/tuning.md)",
}


# rules between settings, checked after each setting's own
CROSS_RULES: tuple[Callable[[Mapping[str, Any], Mapping[str, Any]], None], ...] = (_lsi_train_covers_dims, _allow_file_read)


def _misprefixed(name) -> str | None:
    """The DEDUP_ name a setting's name was likely meant to be (DEDUPE_X, dedup_x, DEDUPX), or None."""
    if not isinstance(name, str) or name.startswith("DEDUP_"):
        return None
    m = re.match(r"(?i)de-?dupe?[_-]?(?=[A-Za-z])", name)
    return None if m is None else "DEDUP_" + name[m.end():].upper().replace("-", "_")


def _did_you_mean(name: str, known: set[str], lower: bool = False) -> str:
    import difflib

    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.8)  # (DEDUP_FOO is not DEDUP_K)
    if not close:
        return "see docs/settings.md for the settings there are"
    suggestion = close[0][len("DEDUP_"):].lower() if lower else close[0]
    return f"did you mean {suggestion}?"


@dataclass(frozen=True)
class DedupConfig:
    # explicit annotations for type checkers; the defaults are the registry's (a test keeps both lists equal)
    enabled: bool = _DEFAULTS["enabled"]
    allow: tuple = _DEFAULTS["allow"]
    allow_file: str | None = _DEFAULTS["allow_file"]
    backend: str = _DEFAULTS["backend"]
    boilerplate: bool = _DEFAULTS["boilerplate"]
    canonical: bool = _DEFAULTS["canonical"]
    prefer_clean_url: bool = _DEFAULTS["prefer_clean_url"]
    clean_requests: bool = _DEFAULTS["clean_requests"]
    tracking_params: tuple = _DEFAULTS["tracking_params"]
    commit_batch: int = _DEFAULTS["commit_batch"]
    commit_delay: float = _DEFAULTS["commit_delay"]
    conceptual: str = _DEFAULTS["conceptual"]
    conceptual_threshold: float = _DEFAULTS["conceptual_threshold"]
    conditional: bool = _DEFAULTS["conditional"]
    conditional_copy: bool | str = _DEFAULTS["conditional_copy"]
    conditional_max_age: int = _DEFAULTS["conditional_max_age"]
    containment: float = _DEFAULTS["containment"]
    debug: bool = _DEFAULTS["debug"]
    dir: str | None = _DEFAULTS["dir"]
    droplog: str | None = _DEFAULTS["droplog"]
    droplog_items: bool = _DEFAULTS["droplog_items"]
    dry_run: bool = _DEFAULTS["dry_run"]
    expected_pages: int = _DEFAULTS["expected_pages"]
    extract_mode: str = _DEFAULTS["extract_mode"]
    features: str = _DEFAULTS["features"]
    feed_filter: bool = _DEFAULTS["feed_filter"]
    item_html_field: str = _DEFAULTS["item_html_field"]
    item_text_field: str = _DEFAULTS["item_text_field"]
    item_title_field: str = _DEFAULTS["item_title_field"]
    item_url_field: str = _DEFAULTS["item_url_field"]
    k: int = _DEFAULTS["k"]
    logstats_interval: float = _DEFAULTS["logstats_interval"]
    lmdb_map_size: int = _DEFAULTS["lmdb_map_size"]
    log_kept: bool = _DEFAULTS["log_kept"]
    lsi_dims: int = _DEFAULTS["lsi_dims"]
    lsi_train: int = _DEFAULTS["lsi_train"]
    lmdb_sync: bool = _DEFAULTS["lmdb_sync"]
    max_bytes: int = _DEFAULTS["max_bytes"]
    min_resemblance: float = _DEFAULTS["min_resemblance"]
    min_tokens: int = _DEFAULTS["min_tokens"]
    model: str | None = _DEFAULTS["model"]
    redis_layout: str = _DEFAULTS["redis_layout"]
    redis_prefix: str = _DEFAULTS["redis_prefix"]
    redis_retry: float = _DEFAULTS["redis_retry"]
    redis_url: str = _DEFAULTS["redis_url"]
    reset: bool = _DEFAULTS["reset"]
    revisit: str = _DEFAULTS["revisit"]
    shingle: int = _DEFAULTS["shingle"]
    site_boilerplate: bool = _DEFAULTS["site_boilerplate"]
    sketch_probes: int = _DEFAULTS["sketch_probes"]
    store_text: bool = _DEFAULTS["store_text"]
    threshold: float = _DEFAULTS["threshold"]
    score_threshold: float | str = _DEFAULTS["score_threshold"]
    unchanged: str = _DEFAULTS["unchanged"]
    verifier: str = _DEFAULTS["verifier"]
    visible_containment: float = _DEFAULTS["visible_containment"]
    weighting: str = _DEFAULTS["weighting"]
    window: int = _DEFAULTS["window"]
    workers: int | str = _DEFAULTS["workers"]
    extra: dict = field(default_factory=dict, compare=False)

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | None = None, **overrides: Any) -> "DedupConfig":
        """Read DEDUP_* names from `settings` (Scrapy Settings or a dict); overrides use field names."""
        settings = settings or {}
        known = set(_BY_NAME)
        for name in list(settings.keys()) if hasattr(settings, "keys") else []:
            if name in REMOVED and settings.get(name) is not None:
                raise ConfigError(name, settings.get(name), REMOVED[name], unknown=True)
            if isinstance(name, str) and name.startswith("DEDUP_") and name not in known:
                raise ConfigError(name, settings.get(name), _did_you_mean(name, known), unknown=True)
            near = _misprefixed(name)
            hint = _did_you_mean(near, known) if near is not None else ""
            if hint.startswith("did you mean"):  # DEDUPE_DIR, dedup_dir: meant as ours, never silently ignored
                raise ConfigError(name, settings.get(name), hint, unknown=True)
        for name, value in overrides.items():
            if "DEDUP_" + name.upper() not in known:
                raise ConfigError(name, value, _did_you_mean("DEDUP_" + name.upper(), known, lower=True), unknown=True)
        raw = {}
        for s in SETTINGS:
            value = settings.get(s.name)
            raw[s.attr] = s.default if value is None else value
        raw.update(overrides)
        return cls._checked(raw)

    def idle_settings(self) -> list[str]:
        """Settings given a value of their own that the chosen backend never reads (a Redis URL
        under LMDB): each a warning at start, never silently ignored."""
        only = {"redis": ("redis_url", "redis_prefix", "redis_layout", "redis_retry"), "lmdb": ("lmdb_map_size", "lmdb_sync")}
        return ["DEDUP_" + attr.upper() for backend, attrs in only.items() if self.backend != backend
                for attr in attrs if getattr(self, attr) != _DEFAULTS[attr]]

    def keeps_copies(self) -> bool:
        """DEDUP_CONDITIONAL_COPY as a yes or no: `auto` keeps copies but in Redis."""
        if self.conditional_copy == "auto":
            return self.backend != "redis"
        return bool(self.conditional_copy)

    def worker_count(self) -> int:
        """DEDUP_WORKERS as a number: `auto` is one worker a core this process may use."""
        if self.workers == "auto":
            from ..workers import usable_cores

            return usable_cores()
        return int(self.workers)

    @classmethod
    def _checked(cls, raw: dict[str, Any]) -> "DedupConfig":
        out = {s.attr: s.check(raw[s.attr]) for s in SETTINGS}
        for rule in CROSS_RULES:
            rule(raw, out)
        return cls(**out)
