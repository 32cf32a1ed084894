"""`crawler-dedup compare A B`: two pages scored against each other, and the verdict."""

from __future__ import annotations

from ..droplog import dumps
from .common import CliError, add_json, add_settings, make_config, parse_settings
from .out import plural


def add_parser(sub):
    p = sub.add_parser(
        "compare", help="two URLs or files: texts, fingerprints, every verifier's score, the verdict",
        description="Fetch (plain HTTP GET) or read two pages (.html or .txt files, or http(s) URLs), and print "
        "their extracted texts, fingerprints and distance, every verifier's score of B against A, and what "
        "these settings would decide for B after keeping A: the pair's score and each measurement's part in it.")
    p.add_argument("a", metavar="A", help="URL or file kept first")
    p.add_argument("b", metavar="B", help="URL or file checked against A")
    p.add_argument("--lines", type=int, default=3, metavar="N", help="first lines of each text shown (default 3)")
    add_settings(p)
    add_json(p, help="print the texts' sizes, fingerprints, scores and the verdict as JSON")
    return p


def run(args) -> int:
    from ..deduplicator import Deduplicator
    from ..core.page.fingerprint import Fingerprinted
    from ..core.page.tokens import tokenize
    from ..tools.pairs import score_pairs
    from ..tools.show import ShowError, load_source, xor_line

    config = make_config({**parse_settings(args.set), "DEDUP_BACKEND": "memory"})
    try:
        a, b = (load_source(x, config.max_bytes, config.extract_mode) for x in (args.a, args.b))
    except ShowError as exc:
        raise CliError(str(exc), exc.exit_code) from None

    dedup = Deduplicator(config).open()
    fps: dict = {}
    data: dict = {"A": {"name": a.name}, "B": {"name": b.name}}
    import builtins

    real_print = builtins.print

    def print(*parts, **kw):  # noqa: A001 - the text output; --json collects `data` instead
        if not args.json:
            real_print(*parts, **kw)

    for label, src in (("A", a), ("B", b)):
        side = data[label]
        side.update({"url": src.url, "title": src.title, "problem": src.problem if src.text is None else None})
        print(f"{label}: {src.name}")
        if src.title:
            print(f"   title: {src.title}")
        if src.text is None:
            print(f"   {src.problem}")
            continue
        words = len(tokenize(src.text))
        lines = [line.strip() for line in src.text.splitlines() if line.strip()]
        side.update({"characters": len(src.text), "words": words, "lines": len(lines)})
        print(f"   text: {plural(len(src.text), 'character')}, {plural(words, 'word')}, {plural(len(lines), 'line')}")
        for line in lines[: args.lines]:
            print(f"   | {line[:110]}{'…' if len(line) > 110 else ''}")
        fp = dedup.fingerprint(src.text)
        if not isinstance(fp, Fingerprinted):
            side["not_fingerprinted"] = str(fp)
            print(f"   not fingerprinted: {fp} (DEDUP_MIN_TOKENS={config.min_tokens})")
        else:
            fps[label] = fp
            side.update({"fingerprint": f"{fp.fingerprint:016x}", "shingles": fp.shingles})
            print(f"   fingerprint {fp.fingerprint:016x}, {fp.shingles} distinct shingles")
    print()
    if len(fps) == 2:
        fa, fb = f"{fps['A'].fingerprint:016x}", f"{fps['B'].fingerprint:016x}"
        dist = (fps["A"].fingerprint ^ fps["B"].fingerprint).bit_count()
        data.update({"distance": dist, "exact": fps["A"].digest == fps["B"].digest})
        print(f"xor {xor_line(fa, fb)}")
        print(f"distance {dist} bits: {'within' if dist <= config.k else 'beyond'} DEDUP_K={config.k}"
              f"{'' if dist <= config.k else ' (a candidate only through the sketch postings)'}")
        print(f"same words (exact): {'yes' if fps['A'].digest == fps['B'].digest else 'no'}")
        # B scored against A, the way a crawl that kept A first checks B
        scores = score_pairs([{"a": b.text, "b": a.text, "duplicate": False}], config)[0]
        if scores is not None:
            data["scores"] = {m: round(getattr(scores, m), 4) for m in ("resemblance", "containment", "qgram", "swlr")}
            print("scores of B against A (every verifier):")
            own = ""
            if dedup.verifier.name not in ("resemblance", "qgram", "swlr"):  # DEDUP_VERIFIER of one's own
                from ..core.index.records import DocRecord

                kept = fps["A"]
                doc = DocRecord(url="A", fingerprint=kept.fingerprint, sketch=kept.sketch, tokens=kept.tokens, time=0,
                                shingles=kept.shingles, extras=kept.extras)
                own = f"   {dedup.verifier.name} {dedup.verifier.score(fps['B'], doc, config)[0]:.3f}"
            print(f"   resemblance {scores.resemblance:.3f}   containment (of B in A) {scores.containment:.3f}   "
                  f"qgram {scores.qgram:.3f}   swlr {scores.swlr:.3f}{own}")
    # the pages' own URLs when both are fetched (the same-site rules need them), else labels
    web = all(src.url.startswith(("http://", "https://")) for src in (a, b)) and a.url != b.url
    ua, ub = (a.url, b.url) if web else ("A", "B")
    va = dedup.check(ua, html=a.html, text=a.text, title=a.title) if a.text is not None else None
    vb = dedup.check(ub, html=b.html, text=b.text, title=b.title) if b.text is not None else None
    dedup.close()
    under = None  # B kept under the lookup thresholds: the pair weighed again without them, for its score
    if va is not None and vb is not None and vb.action == "keep" and vb.weighing is None and not (
            va.skipped or vb.skipped or vb.error):
        from dataclasses import replace

        with Deduplicator(replace(config, threshold=0.0, containment=0.0)) as again:
            again.check(ua, html=a.html, text=a.text, title=a.title)
            under = again.check(ub, html=b.html, text=b.text, title=b.title).weighing
    model = dedup.model
    print(f"\nverdict with these settings (the score's threshold {model.threshold:.3f}, model "
          f"{config.model or 'shipped'}; lookup thresholds DEDUP_THRESHOLD={config.threshold}, "
          f"DEDUP_CONTAINMENT={config.containment}), A crawled first, then B:")
    data["settings"] = {"DEDUP_VERIFIER": config.verifier, "DEDUP_THRESHOLD": config.threshold,
                        "DEDUP_CONTAINMENT": config.containment, "DEDUP_K": config.k,
                        "DEDUP_MODEL": config.model, "score_threshold": model.threshold}
    verdict: dict = {"b": None}
    data["verdict"] = verdict
    try:
        _verdict(print, va, vb, verdict, under)
    finally:
        if args.json:
            real_print(dumps(data, indent=1))
    return 0


