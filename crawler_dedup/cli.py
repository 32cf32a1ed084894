"""`crawler-dedup`: the demo, and measuring detection quality (more tools will follow)."""

from __future__ import annotations

import argparse
import sys

from .config import MAX_K


def _demo(args) -> int:
    from .demo.run import DemoError, print_result, run_demo

    settings = {"DEDUP_K": args.k} if args.k is not None else None
    try:
        result = run_demo(args.out, settings)
    except DemoError as exc:
        print(f"crawler-dedup demo: {exc}", file=sys.stderr)
        return exc.exit_code
    print_result(result)
    return 0


class Progress:
    """A one-line progress bar on a terminal's stderr; silent when stderr is not a terminal."""

    def __init__(self, label: str, stream=None):
        self.label, self.stream = label, stream or sys.stderr
        self.on = self.stream.isatty()

    def __call__(self, done: int, total: int) -> None:
        if not self.on or (done % 10 and done != total):
            return
        width = 30
        filled = width * done // max(total, 1)
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done == total:
            self.stream.write("\n")
        self.stream.flush()


def _settings(items: list[str] | None) -> dict:
    """-s DEDUP_NAME=VALUE options as a settings dict; an unknown name is a usage error."""
    from dataclasses import fields

    from .config import DedupConfig

    known = {"DEDUP_" + f.name.upper() for f in fields(DedupConfig) if f.name != "extra"}
    out = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or name not in known:
            raise UsageError(f"-s takes a DEDUP_ setting as NAME=VALUE, not {item!r} (see the README's settings table)")
        out[name] = value
    return out


class UsageError(Exception):
    pass


def _eval(args) -> int:
    from collections import Counter

    from . import evaluation as ev
    from .config import DedupConfig
    from .exceptions import ConfigError

    try:
        settings = _settings(args.set)
        DedupConfig.from_settings(settings)
    except (ConfigError, UsageError) as exc:
        print(f"crawler-dedup eval: {exc}", file=sys.stderr)
        return 2
    if args.pairs:
        try:
            pairs = ev.read_pairs(args.pairs)
        except (OSError, ValueError) as exc:
            print(f"crawler-dedup eval: {exc}", file=sys.stderr)
            return 2
        labels = [p["duplicate"] for p in pairs]
        texts = ev.pair_texts(pairs, progress=Progress("extracting"))
        decided = ev.decide_pairs(texts, settings)
        skipped = Counter(why for said, why in decided if said is None)
        p, r, f, used = ev.pr([said for said, _ in decided], labels)
        print(f"{len(pairs)} pairs, {sum(labels)} labelled duplicate; {used} decided"
              + (f", {len(pairs) - used} skipped ({', '.join(f'{n} {w}' for w, n in skipped.items())})" if skipped else ""))
        print(f"\nthese settings: P {p:.3f}  R {r:.3f}  F1 {f:.3f}")
        name = "DEDUP_THRESHOLD"
        print(f"\n{name} swept, the other settings as given (what a crawl would drop):")
        print(f"  {'threshold':>9} {'P':>6} {'R':>6} {'F1':>6}")
        rows = []
        for step in range(2, 20):
            t = round(0.05 * step, 2)
            said = [d for d, _ in ev.decide_pairs(texts, {**settings, name: t})]
            rows.append((t, *ev.pr(said, labels)[:3]))
        good = [row for row in rows if row[1] >= 0.995]
        best = max(good, key=lambda row: (row[3], row[0])) if good else None
        for row in rows:
            mark = "  <- best F1 at P >= 0.995" if row == best else ""
            print(f"  {row[0]:>9.2f} {row[1]:>6.3f} {row[2]:>6.3f} {row[3]:>6.3f}{mark}")
        if best is None:
            print("  no threshold reaches precision 0.995 on these pairs")
        scored = [s for s in ev.score_pairs(pairs, DedupConfig.from_settings(settings)) if s is not None]
        for measure in ("resemblance", "containment", "qgram", "swlr"):
            rows = ev.sweep(scored, measure)
            print(f"\n{measure} alone (the verifier's score, no guards):")
            print("  " + "  ".join(f"{t:.2f}: P {p:.2f} R {r:.2f}" for t, p, r, _ in rows[::3]))
        return 0
    bases = ev.load_bases(args.data)
    if not bases:
        print(f"crawler-dedup eval: no labelled data under {args.data} (give --data DIR or --pairs FILE)",
              file=sys.stderr)
        return 2
    stream = ev.build_stream(bases, seed=args.seed)
    texts = ev.extract_all(stream, progress=Progress("extracting"))
    methods = [ev.ours("crawler-dedup, these settings", texts, settings)]
    try:
        import datasketch  # noqa: F401

        methods.append(ev.minhash_lsh("datasketch MinHashLSH t=0.5", texts, 0.5))
    except ImportError:
        pass
    scores = [ev.score_stream(name, stream, decide) for name, decide in methods]
    print(f"stream: {len(bases)} real pages from {args.data}, {len(stream)} pages in all")
    print(ev.format_table(scores, ev.kinds_present(stream)))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="crawler-dedup", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser(
        "demo", help="crawl a bundled demo site on 127.0.0.1 with dedup on (offline)",
        description="Serve a demo site of real pages and their near-duplicates on 127.0.0.1, crawl it "
        "with dedup on, and print what was kept and dropped. Needs no network.",
    )
    demo.add_argument("--out", metavar="DIR", help="where the site, index and drop log go (default: a new "
                      "temp dir); an existing DIR must be empty or an earlier demo's, whose results are replaced")
    demo.add_argument("--k", type=int, metavar="BITS", choices=range(0, MAX_K + 1), help=f"DEDUP_K for this run (0-{MAX_K})")
    demo.set_defaults(func=_demo)
    ev = sub.add_parser(
        "eval", help="measure precision and recall: on labelled pairs of your own, or on a labelled stream",
        description="With --pairs FILE (JSONL: {\"a\": text, \"b\": text, \"duplicate\": true}, or a_html/b_html), "
        "print each verifier's precision/recall/F1 for a sweep of thresholds, to tune DEDUP_* for your sites. "
        "Without it, build the labelled stream of real pages and their variants from --data and score the "
        "current settings on it.",
    )
    ev.add_argument("--pairs", metavar="FILE", help="your labelled pairs (JSONL)")
    ev.add_argument("--data", metavar="DIR", default="../shared/data", help="folder of the page sets (default: %(default)s)")
    ev.add_argument("--seed", type=int, default=7, help="stream order and variants (default: %(default)s)")
    ev.add_argument("-s", "--set", action="append", metavar="DEDUP_NAME=VALUE", help="a setting, as with scrapy -s")
    ev.set_defaults(func=_eval)
    return parser


def _version() -> str:
    from . import __version__

    return __version__


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.func(args)
    except BrokenPipeError:  # `crawler-dedup eval ... | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
