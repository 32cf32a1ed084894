"""Every decision on the labelled stream and on the demo site, to check that a change to the code
around the detection core changes no decision.

    python benchmarks/decisions.py --save benchmarks/decisions.json.gz   # record (before a change)
    python benchmarks/decisions.py --check benchmarks/decisions.json.gz  # compare (after it)

The demo part runs from the installed package alone (tests/test_decisions.py checks it on every CI
run); the stream part needs ../shared/data and is skipped without it. Each part is fed twice over
one index, so revisit decisions (unchanged, updated) are checked too, and the paper methods
(q-gram, SWLR, document image, TF-IDF, LSI) are run on the stream as well.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pages import data_dir  # noqa: E402

DEFAULT_DATA = data_dir()
T0 = 1_700_000_000.0  # page times: fixed, so a rerun decides the same

# the methods run on the stream: name -> DEDUP_* settings
STREAM_RUNS = {
    "default": {},
    "qgram": {"DEDUP_VERIFIER": "qgram", "DEDUP_THRESHOLD": 0.7},
    "swlr": {"DEDUP_VERIFIER": "swlr"},
    "docimage": {"DEDUP_FEATURES": "docimage"},
    "tfidf": {"DEDUP_WEIGHTING": "tfidf"},
    "lsi": {"DEDUP_CONCEPTUAL": "flag", "DEDUP_LSI_TRAIN": 100, "DEDUP_LSI_DIMS": 32},
    "window": {"DEDUP_WINDOW": 200},
}


def row(verdict) -> list:
    """What is compared: the decision and what the drop log says about it."""
    sim = verdict.similarity
    return [verdict.url, _s(verdict.action), _s(verdict.reason), verdict.duplicate_of, _s(verdict.measure),
            None if sim is None else round(float(sim), 4), verdict.distance, _s(verdict.skipped),
            "scored apart" if verdict.scored_apart else None, _s(verdict.revisit)]


def _s(value):
    """An enum's value or a plain string: the file stays the same when strings become enums."""
    return None if value is None else str(getattr(value, "value", value))


def demo_decisions(passes: int = 2, store: dict | None = None) -> dict[str, list]:
    """The demo site's pages in crawl order, `passes` times over one LMDB index (or the index
    `store` names, e.g. {"backend": "redis", "redis_url": ..., "redis_prefix": ...})."""
    from crawler_dedup import Deduplicator
    from crawler_dedup.demo.site import build_site

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        site = os.path.join(tmp, "site")
        pages = build_site(site)
        for n in range(passes):
            where = store or {"backend": "lmdb", "dir": os.path.join(tmp, "index"), "lmdb_sync": False}
            dedup = Deduplicator(**where).open()
            rows = []
            try:
                for i, page in enumerate(pages):
                    file = page.path.split("?")[0].split(";")[0].lstrip("/")
                    with open(os.path.join(site, file), "rb") as fh:
                        html = fh.read()
                    verdict = dedup.check(f"http://demo.test{page.path}", html=html, now=T0 + 1000 * n + i)
                    rows.append(row(verdict))
            finally:
                dedup.close()
            out[f"demo/pass{n + 1}"] = rows
    return out


def stream_decisions(data_dir: str, runs: dict | None = None) -> dict[str, list]:
    """The labelled stream (real pages and their variants), twice over one in-memory index per
    method; the texts are extracted once (cached)."""
    from crawler_dedup import DedupConfig, Deduplicator
    from crawler_dedup.stores import MemoryStore
    from stream import build_stream, extract_all, load_bases

    stream = build_stream(load_bases(data_dir), seed=7)
    texts = extract_all(stream, workers=2)
    out = {}
    for name, settings in (runs or STREAM_RUNS).items():
        dedup = Deduplicator(DedupConfig.from_settings(settings), store=MemoryStore()).open()
        try:
            for n in range(2):
                rows = []
                for i, page in enumerate(stream):
                    text, title = texts[page.url]
                    if text is None:
                        continue
                    verdict = dedup.check(page.url, text=text, title=title, now=T0 + 10 * (len(stream) * n + i))
                    rows.append(row(verdict))
                out[f"stream/{name}/pass{n + 1}"] = rows
        finally:
            dedup.close()
    return out


def save(path: str, decisions: dict) -> None:
    data = (json.dumps(decisions, indent=0, sort_keys=True) + "\n").encode()
    with open(path, "wb") as fh:
        fh.write(gzip.compress(data, mtime=0) if path.endswith(".gz") else data)


def load(path: str) -> dict:
    with open(path, "rb") as fh:
        data = fh.read()
    return json.loads(gzip.decompress(data) if path.endswith(".gz") else data)


def compare(expected: dict, got: dict) -> list[str]:
    """Lines describing each decision that differs (empty: identical)."""
    problems = []
    for key in sorted(set(expected) | set(got)):
        if key not in got or key not in expected:
            problems.append(f"{key}: {'not run' if key not in got else 'not recorded'}")
            continue
        a, b = expected[key], got[key]
        if len(a) != len(b):
            problems.append(f"{key}: {len(a)} pages recorded, {len(b)} decided")
        for old, new in zip(a, b):
            if old != new:
                problems.append(f"{key}: {old[0]}\n  was {old[1:]}\n  now {new[1:]}")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--save", metavar="FILE", help="write the decisions to FILE")
    parser.add_argument("--check", metavar="FILE", help="compare the decisions with FILE")
    parser.add_argument("--data", default=DEFAULT_DATA, help="the shared data folder (default: %(default)s)")
    parser.add_argument("--demo-only", action="store_true", help="the demo part only")
    args = parser.parse_args(argv)
    got = demo_decisions()
    if not args.demo_only and os.path.isdir(args.data):
        got.update(stream_decisions(args.data))
    elif not args.demo_only:
        print(f"no shared data at {args.data}: the demo part only", file=sys.stderr)
    counts = {k: sum(1 for r in v if r[1] != "keep") for k, v in got.items()}
    for key, rows in got.items():
        print(f"{key:<28} {len(rows):>5} pages {counts[key]:>5} dropped or flagged")
    if args.save:
        save(args.save, got)
        print(f"saved to {args.save}")
    if args.check:
        expected = load(args.check)
        if args.demo_only or not os.path.isdir(args.data):
            expected = {k: v for k, v in expected.items() if k.startswith("demo/")}
        problems = compare(expected, got)
        for line in problems:
            print(line)
        print(f"{'identical' if not problems else f'{len(problems)} differences'} ({sum(map(len, got.values()))} "
              f"decisions compared with {args.check})")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
