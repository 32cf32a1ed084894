"""The stats keys a crawl fills in Scrapy's stats, declared once with their meaning.

The shell counts with these names only; docs/usage.md's stats table is made from `STATS`
(scripts/stats_table.py), as the settings table is made from the registry. A key with
`<part>` is a family (`dedup/skipped/<why>` -> `dedup/skipped/too_short`): `key()` fills it.
`ALIASES` are the earlier names of the revisit keys, still counted for one release.
"""

from __future__ import annotations

from typing import NamedTuple


class Stat(NamedTuple):
    key: str
    meaning: str


CHECKED = "dedup/checked"
KEPT = "dedup/kept"
COMMITS = "dedup/commits"
FAST_SAME_BYTES = "dedup/fast/same_bytes"
WORKERS_RESTARTED = "dedup/workers/restarted"
SCORED_APART = "dedup/scored_apart"
DROPPED = "dedup/dropped"
DROPPED_BY = "dedup/dropped/<reason>"
FLAGGED = "dedup/flagged"
FLAGGED_BY = "dedup/flagged/<reason>"
REVISITS = "dedup/revisits"
REVISITS_UNCHANGED = "dedup/revisits/unchanged"
REVISITS_UPDATED = "dedup/revisits/updated"
REVISITS_COPY = "dedup/revisits/copy"
REVISITS_RESENT = "dedup/revisits/resent"
DROPPED_ITEMS_UNCHANGED = "dedup/dropped_items/unchanged"
SUPERSEDED = "dedup/superseded"
FEED_SUPERSEDED_REMOVED = "dedup/feed/superseded_removed"
CONDITIONAL = "dedup/conditional"
NOT_MODIFIED = "dedup/not_modified"
NOT_MODIFIED_BYTES = "dedup/not_modified/bytes"
REFETCHED = "dedup/conditional/refetched"
CONDITIONAL_REFUSED = "dedup/conditional/refused"
SKIPPED = "dedup/skipped/<why>"
ERRORS = "dedup/errors/<where>"
UNCHECKED = "dedup/unchecked"
CLEANED = "dedup/requests/cleaned"
CLEANED_PARAM = "dedup/requests/cleaned/<param>"

