"""`crawler-dedup inspect`: a drop log summarized in one streaming pass."""

from __future__ import annotations

from .common import (CliError, add_filters, add_json, add_legacy, add_log, add_settings, backend_settings, filters,
                     resolve_log_dir)
from .out import Progress


def add_parser(sub):
    p = sub.add_parser(
        "inspect", help="summarize a drop log: counts, top kept pages, histograms, latest drops",
        description="Summarize a drop log in one streaming pass: drops by reason, action, stage and domain, "
        "the kept pages with the most duplicates (each dropped URL once, however many crawls dropped it), similarity "
        "and distance histograms, and the latest drops. "
        "Malformed lines are counted and skipped.")
    add_log(p)
    p.add_argument("--dir", metavar="DIR", help="the index whose drop log is <DIR>/droplog.jsonl (when --log is not given)")
    p.add_argument("--redis", metavar="URL", help="the drop log of the Redis index at URL (its prefix: -s "
                   "DEDUP_REDIS_PREFIX=...): <DIR>/droplog-redis-<prefix>.jsonl, when --log is not given")
    add_settings(p)
    add_legacy(p, "log")
    add_filters(p)
    p.add_argument("--limit", type=int, default=20, metavar="N", help="latest matching drops listed (default 20)")
    p.add_argument("--top", type=int, default=10, metavar="N", help="rows of the domain and kept-page tables (default 10)")
    add_json(p)
    return p


def run(args) -> int:
    import json

    from ..tools.inspect import LogError, summarize

    selected = filters(args)
    args.log, _ = resolve_log_dir(args.log, args.dir, backend_settings(args))
    if args.limit < 0 or args.top < 1:
        raise CliError("--limit takes 0 or more, --top 1 or more")
    try:
        summary = summarize(args.log, selected, limit=args.limit, top=args.top,
                            progress=Progress("reading", unit="MiB"))
    except LogError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print(json.dumps(summary.to_json(args.log, selected), indent=1))
    else:
        print_summary(summary, args.log, selected)
    return 0


def print_summary(s, path: str, filters) -> None:
    """The summary as tables (rich on a terminal, plain columns when piped)."""
    from ..tools.inspect import SIM_BINS, brief
    from .common import term
    from .out import fancy, lines, table

    head = f"{term(path)}: {s.total} drop-log lines"
    if filters.active:
        head += f", {s.matched} matching ({term(filters.describe())})"
    if s.malformed.count:
        head += f"; {s.malformed}"
    out = [head] + [f"  line {number}: {term(why)}" for number, why in s.malformed.examples]
    if s.first:
        out.append(f"from {term(s.first)} to {term(s.last)}")
    if not s.matched:
        out.append("no drops match" if filters.active or s.total else "no drops")
        lines("\n".join(out))
        return
    for title, counter in (("reason", s.by_reason), ("action", s.by_action), ("stage", s.by_stage),
                           ("measure", s.by_measure)):
        if counter:
            out.append(f"by {title}: " + ", ".join(f"{term(k)} {v}" for k, v in counter.most_common()))
    lines("\n".join(out))
    approx = " (approximate: many distinct values)" if s.domains.approximate else ""
    lines("")
    table([("drops", "right"), "domain"], [[n, d or "(none)"] for d, n in s.domains.top(s.top_n)],
          title=f"drops by domain{approx}:")
    approx = " (approximate: many distinct values)" if s.kept.approximate else ""
    lines("")
    table([("duplicates", "right"), "kept page", "title"],
          [[row["duplicates"], row["url"], row["title"] or ""] for row in s.top_kept()],
          title=f"kept pages with the most duplicates{approx}:")
    bar = "█" if fancy() else "#"

    def histogram(title, labels, counts):
        most = max(counts, default=0)
        lines("")
        table([("", "right"), ("drops", "right"), ""],
              [[label, c, bar * max(1, round(40 * c / most)) if c and most else ""] for label, c in zip(labels, counts)],
              title=title)

    first = next((i for i, c in enumerate(s.sim_bins) if c), 0)
    histogram("similarity:", [f"{i / SIM_BINS:.2f}-{(i + 1) / SIM_BINS:.2f}" for i in range(first, SIM_BINS)],
              s.sim_bins[first:])
    used = [d for d, c in enumerate(s.dist_bins) if c]
    if not used:
        lines("\ndistance (bits):\n  (no distances)")
    elif max(used) <= 16:
        top = max(used)
        histogram("distance (bits):", [str(d) for d in range(top + 1)], s.dist_bins[: top + 1])
    else:  # a wide range: 4-bit bins
        edges = range(0, max(used) + 1, 4)
        histogram("distance (bits):", [f"{e}-{e + 3}" for e in edges], [sum(s.dist_bins[e:e + 4]) for e in edges])
    if s.drops:
        rows = []
        for d in map(brief, s.drops):
            sim, score = d.get("similarity"), d.get("score")
            rows.append([str(d.get("time", ""))[:19], d.get("reason"), f"{sim:.2f}" if isinstance(sim, (int, float)) else "-",
                         f"{score:.3f}" if isinstance(score, (int, float)) else "-",
                         d.get("distance", "-"), d["url"], d.get("duplicate_of")])
        lines("")
        kept = bool(getattr(filters, "kept", False))
        table(["time", "reason", ("sim", "right"), ("score", "right"), ("dist", "right"), "url",
               "candidate" if kept else "duplicate of"], rows,
              title=f"latest {len(s.drops)} of {s.matched} matching {'pages kept apart' if kept else 'drops'}:")
