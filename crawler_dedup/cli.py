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


def _settings(pairs: list[str]) -> dict:
    out = {}
    for item in pairs or []:
        name, sep, value = item.partition("=")
        if not sep or not name.startswith("DEDUP_"):
            raise SystemExit(f"crawler-dedup: -s takes DEDUP_NAME=VALUE, not {item!r}")
        out[name] = value
    return out


def _eval(args) -> int:
    from . import evaluation as ev
    from .config import DedupConfig
    from .exceptions import ConfigError

    try:
        config = DedupConfig.from_settings(_settings(args.set))
    except ConfigError as exc:
        print(f"crawler-dedup eval: {exc}", file=sys.stderr)
        return 2
    if args.pairs:
        try:
            pairs = ev.read_pairs(args.pairs)
        except (OSError, ValueError) as exc:
            print(f"crawler-dedup eval: {exc}", file=sys.stderr)
            return 2
        scored = ev.score_pairs(pairs, config, progress=Progress("scoring pairs"))
        usable = [s for s in scored if s is not None]
        print(f"{len(pairs)} pairs, {sum(s.duplicate for s in usable)} labelled duplicate, "
              f"{len(pairs) - len(usable)} skipped (no text or fewer than DEDUP_MIN_TOKENS words)")
        for measure, setting in (("resemblance", "DEDUP_THRESHOLD (DEDUP_VERIFIER=resemblance)"),
                                 ("containment", "DEDUP_CONTAINMENT"),
                                 ("qgram", "DEDUP_THRESHOLD with DEDUP_VERIFIER=qgram"),
                                 ("swlr", "DEDUP_THRESHOLD with DEDUP_VERIFIER=swlr")):
            rows = ev.sweep(usable, measure)
            print(f"\n{measure}: {setting}")
            print(f"  {'threshold':>9} {'P':>6} {'R':>6} {'F1':>6}")
            best = max(rows, key=lambda r: (r[1] >= 0.995, r[3], r[0]))
            for t, p, r, f in rows:
                mark = "  <- best F1 at P >= 0.995" if (t, p, r, f) == best and p >= 0.995 else ""
                print(f"  {t:>9.2f} {p:>6.3f} {r:>6.3f} {f:>6.3f}{mark}")
        return 0
    bases = ev.load_bases(args.data)
    if not bases:
        print(f"crawler-dedup eval: no labelled data under {args.data} (give --data DIR or --pairs FILE)",
              file=sys.stderr)
        return 2
    stream = ev.build_stream(bases, seed=args.seed)
    texts = ev.extract_all(stream, progress=Progress("extracting"))
    methods = [ev.ours("crawler-dedup, these settings", texts, _settings(args.set))]
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