STATS: tuple[Stat, ...] = (
    Stat(CHECKED, "pages looked up in the index (= kept + dropped + flagged)"),
    Stat(KEPT, "checked and kept: added to the index"),
    Stat(COMMITS, "write transactions that decided pages: `dedup/checked` / `dedup/commits` is the mean "
                  "group-commit size"),
    Stat(FAST_SAME_BYTES, "pages decided without extraction: their response had the very bytes of a kept page's (a "
                          "tracking-parameter copy, an unchanged page on a recrawl), so that page's stored "
                          "fingerprint and text stood in for extraction; decided by the same rules"),
    Stat(WORKERS_RESTARTED, "worker processes killed and started again (one died, or spent over 120 s on a page); "
                            "each such page is kept and counted in `dedup/errors/extract`"),
    Stat(SCORED_APART, "kept although a candidate passed the lookup thresholds (`DEDUP_THRESHOLD`, "
                       "`DEDUP_CONTAINMENT`: what a plain near-duplicate check drops): the score kept them apart. "
                       "Each has a drop-log line with `action` `kept` naming that candidate, its score and why "
                       "(`DEDUP_LOG_KEPT`; `crawler-dedup inspect --kept` lists them)"),
    Stat(DROPPED, "dropped (each with a drop-log line)"),
    Stat(DROPPED_BY, "dropped, by reason (`exact`, `near`, `conceptual`, `unchanged`)"),
    Stat(FLAGGED, "dry run (`DEDUP_DRY_RUN`), or a conceptual duplicate under `DEDUP_CONCEPTUAL=flag`: would have "
                  "been dropped, kept with a drop-log line"),
    Stat(FLAGGED_BY, "flagged, by reason"),
    Stat(REVISITS, "pages whose URL was in the index"),
    Stat(REVISITS_UNCHANGED, "revisits with the text kept for their URL (dropped or, with `DEDUP_UNCHANGED=keep`, "
                             "kept); also counted as `dedup/unchanged` for this release"),
    Stat(REVISITS_UPDATED, "revisits with changed text, kept as updates (their URL's entry replaced); also counted "
                           "as `dedup/updated` for this release"),
    Stat(REVISITS_COPY, "revisits whose new text copies another URL's page, dropped as its copy"),
    Stat(REVISITS_RESENT, "unchanged pages passed on again because the crawl that filed them was killed (it may "
                          "not have stored them); also counted as `dedup/unchanged/resent` for this release"),
    Stat(DROPPED_ITEMS_UNCHANGED, "items the spider yielded from unchanged pages, dropped by the spider middleware"),
    Stat(CONDITIONAL, "requests sent conditional (`DEDUP_CONDITIONAL`): with the validators of their URL's last "
                      "response"),
    Stat(NOT_MODIFIED, "of those, answered `304 Not Modified` and decided as unchanged revisits without a body "
                       "(`measure` `not-modified`); the spider was handed the kept copy, or nothing for a "
                       "`dedup_leaf` request"),
    Stat(NOT_MODIFIED_BYTES, "body bytes those 304s did not download (the kept responses' lengths)"),
    Stat(REFETCHED, "304s that could not stand for the page (its entry changed or left the index, or the copy "
                    "it needed is missing): the page was requested again, unconditional"),
    Stat(CONDITIONAL_REFUSED, "conditional requests the server refused with a 4xx (a 412 Precondition Failed, a firewall "
                              "refusing replayed validators; not 404, 410 or 429): the page was requested again without "
                              "them, and its URL keeps no validators, so the next crawl asks plainly"),
    Stat(SUPERSEDED, "kept pages replaced by the URL their `rel=canonical` names, or by a cleaner URL of the same page "
                     "(`DEDUP_PREFER_CLEAN_URL`; a `superseded` drop-log line each)"),
    Stat(FEED_SUPERSEDED_REMOVED, "records the add-on took out of the crawl's feeds (`-o`, `FEEDS`) because their page was "
                                  "superseded later in the same crawl (`DEDUP_FEED_FILTER`; a `Dedup: removed N "
                                  "superseded pages from feed URI` log line each feed)"),
    Stat(SKIPPED, "kept without a check: `not_html`, `status` (non-2xx), `empty`, `too_large`, `undecodable`, "
                  "`no_text` (no main text), `too_short`, `notice` (the text is a consent, paywall or login notice), "
                  "`bad_input` (an item field that is not text), `allowed`, `dont_dedup`, `never_drop` (a "
                  "`dedup_never_drop` page that matched another URL's kept page), `checked_as_response` (the item "
                  "of a page the middleware already checked)"),
    Stat(ERRORS, "kept because a step failed (`extract`, `fingerprint`, `store`, `droplog`, `open`, `internal`); "
                 "the error logged once per kind"),
    Stat(UNCHECKED, "pages kept unchecked because a step failed (the sum of `dedup/errors/<where>`), each named in a "
                    "`Dedup kept unchecked: URL` log line (but when the index could not be opened at all) and counted "
                    "in the closing line"),
    Stat(CLEANED, "requests sent as their clean URL, without tracking parameters (`DEDUP_CLEAN_REQUESTS`); a "
                  "repeat of a URL requested before is then dropped by Scrapy's duplicate filter, not downloaded"),
    Stat(CLEANED_PARAM, "the tracking parameters taken out, by name (`utm_source`, `gclid`, ...)"),
)

# earlier names, still counted beside the new ones for one release
ALIASES: dict[str, str] = {
    REVISITS_UNCHANGED: "dedup/unchanged",
    REVISITS_UPDATED: "dedup/updated",
    REVISITS_RESENT: "dedup/unchanged/resent",
}


def key(template: str, part: object) -> str:
    """A family's key: key(SKIPPED, "too_short") -> "dedup/skipped/too_short"."""
    head, sep, _ = template.partition("<")
    if not sep:
        raise ValueError(f"{template} is not a family of keys")
    return f"{head}{part}"


def prefix(template: str) -> str:
    """What every key of a family starts with ("dedup/skipped/")."""
    return template.partition("<")[0]


def counted(stats, name: str, by: int = 1) -> None:
    """Increase a stat (and its earlier name, for this release) in Scrapy's stats collector."""
    stats.inc_value(name, by)
    alias = ALIASES.get(name)
    if alias is not None:
        stats.inc_value(alias, by)
