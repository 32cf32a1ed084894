"""`crawler-dedup report`: one self-contained HTML file about a drop log."""

from __future__ import annotations

import os
import sys

from .common import (
    CliError,
    add_filters,
    add_index,
    add_legacy,
    add_log,
    backend_settings,
    filters,
    has_index,
    index_hint,
    resolve_log_dir,
    same_file,
    term,
)
from .out import Progress, plural


def add_parser(sub):
    p = sub.add_parser(
        "report", help="one self-contained HTML file: plots, a sortable and filterable table, a diff per drop",
        description="Write one static HTML file (no network needed to view it) with similarity and distance "
        "histograms, drops over time and per domain, a sortable, filterable table of drops and a diff view "
        "for each. Plots use every line; the table holds at most --rows drops (the latest).")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file to write")
    add_log(p)
    add_index(p, dir_help="the index, for the kept pages' texts in the diff view (default: the project's "
              "DEDUP_DIR, else .scrapy/dedup)")
    p.add_argument("--rows", type=int, default=20_000, metavar="N", help="drops in the table at most (default 20000)")
    add_legacy(p, "log")
    add_filters(p)
    return p


def run(args) -> int:
    from ..tools.inspect import LogError
    from ..tools.report import write_report
    from ..tools.show import ShowError

    selected = filters(args)
    if args.rows < 0:
        raise CliError("--rows takes 0 or more")
    log, found = resolve_log_dir(args.log, args.dir, backend_settings(args))
    dir_: str | None = found
    if os.path.exists(log) and same_file(log, args.output):  # before the HTML overwrites it
        raise CliError(f"-o {args.output} is the drop log itself: give another file, e.g. report.html")
    settings = backend_settings(args)
    if dir_ is None or not has_index(dir_, settings):
        if args.dir:
            raise CliError(f"no LMDB index in {args.dir}{index_hint(args.dir)}")
        dir_ = None  # no index: the diff view has the dropped texts only
    try:
        info = write_report(log, args.output, filters=selected, dir_=dir_, max_rows=args.rows,
                            progress=Progress("reading", unit="MiB"), settings=settings)
    except (LogError, ShowError) as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"cannot write {args.output}: {exc.strerror or exc}", 1) from None
    print(f"{args.output}: {info['rows']} of {plural(info['matched'], 'drop')} in the table"
          f"{' (the latest; plots use all)' if info['rows'] < info['matched'] else ''}, "
          f"{info['texts']} with texts for the diff view; {plural(info['malformed'], 'malformed line')} skipped"
          + (f" ({info['torn']} torn: cut short by a crash while written)" if info.get("torn") else ""))
    if info.get("index_unread"):
        print(f"crawler-dedup report: warning: the kept pages' texts are not in the diff view: "
              f"{term(info['index_unread'])}", file=sys.stderr)
    return 0
