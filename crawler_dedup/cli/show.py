"""`crawler-dedup show URL`: one drop explained, with a diff of the two texts."""

from __future__ import annotations

import shutil

from ..droplog import dumps
from .common import (
    CliError,
    add_index,
    add_json,
    add_log,
    backend_settings,
    index_hint,
    make_config,
    parse_settings,
    resolve_log_dir,
    term,
)
from .out import Progress, plural


def add_parser(sub):
    p = sub.add_parser(
        "show", help="one drop explained: the page it matched, fingerprints, scores, why, a diff of the texts",
        description="Find URL's line in the drop log and the kept page it matched in the index, and print both "
        "URLs and titles, the fingerprints and their XOR, the similarity, the rule that decided and a diff of "
        "the two extracted texts (kept with DEDUP_STORE_TEXT). A URL decided more than once (a recrawl) shows its latest "
        "decision; --all lists them all, oldest first, and --line N shows the Nth. Defaults: --log the project's DEDUP_DROPLOG, "
        "else <DIR>/droplog.jsonl; --dir the index beside --log, else the project's DEDUP_DIR, else .scrapy/dedup.")
    p.add_argument("url", metavar="URL", help="the dropped page's URL, as in the drop log")
    add_log(p)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_true",
                       help="list every drop-log line about URL, oldest first: its number for --line, time, action, "
                       "reason, the page it matched, spider")
    which.add_argument("--line", type=int, metavar="N", default=-1,
                       help="show URL's Nth line in the drop log, 1 the oldest (as --all numbers them); negative counts "
                       "back from the latest (default: -1, the latest)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--unified", action="store_true", help="a unified diff (the default)")
    how.add_argument("--side-by-side", action="store_true", help="two columns: kept page left, dropped page right")
    p.add_argument("--width", type=int, metavar="N", help="output width (default: the terminal's)")
    add_index(p, dir_help="the index, opened read-only (default: the index beside --log, else the project's "
              "DEDUP_DIR, else .scrapy/dedup)", settings_help="the crawl's settings: for the 'why' line of a drop "
              "log older than its score keys, and DEDUP_BACKEND when the index is not LMDB")
    add_json(p, help="print the drop-log line, the kept page and the texts' diff as JSON")
    return p


