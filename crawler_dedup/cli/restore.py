"""`crawler-dedup restore`: dropped items back as JSONL, and DEDUP_ALLOW entries for them."""

from __future__ import annotations

import os
import sys

from .common import (CliError, add_filters, add_legacy, add_log, add_settings, backend_settings, filters, resolve_log_dir,
                     same_file, term)
from .out import Progress, plural


def add_parser(sub):
    p = sub.add_parser(
        "restore", help="write dropped items back as JSONL for re-ingestion; allow-list them",
        description="Write the selected drops' items (the drop log's `item`, kept with DEDUP_DROPLOG_ITEMS; "
        "else {url, text, title} from its `text` and `title`) as JSONL. Select with --url, the filters, or "
        "--all; without any, nothing is restored. --allow prints a DEDUP_ALLOW regex per restored URL so it is never dropped "
        "again; `crawler-dedup index remove URL` instead takes the kept page out of the index.")
    add_log(p)
    p.add_argument("--dir", metavar="DIR", help="the index whose drop log is <DIR>/droplog.jsonl (when --log is not given)")
    p.add_argument("--redis", metavar="URL", help="the drop log of the Redis index at URL (its prefix: -s "
                   "DEDUP_REDIS_PREFIX=...): <DIR>/droplog-redis-<prefix>.jsonl, when --log is not given")
    add_settings(p)
    add_legacy(p, "log")
    p.add_argument("-o", "--output", metavar="OUT.jsonl", help="where the items go (default: stdout)")
    add_filters(p)
    p.add_argument("--all", action="store_true", help="restore every drop in the log")
    p.add_argument("--allow", action="store_true", help="print a DEDUP_ALLOW regex per restored URL")
    p.add_argument("--allow-file", metavar="FILE", help="append those regexes to FILE instead (implies --allow)")
    return p


def run(args) -> int:
    import contextlib

    from ..tools.inspect import LogError
    from ..tools.restore import allow_pattern, restore

    selected = filters(args)
    if selected.kept:
        raise CliError("--kept selects pages that were kept, not dropped: there is nothing to restore")
    args.log, _ = resolve_log_dir(args.log, args.dir, backend_settings(args))
    if not (args.all or selected.active):
        raise CliError("say what to restore: --url U, a filter (--domain, --reason, --since, "
                       "--min-similarity) or --all")
    if args.all and selected.active:
        raise CliError("--all restores every drop: give it without filters")
    if args.allow_file and not args.allow:
        args.allow = True
    from ..droplog import MANIFEST

    parts = os.path.isfile(os.path.join(args.log, MANIFEST))  # (a Spark scan's drop log, in parts)
    if not os.path.isfile(args.log) and not parts:  # before -o is created: no empty output for a wrong path
        raise CliError(f"no drop log at {args.log}" if not os.path.exists(args.log) else
                       f"{args.log} is not a drop log file")
    # before anything is opened for writing: `-o LOG` would empty the log, `--allow-file LOG` append to it
    for option, path in (("-o", args.output), ("--allow-file", args.allow_file)):
        if path not in (None, "-") and same_file(args.log, path):
            raise CliError(f"{option} {path} is the drop log itself: give another file")
    try:
        with contextlib.ExitStack() as stack:
            out = sys.stdout if args.output in (None, "-") else stack.enter_context(open(args.output, "w", encoding="utf-8"))
            result = restore(args.log, selected, out, select_all=args.all, progress=Progress("reading", unit="MiB"))
    except LogError as exc:
        raise CliError(str(exc)) from None
    except BrokenPipeError:
        raise  # `restore ... | head`: the reader has what it wanted (main exits 0)
    except OSError as exc:
        raise CliError(f"cannot write {args.output or 'stdout'}: {exc.strerror or exc}", 1) from None
    report = sys.stderr if args.output in (None, "-") else sys.stdout
    print(f"restored {result.written} of {plural(result.selected, 'selected drop')} ({plural(result.from_items, 'item')}, "
          f"{result.from_text} from the extracted text) to {args.output or 'stdout'}", file=report)
    for url in selected.urls:
        if "*" not in url and url not in result.found:
            print(f"crawler-dedup restore: warning: no drop-log line for {term(url)}", file=sys.stderr)
    if result.earlier:
        was = "was" if result.earlier == 1 else "were"
        print(f"{plural(result.earlier, 'selected drop')} {was} of a URL dropped again later: each URL is restored "
              "once, from its latest drop", file=report)
    if result.unchanged:
        what = "is an unchanged revisit" if result.unchanged == 1 else "are unchanged revisits"
        print(f"{plural(result.unchanged, 'selected drop')} {what} with the very words of the page kept before "
              "(storage holds it): nothing to restore", file=report)
    if result.not_modified:
        was = "was a copy" if result.not_modified == 1 else "were copies"
        print(f"{plural(result.not_modified, 'selected drop')} {was} decided on a 304 Not Modified (the body not "
              "downloaded again, so no text in the line): "
              + ("allow-listed below; the next crawl downloads and keeps them" if args.allow else
                 "give --allow for DEDUP_ALLOW patterns, and the next crawl downloads and keeps them"), file=report)
    if result.nothing:
        print(term(f"{plural(result.nothing, 'selected drop')} had nothing to restore (no `item` nor `text` in the line; "
                   f"DEDUP_DROPLOG_ITEMS / DEDUP_STORE_TEXT were off), e.g. {', '.join(result.nothing_examples)}"),
              file=report)
    if result.malformed.count:
        print(result.malformed, file=report)
    if args.allow:
        _allow(args, [allow_pattern(u) for u in [*result.urls, *result.refetch]], report)
    return 0


def _allow(args, patterns: list[str], report) -> None:
    if args.allow_file:
        try:
            with open(args.allow_file, "a", encoding="utf-8") as fh:
                fh.writelines(p + "\n" for p in patterns)
        except OSError as exc:
            raise CliError(f"cannot append to {args.allow_file}: {exc.strerror or exc}", 1) from None
        print(f"appended {len(patterns)} DEDUP_ALLOW patterns to {args.allow_file}", file=report)
    else:
        print("DEDUP_ALLOW entries (these URLs will never be dropped again):", file=report)
        for pattern in patterns:
            print(f"  {term(pattern)}", file=report)
