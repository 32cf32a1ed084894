"""`crawler-dedup eval --pairs FILE`: precision and recall on a user's labelled pairs."""

from __future__ import annotations

from .common import CliError, add_json, add_settings, make_config, parse_settings
from .out import Progress


def add_parser(sub):
    p = sub.add_parser(
        "eval", help="measure precision and recall on labelled pairs of your own",
        description="With --pairs FILE (JSONL: {\"a\": text, \"b\": text, \"duplicate\": true}, or a_html/b_html), "
        "print each verifier's precision/recall/F1 for a sweep of thresholds, to tune DEDUP_* for your sites. "
        "(Copies of real pages are scored by python benchmarks/realcopies.py.)",
    )
    p.add_argument("--pairs", required=True, metavar="FILE", help="your labelled pairs (JSONL)")
    add_settings(p)
    add_json(p)
    return p


def _num(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def run(args) -> int:
    import json
    from collections import Counter

    from ..tools import pairs as ev

    settings = parse_settings(args.set)
    config = make_config(settings)
    try:
        pairs = ev.read_pairs(args.pairs)
    except (OSError, ValueError) as exc:
        raise CliError(str(exc)) from None
    labels = [p["duplicate"] for p in pairs]
    texts = ev.pair_texts(pairs, progress=Progress("extracting"))
    decided = ev.decide_pairs(texts, settings)
    skipped = Counter(why for said, why in decided if said is None)
    p, r, f, used = ev.pr([said for said, _ in decided], labels)
    scores_all = ev.score_pairs(pairs, config)
    result = {
        "pairs": len(pairs), "duplicates": sum(labels), "decided": used, "skipped": dict(skipped),
        "settings": {"precision": p, "recall": r, "f1": f},
        "wrong": _wrong(args.pairs, pairs, decided, scores_all),
        "threshold_sweep": _threshold_sweep(texts, labels, settings),
        "measures": {m: [{"threshold": t, "precision": pp, "recall": rr, "f1": ff}
                         for t, pp, rr, ff in ev.sweep([s for s in scores_all if s is not None], m)]
                     for m in ("resemblance", "containment", "qgram", "swlr")},
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    _print(result)
    return 0


def _wrong(path, pairs, decided, scores_all) -> dict:
    """The missed duplicates and the false drops, by file line, with their scores."""
    out = {}
    for key, wrong in (("missed", lambda said, dup: dup and not said), ("false_drops", lambda said, dup: said and not dup)):
        rows = []
        for pair, (said, why), sc in zip(pairs, decided, scores_all):
            if not wrong(bool(said), pair["duplicate"]):
                continue
            how = why if why and not why.startswith(("kept", "dropped")) else None
            rows.append({"where": f"{path}:{pair['_line']}", "line": pair["_line"], "why": ("skipped: " + how) if how else why,
                         "resemblance": round(sc.resemblance, 3) if sc else None,
                         "containment": round(sc.containment, 3) if sc else None})
        out[key] = rows
    return out


def _threshold_sweep(texts, labels, settings) -> dict:
    from ..tools import pairs as ev

    rows = []
    for step in range(2, 20):
        t = round(0.05 * step, 2)
        said = [d for d, _ in ev.decide_pairs(texts, {**settings, "DEDUP_THRESHOLD": t})]
        pp, rr, ff, _ = ev.pr(said, labels)
        rows.append({"threshold": t, "precision": pp, "recall": rr, "f1": ff})
    good = [row for row in rows if row["precision"] is not None and row["precision"] >= 0.995 and row["f1"] is not None]
    best = max(good, key=lambda row: (row["f1"], row["threshold"])) if good else None
    return {"setting": "DEDUP_THRESHOLD", "rows": rows, "best": best["threshold"] if best else None}


def _print(result: dict) -> None:
    from .out import lines, table

    n, used = result["pairs"], result["decided"]
    skipped = result["skipped"]
    lines(f"{n} pairs, {result['duplicates']} labelled duplicate; {used} decided"
          + (f", {n - used} skipped ({', '.join(f'{c} {w}' for w, c in skipped.items())}; "
             "a skipped pair counts as kept, as a crawl keeps such a page)" if skipped else ""))
    st = result["settings"]
    lines(f"\nthese settings: P {_num(st['precision'])}  R {_num(st['recall'])}  F1 {_num(st['f1'])}"
          + ("  (nothing was dropped: no precision)" if st["precision"] is None else ""))
    for key, title in (("missed", "missed duplicates (labelled duplicate, kept)"),
                       ("false_drops", "false drops (labelled distinct, dropped)")):
        rows = result["wrong"][key]
        if rows:
            lines("")
            table(["pair (file:line)", "why", ("resemblance", "right"), ("containment", "right")],
                  [[r["where"], r["why"], _num(r["resemblance"]), _num(r["containment"])] for r in rows[:20]],
                  title=f"{title}: {len(rows)}" + (" (the first 20)" if len(rows) > 20 else ""))
    sweep = result["threshold_sweep"]
    lines("")
    table([("threshold", "right"), ("P", "right"), ("R", "right"), ("F1", "right"), ""],
          [[f"{row['threshold']:.2f}", _num(row["precision"]), _num(row["recall"]), _num(row["f1"]),
            "<- best F1 at P >= 0.995" if row["threshold"] == sweep["best"] else ""] for row in sweep["rows"]],
          title=f"{sweep['setting']} swept, the other settings as given (what a crawl would drop):")
    if sweep["best"] is None:
        lines("  no threshold reaches precision 0.995 on these pairs")
    for measure, rows in result["measures"].items():
        lines(f"\n{measure} alone (the verifier's score, no guards):")
        lines("  " + "  ".join(f"{r['threshold']:.2f}: P {_num(r['precision'])} R {_num(r['recall'])}" for r in rows[::3]))