def run(args) -> int:
    from ..core.page.tokens import tokenize
    from ..tools.show import score_rows, side_by_side, unified, why, xor_line

    config = make_config(parse_settings(args.set))
    log, dir_ = resolve_log_dir(args.log, args.dir, backend_settings(args))
    width = args.width or shutil.get_terminal_size((120, 24)).columns
    if width < 40:
        raise CliError(f"--width takes 40 or more, not {width}")
    found, malformed, replaced = _find(args, log)
    if args.all:
        _list(args, log, [r for _, r in found], malformed)
        return 0
    at, rec = _pick(args, log, found)
    kept, note = _kept(rec, dir_, backend_settings(args))
    at_later, later = replaced.get(rec.get("duplicate_of"), (-1, None)) if kept is None else (-1, None)
    if later is not None and later is not rec and at_later > at:
        how = "a cleaner URL of the same page" if later.get("rule") == "clean_url" else "its rel=canonical URL"
        note = (f"the kept page {rec.get('duplicate_of')} was replaced later by {later.get('duplicate_of')} ({how}; "
                f"a superseded line at {later.get('time')}): that page is the one kept now")
    dropped_text = rec.get("text") if isinstance(rec.get("text"), str) else None
    kept_text = kept.text if kept is not None else None
    apart = rec.get("action") == "kept"  # a page the score kept apart: its own text is in the index
    if apart and dropped_text is None:
        dropped_text = _own_text(rec, dir_, backend_settings(args))
    if dropped_text is None and rec.get("reason") == "unchanged" and rec.get("measure") in ("exact", "not-modified"):
        dropped_text = kept_text  # the same words (or a 304: the kept page stood for it): the line does not repeat them
    exact = rec.get("reason") == "exact" or rec.get("measure") == "exact"
    if args.json:
        _json(args, rec, kept, note, config, dropped_text, kept_text, width)
        return 0
    p = lambda label, value: print(term(f"{label:<13} {value}"))  # noqa: E731
    p("kept apart" if apart else "dropped", rec["url"])
    if rec.get("title"):
        p("", f"title: {rec['title']}")
    p("candidate" if apart else "kept", rec.get("duplicate_of"))
    title = rec.get("duplicate_of_title") or (kept.title if kept else None)
    if title:
        p("", f"title: {title}")
    p("fingerprints", f"{rec.get('fingerprint')} {'this page' if apart else 'dropped'}, "
                      f"{rec.get('duplicate_of_fingerprint')} {'candidate' if apart else 'kept'}")
    p("xor", xor_line(rec.get("fingerprint"), rec.get("duplicate_of_fingerprint")))
    p("distance", f"{rec.get('distance')} bits")
    sim = rec.get("similarity")
    p("similarity", f"{sim} ({rec.get('measure') or 'measure not logged'})")
    p("decision", f"{rec.get('action')} at the {rec.get('stage')} stage by spider {rec.get('spider')}, {rec.get('time')}")
    if len(found) > 1:
        number = next(i for i, (_, r) in enumerate(found, 1) if r is rec)
        p("", f"line {number} of {len(found)} about this URL in the drop log ({'the latest' if number == len(found) else 'not the latest'}; "
              "--all lists them, --line N shows one)")
    p("why", why(rec, config, len(tokenize(dropped_text)) if dropped_text else None))
    if rec.get("rule"):
        p("rule", f"{rec['rule']} (the rule of the decision chain that decided: docs/internals.md)")
    rows = score_rows(rec)
    if rows:
        from .out import lines, table

        lines("")
        table(["measurement", ("value", "right"), ("log-odds", "right")], rows,
              title="the score, each measurement's part in it (docs/internals.md#the-measurements):")
    if malformed.count:
        p("drop log", str(malformed))
    if note:
        p("index", note)
    print()
    if dropped_text is None or kept_text is None:
        _no_diff(rec, kept, note, dropped_text, kept_text)
        return 0
    name_k, name_d = term(rec.get("duplicate_of")), term(rec["url"])  # (one line each in the diff head)
    diff = (side_by_side(kept_text, dropped_text, width) if args.side_by_side
            else unified(kept_text, dropped_text, name_k, name_d, width))
    from ..tools.summary_text import terminal_safe

    print(terminal_safe("\n".join(diff)))  # (a block: its own newlines stay)
    return 0


def _json(args, rec, kept, note, config, dropped_text, kept_text, width) -> None:

    from ..core.page.tokens import tokenize
    from ..tools.show import unified, why

    out = {"drop": rec,
           "kept": None if kept is None else {"url": kept.url, "title": kept.title,
                                               "fingerprint": f"{kept.fingerprint:016x}", "text": kept_text},
           "why": why(rec, config, len(tokenize(dropped_text)) if dropped_text else None),
           "note": note,
           "diff": None if dropped_text is None or kept_text is None else
           unified(kept_text, dropped_text, str(rec.get("duplicate_of")), str(rec["url"]), width)}
    print(dumps(out, indent=1))


def _find(args, log: str):
    """([(position among the log's records, line)] of every drop-log line about args.url, oldest
    first; the malformed-line count; {URL: (position, the latest superseded line that replaced
    that kept page)})."""
    from ..tools.inspect import LogError, Malformed, stream

    found: list[tuple[int, dict]] = []
    malformed, bad = Malformed(), []
    replaced: dict[str, tuple[int, dict]] = {}

    def rejected(number, r, why):  # a line about this URL that cannot be shown
        if isinstance(r, dict) and r.get("url") == args.url:
            bad.append((number, why))

    try:
        for position, r in enumerate(stream(log, malformed, progress=Progress("searching", unit="MiB"),
                                            rejected=rejected)):
            if r["url"] == args.url:
                found.append((position, r))  # each decision about this URL, in the log's order
            if r.get("reason") == "superseded":
                replaced[r["url"]] = (position, r)
    except LogError as exc:
        raise CliError(f"{exc}{index_hint(args.dir)} (give --log, or --dir where the crawl kept its index)") from None
    if not found and bad:
        number, why = bad[-1]
        raise CliError(f"the drop-log line for {term(args.url)} is malformed ({log} line {number}: {why})")
    if not found:
        raise CliError(f"{term(args.url)} is not in the drop log {log}", 1)
    return found, malformed, replaced