def _verdict(print, va, vb, verdict: dict, under=None) -> None:  # noqa: A002 - compare's print
    if va is None or vb is None:
        print("   none: a side has no text")
        return
    if va.skipped:
        verdict["a_skipped"] = va.skipped
        print(f"   A is kept unchecked ({va.skipped}), so B cannot match it")
    w = vb.weighing or under
    explained = w.explained() if w is not None else None
    verdict.update({"b": "kept" if vb.action == "keep" or vb.skipped or vb.error else
                    ("dropped" if vb.action == "drop" else "flagged"),
                    "skipped": vb.skipped or vb.error or None, "reason": vb.reason, "measure": vb.measure,
                    "similarity": vb.similarity, **(explained or {})})
    if vb.skipped or vb.error:
        print(f"   B kept unchecked: {vb.skipped or vb.error}")
    elif vb.action == "keep" and explained is None:
        print("   B kept: not a duplicate of A (the texts share too little to weigh: under the lookup floors)")
    elif vb.action == "keep" and vb.weighing is None:
        verdict["under_lookup_thresholds"] = True
        print(f"   B kept: its score {w.score:.3f} is under the threshold {w.threshold:.3f}; under the lookup "
              "thresholds too (DEDUP_THRESHOLD, DEDUP_CONTAINMENT), so a crawl writes no `kept` line for it")
    elif vb.action == "keep":
        print(f"   B kept: the pair passed the lookup thresholds, but its score {w.score:.3f} is under the "
              f"threshold {w.threshold:.3f}")
    else:
        print(f"   B {'dropped' if vb.action == 'drop' else 'flagged'}: {vb.reason} duplicate of A, score "
              f"{w.score:.3f} >= {w.threshold:.3f} ({vb.measure} {vb.similarity}, distance {vb.distance} bits)"
              if w is not None else f"   B {vb.action}: {vb.reason} duplicate of A ({vb.measure} {vb.similarity})")
    if explained is not None:
        from ..tools.show import score_rows

        rows = score_rows(explained)
        print("\n   the score, each measurement's part in it (log-odds):")
        width = max(len(r[0]) for r in rows)
        for name, value, part in rows:
            print(f"   {name:<{width}}  {value:>8}  {part:>8}")
