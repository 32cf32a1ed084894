"""`crawler-dedup eval --pairs FILE`: precision and recall on a user's labelled pairs;
`eval --fit FILE`: the score taught those pairs, written as a model file for DEDUP_MODEL."""

from __future__ import annotations

from .common import CliError, add_json, add_settings, make_config, parse_settings
from .out import Progress


def add_parser(sub):
    p = sub.add_parser(
        "eval", help="measure precision and recall on labelled pairs of your own, or fit the score to them",
        description="With --pairs FILE (JSONL: {\"a\": text, \"b\": text, \"duplicate\": true}, or a_html/b_html, "
        "optional a_title/b_title, a_url/b_url), print what these settings decide for each pair, each verifier's "
        "precision/recall/F1 for a sweep of thresholds, to tune DEDUP_* for your sites. With --fit FILE (the same "
        "format), teach the score those pairs: the shipped model's trees are weighed with a linear correction "
        "fitted on them, cross-validated by host, and the result is written to --out for DEDUP_MODEL. "
        "(Copies of real pages are scored by python benchmarks/realcopies.py.)",
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--pairs", metavar="FILE", help="your labelled pairs (JSONL): measure")
    what.add_argument("--fit", metavar="FILE", help="your labelled pairs (JSONL): fit the score to them")
    p.add_argument("--out", metavar="MODEL.json", default="dedup-model.json",
                   help="--fit: where the model goes (default dedup-model.json); use it with -s DEDUP_MODEL=PATH")
    p.add_argument("--precision", type=float, default=0.997, metavar="P",
                   help="--fit: the out-of-fold precision the threshold is chosen for (default 0.997)")
    p.add_argument("--strength", type=float, default=10.0, metavar="S",
                   help="--fit: how hard the fit holds to the shipped model (default 10; lower follows your pairs more)")
    add_settings(p)
    add_json(p)
    return p


def _num(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def run(args) -> int:
    if args.fit:
        return _fit(args)
    import json
    from collections import Counter

    from ..tools import pairs as ev

    settings = parse_settings(args.set)
    config = make_config(settings)
    pairs = _read(args.pairs)
    labels = [p["duplicate"] for p in pairs]
    texts = ev.pair_texts(pairs, progress=Progress("extracting"))
    weighed = ev.weigh_pairs(texts, settings, pairs)
    decided = [(said, why) for said, why, _ in weighed]
    skipped = Counter(why for said, why in decided if said is None)
    p, r, f, used = ev.pr([said for said, _ in decided], labels)
    scores_all = ev.score_pairs(pairs, config)
    result = {
        "pairs": len(pairs), "duplicates": sum(labels), "decided": used, "skipped": dict(skipped),
        "settings": {"precision": p, "recall": r, "f1": f},
        "wrong": _wrong(args.pairs, pairs, decided, scores_all),
        "threshold_sweep": _threshold_sweep(weighed, labels, config),
        "measures": {m: [{"threshold": t, "precision": pp, "recall": rr, "f1": ff}
                         for t, pp, rr, ff in ev.sweep([s for s in scores_all if s is not None], m)]
                     for m in ("resemblance", "containment", "qgram", "swlr")},
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    _print(result)
    return 0


def _read(path: str) -> list[dict]:
    from ..tools import pairs as ev

    try:
        return ev.read_pairs(path)
    except (OSError, ValueError) as exc:
        raise CliError(str(exc)) from None


def _fit(args) -> int:
    """Measure each pair as a crawl that kept a would weigh b, fit the correction, write the model."""
    import json
    from urllib.parse import urlsplit

    from ..core.decide.model import load
    from ..exceptions import ModelError
    from ..tools import fit as fitting
    from ..tools import pairs as ev
    from .out import lines

    if not 0.5 <= args.precision < 1:
        raise CliError(f"--precision takes a number from 0.5 to under 1, not {args.precision}")
    if args.strength <= 0:
        raise CliError(f"--strength takes a number over 0, not {args.strength}")
    settings = parse_settings(args.set)
    config = make_config(settings)
    try:
        base = load(config.model)
    except ModelError as exc:
        raise CliError(f"DEDUP_MODEL: {exc}") from None
    pairs = _read(args.fit)
    texts = ev.pair_texts(pairs, progress=Progress("extracting"))
    weighed = ev.weigh_pairs(texts, settings, pairs)
    rows = [(pair, m) for pair, (_, _, m) in zip(pairs, weighed) if m is not None]
    labels = [bool(pair["duplicate"]) for pair, _ in rows]
    unweighed = [pair for pair, (_, _, m) in zip(pairs, weighed) if m is None]
    if len(rows) < 10 or sum(labels) < 2 or len(labels) - sum(labels) < 2:
        raise CliError(f"{len(rows)} of {len(pairs)} pairs were weighed ({sum(labels)} duplicates): --fit needs 10 "
                       "or more, with 2 or more of each label (a pair whose pages share too little is never weighed)")
    hosts = [urlsplit(pair.get("b_url") or "").hostname or f"pair{pair['_line']}" for pair, _ in rows]
    before = [base.score(m).probability for _, m in rows]
    try:
        got = fitting.fit_correction(base, [m for _, m in rows], labels, hosts, precision=args.precision,
                                     strength=args.strength, about={"pairs_file": args.fit})
    except ValueError as exc:
        raise CliError(f"the fit failed on these pairs: {exc}") from None
    try:
        fitting.write(got.model, args.out)
    except OSError as exc:
        raise CliError(f"cannot write {args.out}: {exc.strerror or exc}", 1) from None
    import numpy as np

    y = np.array(labels, dtype=float)
    shipped = fitting.fold_figures(np.array(before), y, base.threshold)
    info = got.model.about["correction"]
    result = {"pairs": len(pairs), "weighed": len(rows), "not_weighed": len(unweighed),
              "not_weighed_duplicates": sum(bool(p["duplicate"]) for p in unweighed),
              "shipped": shipped, "out_of_fold": info["out_of_fold"], "folds": info["folds"],
              "threshold": got.model.threshold, "forest_weight": round(got.model.forest_weight, 4),
              "model": args.out}
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    lines(f"{len(pairs)} pairs, {len(rows)} weighed ({sum(labels)} labelled duplicate)"
          + (f"; {len(unweighed)} share too little to be weighed ({result['not_weighed_duplicates']} of them "
             "labelled duplicate: no score finds those)" if unweighed else ""))
    lines(f"the score as shipped, on these pairs: P {_num(shipped['precision'])}  R {_num(shipped['recall'])} "
          f"(threshold {base.threshold:.3f})")
    o = info["out_of_fold"]
    lines(f"taught these pairs, out of fold (each fold's hosts unseen): P {_num(o['precision'])}  R {_num(o['recall'])}"
          f"  (threshold {got.model.threshold:.3f}, chosen for P >= {args.precision})")
    for f in info["folds"]:
        lines(f"  fold {f['fold']}: {f['pairs']} pairs, {f['copies']} duplicates, {f['true']} found, {f['false']} false")
    lines(f"wrote {args.out}: crawl with it by -s DEDUP_MODEL={args.out} (or DEDUP_MODEL in settings.py); "
          "docs/tuning.md#teach-it-your-sites")
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


def _threshold_sweep(weighed, labels, config) -> dict:
    """The score's threshold swept over the weighed pairs (a pair never weighed is kept at any)."""
    from ..core.decide.model import load
    from ..tools import pairs as ev

    model = load(config.model)
    scores = [model.score(m).probability if m is not None else None for _, _, m in weighed]
    rows = []
    for t in (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.92, 0.94, 0.96, 0.98, 0.99):
        said = [None if s is None and d is None else (s is not None and s >= t) for s, (d, _, _) in zip(scores, weighed)]
        pp, rr, ff, _ = ev.pr(said, labels)
        rows.append({"threshold": t, "precision": pp, "recall": rr, "f1": ff})
    good = [row for row in rows if row["precision"] is not None and row["precision"] >= 0.995 and row["f1"] is not None]
    best = max(good, key=lambda row: (row["f1"], row["threshold"])) if good else None
    return {"setting": "the score's threshold", "shipped": model.threshold, "rows": rows,
            "best": best["threshold"] if best else None}


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
          title=f"{sweep['setting']} swept ({sweep['shipped']:.3f} in the model these settings use): what a model "
                "with that threshold would drop")
    if sweep["best"] is None:
        lines("  no threshold reaches precision 0.995 on these pairs")
    else:
        lines("  a threshold of your own comes with a model fitted to your pairs: crawler-dedup eval --fit FILE")
    for measure, rows in result["measures"].items():
        lines(f"\n{measure} alone (the verifier's measurement, without the score):")
        lines("  " + "  ".join(f"{r['threshold']:.2f}: P {_num(r['precision'])} R {_num(r['recall'])}" for r in rows[::3]))