def _pick(args, log: str, found: list[tuple[int, dict]]) -> tuple[int, dict]:
    """--line N of the URL's lines: 1 the oldest, -1 the latest."""
    n = args.line
    if n == 0 or not -len(found) <= n <= len(found):
        raise CliError(f"{term(args.url)} has {plural(len(found), 'line')} in the drop log {log}: --line takes 1 to {len(found)} "
                       f"(or -1 to -{len(found)} from the latest); --all lists them", 1)
    return found[n - 1 if n > 0 else n]


def _list(args, log: str, recs: list[dict], malformed) -> None:
    """--all: every decision about the URL, oldest first, numbered as --line takes them."""
    if args.json:
        print(dumps({"url": args.url, "lines": recs}, indent=1))
        return
    from .out import lines, table

    table(["line", "time", "action", "reason", "matched", "spider"],
          [[str(i), r.get("time"), r.get("action"), r.get("reason"), r.get("duplicate_of"), r.get("spider")]
           for i, r in enumerate(recs, 1)],
          title=f"{term(args.url)}: {plural(len(recs), 'line')} in {log}, oldest first")
    if malformed.count:
        lines(f"drop log: {malformed}")
    lines(f"`crawler-dedup show URL --line N` shows line N (the default: the latest, {len(recs)})")


def _own_text(rec: dict, dir_: str, settings: dict | None = None) -> str | None:
    """A kept page's own text, from the index (a `kept` line carries none)."""
    from ..tools.show import ReadOnlyIndex, ShowError

    try:
        with ReadOnlyIndex(dir_, settings) as index:
            found = index.by_url(rec["url"])
    except ShowError:
        return None
    return found[0].text if found else None


def _kept(rec: dict, dir_: str, settings: dict | None = None):
    """(the kept page the drop matched, from the index read-only, or None; a note on why not)."""
    from ..tools.show import ReadOnlyIndex, ShowError

    from ..tools.indexes import index_name

    kept, note = None, None
    where = index_name(dir_, settings)
    try:
        with ReadOnlyIndex(dir_, settings) as index:
            kept = index.kept(rec.get("duplicate_of_fingerprint"), rec.get("duplicate_of"))
            now = index.by_url(rec["duplicate_of"]) if kept is None and isinstance(rec.get("duplicate_of"), str) else []
        if kept is None and now:
            note = (f"the kept page's entry in {where} was updated since: a later crawl kept a changed text at "
                    f"{rec['duplicate_of']} (fingerprint {now[0].fingerprint:016x}), which is not the text this drop was compared with")
        elif kept is None:
            note = f"the kept page is no longer in {where} (expired or removed)"
    except ShowError as exc:
        from ..tools.indexes import is_lmdb

        if not is_lmdb(settings):  # an index named with --redis / DEDUP_BACKEND that cannot be read: an error
            raise CliError(str(exc)) from None
        note = str(exc) + index_hint(dir_)
    return kept, note


def _no_diff(rec, kept, note, dropped_text, kept_text) -> None:
    missing = []
    if dropped_text is None:
        missing.append("the drop-log line has no `text`")
    if kept is not None and kept_text is None:
        missing.append("the index holds no text for the kept page")
    if missing and kept is None and note:
        print("no diff: " + note)
    elif missing:
        print("no diff: " + " and ".join(missing) + " (crawled with DEDUP_STORE_TEXT off, or by an older "
              "crawler-dedup); turn DEDUP_STORE_TEXT on to keep texts for later crawls")
    else:
        print("no diff: " + (note or "the kept page's text is not available"))
    if rec.get("excerpt"):
        print(term(f"excerpt of the dropped page: {rec['excerpt']}"))
