"""`crawler-dedup eval --pairs FILE`: precision and recall on a user's labelled pairs."""

from __future__ import annotations

from .common import CliError, Progress, add_settings, make_config, parse_settings


def add_parser(sub):
    p = sub.add_parser(
        "eval", help="measure precision and recall on labelled pairs of your own",
        description="With --pairs FILE (JSONL: {\"a\": text, \"b\": text, \"duplicate\": true}, or a_html/b_html), "
        "print each verifier's precision/recall/F1 for a sweep of thresholds, to tune DEDUP_* for your sites. "
        "(Copies of real pages are scored by python benchmarks/realcopies.py.)",
    )
    p.add_argument("--pairs", required=True, metavar="FILE", help="your labelled pairs (JSONL)")
    add_settings(p)
    return p


def _num(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def run(args) -> int:
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
    print(f"{len(pairs)} pairs, {sum(labels)} labelled duplicate; {used} decided"
          + (f", {len(pairs) - used} skipped ({', '.join(f'{n} {w}' for w, n in skipped.items())}; "
             "a skipped pair counts as kept, as a crawl keeps such a page)" if skipped else ""))
    print(f"\nthese settings: P {_num(p)}  R {_num(r)}  F1 {_num(f)}"
          + ("  (nothing was dropped: no precision)" if p is None else ""))
    scores_all = ev.score_pairs(pairs, config)
    _print_wrong(args.pairs, pairs, decided, scores_all)
    _print_threshold_sweep(texts, labels, settings)
    scored = [s for s in scores_all if s is not None]
    for measure in ("resemblance", "containment", "qgram", "swlr"):
        rows = ev.sweep(scored, measure)
        print(f"\n{measure} alone (the verifier's score, no guards):")
        print("  " + "  ".join(f"{t:.2f}: P {_num(p)} R {_num(r)}" for t, p, r, _ in rows[::3]))
    return 0


def _print_wrong(path, pairs, decided, scores_all) -> None:
    """The missed duplicates and the false drops, by file line, with their scores."""
    for title, wrong in (("missed duplicates (labelled duplicate, kept)", lambda said, dup: dup and not said),
                         ("false drops (labelled distinct, dropped)", lambda said, dup: said and not dup)):
        rows = [(pair, why, sc) for pair, (said, why), sc in zip(pairs, decided, scores_all)
                if wrong(bool(said), pair["duplicate"])]
        if not rows:
            continue
        print(f"\n{title}: {len(rows)}" + (" (the first 20)" if len(rows) > 20 else ""))
        for pair, why, sc in rows[:20]:
            how = why if why and not why.startswith(("kept", "dropped")) else None
            scores = (f"; resemblance {sc.resemblance:.2f}, containment {sc.containment:.2f}" if sc else "")
            print(f"  {path}:{pair['_line']}: {('skipped: ' + how) if how else why}{scores}")


def _print_threshold_sweep(texts, labels, settings) -> None:
    from ..tools import pairs as ev

    name = "DEDUP_THRESHOLD"
    print(f"\n{name} swept, the other settings as given (what a crawl would drop):")
    print(f"  {'threshold':>9} {'P':>6} {'R':>6} {'F1':>6}")
    rows = []
    for step in range(2, 20):
        t = round(0.05 * step, 2)
        said = [d for d, _ in ev.decide_pairs(texts, {**settings, name: t})]
        rows.append((t, *ev.pr(said, labels)[:3]))
    good = [row for row in rows if row[1] is not None and row[1] >= 0.995 and row[3] is not None]
    best = max(good, key=lambda row: (row[3], row[0])) if good else None
    for row in rows:
        mark = "  <- best F1 at P >= 0.995" if row == best else ""
        print(f"  {row[0]:>9.2f} {_num(row[1]):>6} {_num(row[2]):>6} {_num(row[3]):>6}{mark}")
    if best is None:
        print("  no threshold reaches precision 0.995 on these pairs")
