"""Detection quality on a labelled stream of real pages (see benchmarks/stream.py).

    python benchmarks/quality.py [--data ../shared/data] [--seed 7]

Prints precision, recall and F1 overall, recall per variant kind and false drops, for
crawler-dedup's default path, each seed method, plain simhash k=3 and datasketch MinHashLSH,
all run in this process on the same extracted texts.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from stream import (build_stream, extract_all, format_table, kinds_present, load_bases, minhash_lsh,  # noqa: E402
                    ours, plain_simhash, score_stream)

DEFAULT_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data")


def conceptual_report(stream, texts, **settings):
    """Seed 000's LSI check flags, it does not drop: count what it flags, and whether rightly."""
    from crawler_dedup import DedupConfig, Deduplicator
    from crawler_dedup.stores import MemoryStore

    d = Deduplicator(DedupConfig.from_settings({}, conceptual="flag", **settings), store=MemoryStore()).open()
    cluster, seen, right, wrong, examples = {}, set(), 0, 0, []
    for page in stream:
        text, title = texts[page.url]
        if text is not None:
            v = d.check(page.url, text=text, title=title)
            if v.reason == "conceptual":
                if cluster.get(v.duplicate_of) == page.cluster:
                    right += 1
                else:
                    wrong += 1
                    examples.append((page.url, v.duplicate_of, v.similarity))
            if v.action != "drop":
                cluster[page.url] = page.cluster
        seen.add(page.cluster)
    return right, wrong, examples


def many_seeds(bases, n):
    import statistics

    rows = {"crawler-dedup (default)": [], "datasketch MinHashLSH t=0.5": []}
    for seed in range(1, n + 1):
        stream = build_stream(bases, seed=seed)
        texts = extract_all(stream)
        for name, decide in (ours("crawler-dedup (default)", texts), minhash_lsh("datasketch MinHashLSH t=0.5", texts, 0.5)):
            s = score_stream(name, stream, decide)
            rows[name].append((s.precision, s.recall, s.fp))
        print(f"seed {seed}: " + "  ".join(f"{k}: P {v[-1][0]:.3f} R {v[-1][1]:.3f}" for k, v in rows.items()), flush=True)
    print(f"\n{'method':<30} {'P median':>9} {'P worst':>8} {'R median':>9} {'R worst':>8} {'false drops':>12}")
    for name, vals in rows.items():
        ps, rs, fps = zip(*vals)
        print(f"{name:<30} {statistics.median(ps):>9.3f} {min(ps):>8.3f} {statistics.median(rs):>9.3f} {min(rs):>8.3f} "
              f"{sum(fps):>12}")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=DEFAULT_DATA, help="folder of the shared data sets")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--only", help="comma-separated method names to run")
    ap.add_argument("--extract-mode", default="thorough", choices=("thorough", "fast"),
                    help="trafilatura mode for every row (DEDUP_EXTRACT_MODE)")
    ap.add_argument("--seeds", type=int, metavar="N", help="instead: the default and MinHashLSH on N streams "
                    "(seeds 1..N), with the median and worst precision and recall")
    args = ap.parse_args(argv)
    bases = load_bases(args.data)
    if not bases:
        print(f"no data under {args.data}: nothing to measure", file=sys.stderr)
        return 1
    if args.seeds:
        return many_seeds(bases, args.seeds)
    stream = build_stream(bases, seed=args.seed)
    texts = extract_all(stream, mode=args.extract_mode)
    dups = len(stream) - len({p.cluster for p in stream})
    print(f"stream: {len(bases)} real pages, {len(stream)} pages in all, {dups} true duplicates "
          f"({', '.join(f'{k}' for k in kinds_present(stream))}), {sum(p.kind == 'banner' for p in stream)} banner pages")
    methods = [
        ours("crawler-dedup (default)", texts),
        ours("  simhash tables only (k=3)", texts, sketch_probes=0, containment=0),
        ours("  no containment", texts, containment=0),
        ours("000 tfidf-weighted simhash", texts, weighting="tfidf"),
        ours("000 tfidf, simhash tables only", texts, weighting="tfidf", sketch_probes=0, containment=0),
        ours("001 document image", texts, features="docimage"),
        ours("002 SWLR verifier t=0.5", texts, verifier="swlr", containment=0),
        ours("004 q-gram doc_q t=0.7", texts, verifier="qgram", threshold=0.7, containment=0),
        plain_simhash("plain simhash k=3 (w=3)", texts),
        minhash_lsh("datasketch MinHashLSH t=0.5", texts, 0.5),
        minhash_lsh("datasketch MinHashLSH t=0.5 w=3", texts, 0.5, w=3),
        minhash_lsh("datasketch MinHashLSH t=0.8", texts, 0.8),
    ]
    if args.only:
        keep = set(args.only.split(","))
        methods = [m for m in methods if m[0] in keep]
    scores = [score_stream(name, stream, decide) for name, decide in methods]
    print(format_table(scores, kinds_present(stream)))
    if not args.only:
        right, wrong, examples = conceptual_report(stream, texts)
        print(f"\n000 LSI conceptual (DEDUP_CONCEPTUAL=flag, cosine >= 0.9, 64 concepts fitted on the first 300 "
              f"kept pages): {right + wrong} flagged: {right} copies the textual check missed, {wrong} pairs of different "
              f"base pages (the data has no conceptual labels: read them)")
        for url, of, cos in examples[:5]:
            print(f"  {url} ~ {of} (cosine {cos})")
    print("\nms/page: steps 2-8 on the extracted text; extraction (trafilatura, the same for every row) is"
          " not included")
    return 0


if __name__ == "__main__":
    sys.exit(main())
