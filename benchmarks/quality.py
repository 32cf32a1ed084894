"""Detection quality on a labelled stream of real pages (see crawler_dedup/evaluation.py).

    python benchmarks/quality.py [--data ../shared/data] [--seed 7]

Prints precision, recall and F1 overall, recall per variant kind and false drops, for
crawler-dedup's default path, each seed method, plain simhash k=3 and datasketch MinHashLSH,
all run in this process on the same extracted texts.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import sys
import time
from multiprocessing import Pool

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from crawler_dedup import DedupConfig, Deduplicator  # noqa: E402
from crawler_dedup.evaluation import build_stream, format_table, kinds_present, load_bases, score_stream  # noqa: E402
from crawler_dedup.extract import extract  # noqa: E402
from crawler_dedup.stores import MemoryStore  # noqa: E402
from crawler_dedup.tokens import tokenize  # noqa: E402

DEFAULT_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data")


def _extract(args):
    url, html = args
    got = extract(html, url)
    return url, (got.text, got.title) if got else (None, None)


def extract_all(stream, workers=2):
    """Extract every page once (cached on disk by content), so every method sees the same texts."""
    digest = hashlib.sha1(b"".join(hashlib.sha1(p.html).digest() for p in stream)).hexdigest()[:16]
    cache = os.path.join(os.path.expanduser("~/.cache/crawler-dedup"), f"extract-{digest}.pkl")
    if os.path.exists(cache):
        with open(cache, "rb") as fh:
            return pickle.load(fh)
    t0 = time.perf_counter()
    with Pool(workers) as pool:
        texts = dict(pool.map(_extract, [(p.url, p.html) for p in stream], chunksize=8))
    print(f"extracted {len(stream)} pages in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    with open(cache, "wb") as fh:
        pickle.dump(texts, fh)
    return texts


def ours(name, texts, **settings):
    d = Deduplicator(DedupConfig.from_settings({}, **settings), store=MemoryStore()).open()

    def decide(page):
        text, title = texts[page.url]
        if text is None:
            return None
        v = d.check(page.url, text=text, title=title)
        return v.duplicate_of if v.action in ("drop", "flag") and v.reason != "conceptual" else None

    return name, decide


def plain_simhash(name, texts, k=3, w=3):
    """What a simhash script does: word 3-shingle simhash, brute-force Hamming <= k, nothing else."""
    import numpy as np

    from crawler_dedup.features import shingles
    from crawler_dedup.simhash import simhash

    fps, urls = np.empty(0, np.uint64), []

    def decide(page):
        nonlocal fps
        text, _ = texts[page.url]
        if text is None:
            return None
        fp = simhash(shingles(tokenize(text), w))
        if fps.size:
            dist = np.bitwise_count(fps ^ np.uint64(fp))
            best = int(dist.argmin())
            if dist[best] <= k:
                return urls[best]
        fps = np.append(fps, np.uint64(fp))
        urls.append(page.url)
        return None

    return name, decide


def minhash_lsh(name, texts, threshold, num_perm=128, w=5):
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    sigs = {}

    def decide(page):
        text, _ = texts[page.url]
        if text is None:
            return None
        toks = tokenize(text)
        if len(toks) < 15:
            return None
        sh = {" ".join(toks[i : i + w]).encode() for i in range(max(1, len(toks) - w + 1))}
        m = MinHash(num_perm=num_perm)
        m.update_batch(list(sh))
        hits = lsh.query(m)
        if hits:
            return max(hits, key=lambda u: (m.jaccard(sigs[u]), u))
        lsh.insert(page.url, m)
        sigs[page.url] = m
        return None

    return name, decide


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=DEFAULT_DATA, help="folder of the shared data sets")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--only", help="comma-separated method names to run")
    args = ap.parse_args(argv)
    bases = load_bases(args.data)
    if not bases:
        print(f"no data under {args.data}: nothing to measure", file=sys.stderr)
        return 1
    stream = build_stream(bases, seed=args.seed)
    texts = extract_all(stream)
    dups = len(stream) - len({p.cluster for p in stream})
    print(f"stream: {len(bases)} real pages, {len(stream)} pages in all, {dups} true duplicates "
          f"({', '.join(f'{k}' for k in kinds_present(stream))}), {sum(p.kind == 'banner' for p in stream)} banner pages")
    methods = [
        ours("crawler-dedup (default)", texts),
        ours("  simhash tables only (k=3)", texts, sketch_probes=0, containment=0),
        ours("  no containment", texts, containment=0),
        ours("000 tfidf-weighted simhash", texts, weighting="tfidf"),
        ours("001 document image", texts, features="docimage"),
        ours("002 SWLR verifier t=0.5", texts, verifier="swlr", containment=0),
        ours("004 q-gram doc_q t=0.7", texts, verifier="qgram", threshold=0.7, containment=0),
        plain_simhash("plain simhash k=3 (w=3)", texts),
        minhash_lsh("datasketch MinHashLSH t=0.5", texts, 0.5),
        minhash_lsh("datasketch MinHashLSH t=0.8", texts, 0.8),
    ]
    if args.only:
        keep = set(args.only.split(","))
        methods = [m for m in methods if m[0] in keep]
    scores = [score_stream(name, stream, decide) for name, decide in methods]
    print(format_table(scores, kinds_present(stream)))
    print("\nms/page: steps 2-8 on the extracted text (extraction itself is the same for every row"
          " and measured by the speed benchmark)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
