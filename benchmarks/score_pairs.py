"""Labelled (page, candidate) pairs for fitting the score: every pair the decision weighs, measured.

    python benchmarks/score_pairs.py --holdout DIR [--holdout DIR2 ...] [--realcopies SEEDS] --out pairs.jsonl.gz

Each holdout (the dev split, the hard negatives of benchmarks/hard_negatives.py) is decided page by
page in manifest order in both modes (each page on its own host, and all on one host), as the
crawl's runner serves them; `--realcopies 7,8,9` adds benchmarks/realcopies.py's streams of those
seeds and `--kinds 1,2,3` benchmarks/pair_kinds.py's, each in both modes too (one host: every URL
moved under one host, its site's name the path's first part). The decision itself is the labels' (an oracle): a page is dropped exactly when an earlier
page of its group was kept, so the index holds what it should, and every candidate weighed on the
way (matching.weigh) is written with its measurements and its label (the same group or not).
Pairs the sources call neither right nor wrong (a manifest's `ignore`, realcopies' neutral pairs)
are written without a label, but for an article weighed against its own shell kept before it
that holds under half of its words (not a copy: only the article is worth storing). Extraction is cached on disk (~/.cache/crawler-dedup).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import pickle
import sys
import time
from multiprocessing import Pool
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

ONE_HOST = "127.0.0.1:8000"
SHELLS = ("shell", "app-shell", "notice")  # realcopies' pages with an article's title and none of its text


def _extract(args):
    path, html = args
    from crawler_dedup.config import DedupConfig
    from crawler_dedup.core.dedup import extract_and_fingerprint

    kind, value, title = extract_and_fingerprint(html, "http://x.invalid/", DedupConfig())
    if hasattr(value, "lines"):
        value.lines = None  # (the site's lines depend on the URL: made per mode)
    return path, (str(kind), value, title)


def extracted(pages: list[tuple[str, bytes]], label: str) -> dict:
    """{key: (step, Fingerprinted or text or skip, title)} for (key, html) pages, cached by content."""
    import crawler_dedup

    digest = hashlib.sha1(label.encode())
    for f in sorted(Path(crawler_dedup.__file__).parent.joinpath("core", "page").glob("*.py")):
        digest.update(f.read_bytes())
    for key, html in pages:
        digest.update(key.encode() + hashlib.sha1(html).digest())
    cache = Path.home() / ".cache" / "crawler-dedup" / f"pairs-extract-{digest.hexdigest()[:16]}.pkl"
    if cache.exists():
        return pickle.loads(cache.read_bytes())
    t0 = time.time()
    with Pool(2) as pool:
        out = dict(pool.imap(_extract, pages, chunksize=8))
    print(f"  extracted {len(pages)} pages in {time.time() - t0:.0f}s", file=sys.stderr)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(pickle.dumps(out))
    return out


class Recorder:
    """Runs pages through a Deduplicator whose decision is the labels' and keeps every weighed pair."""

    def __init__(self, source: str, mode: str, group_of: dict[str, str], neutral, settings: dict | None = None):
        from crawler_dedup import DedupConfig, Deduplicator
        from crawler_dedup.core.decide import rules
        from crawler_dedup.core.verdict import Action, Reason
        from crawler_dedup.stores import MemoryStore

        self.source, self.mode, self.group_of, self.neutral = source, mode, group_of, neutral
        self.rows: list[dict] = []
        self.kept_groups: dict[str, str] = {}  # group -> the URL kept for it
        self.d = Deduplicator(DedupConfig.from_settings(settings or {}), store=MemoryStore()).open()
        self.d.observe = self.observe

        def oracle(p):
            rules.find_match(p)
            group = self.group_of.get(p.verdict.url)
            first = self.kept_groups.get(group) if group is not None else None
            if first is not None:  # a copy: not filed, as the index should hold it
                return rules.Decision(p.verdict.but(action=Action.DROP, reason=Reason.NEAR, duplicate_of=first))
            p.match = None
            return None

        chain = list(self.d.rules)
        chain[chain.index(rules.find_match)] = oracle
        self.d.rules = tuple(chain)

    def observe(self, page, weighed) -> None:
        url = page.verdict.url
        for w in weighed:
            other = w.doc.url
            a, b = self.group_of.get(url), self.group_of.get(other)
            label = None if self.neutral(url, other) else (a is not None and a == b)
            self.rows.append({"source": self.source, "mode": self.mode, "page": url, "doc": other,
                              "label": label, "passed": w.passed, "measures": w.measures})

    def check(self, url: str, html: bytes, got) -> None:
        from crawler_dedup.core.page.site import lines_of

        kind, value, title = got
        if kind == "fingerprint" and hasattr(value, "text"):
            value.lines = lines_of(value.text, url, title) if self.d.config.site_boilerplate else None
            v = self.d.check(url, html=html, fingerprinted=value, title=title)
        else:
            v = self.d.check(url, html=html)
        group = self.group_of.get(url)
        if v.action == "keep" and v.doc_id is not None and group is not None:
            self.kept_groups.setdefault(group, url)


def holdout(path: Path, one_host: bool, settings: dict | None = None) -> list[dict]:
    man = json.loads((path / "manifest.json").read_text())
    items = man["items"]
    pages = [(it["path"], (path / "site" / it["path"]).read_bytes()) for it in items]
    got = extracted(pages, str(path))
    group = {it["id"]: it["group"] for it in items}
    ignore = {tuple(sorted((group.get(a, a), group.get(b, b)))) for a, b in man.get("ignore", [])}
    url_of = {it["path"]: f"http://{ONE_HOST if one_host else it['host']}/{it['path']}" for it in items}
    group_of = {url_of[it["path"]]: it["group"] for it in items}

    def neutral(a: str, b: str) -> bool:
        return tuple(sorted((group_of.get(a, a), group_of.get(b, b)))) in ignore

    rec = Recorder(path.name, "one-host" if one_host else "broad", group_of, neutral, settings)
    host_of = {url_of[it["path"]]: it["host"] for it in items}
    for (key, html) in pages:
        rec.check(url_of[key], html, got[key])
    for row in rec.rows:
        row["host"], row["doc_host"] = host_of.get(row["page"]), host_of.get(row["doc"])
    return rec.rows


def _holds(shell: str | None, text: str | None) -> float:
    """The share of `text`'s word trigrams in `shell` (plain words: the oracle measures apart from
    the code it labels)."""
    def grams(t: str | None) -> set:
        w = (t or "").lower().split()
        return {tuple(w[i:i + 3]) for i in range(len(w) - 2)}

    mine = grams(text)
    return len(mine & grams(shell)) / len(mine) if mine else 0.0


def _one_host(url: str) -> str:
    """The URL on one host (the path keeps the site): every page of a stream one site's."""
    from urllib.parse import urlsplit

    u = urlsplit(url)
    return f"http://{ONE_HOST}/{u.hostname}{u.path}" + (f"?{u.query}" if u.query else "")


def realcopies(seed: int, one_host: bool = False, settings: dict | None = None) -> list[dict]:
    from pages import data_dir
    from realcopies import build, mark_template_holders
    from stream import extract_all

    stream, _ = build(data_dir(), seed)
    texts = extract_all(stream)
    mark_template_holders(stream, texts)
    cluster = {p.url: p.cluster for p in stream}
    related = {p.url: p.related for p in stream}
    template = {p.url: p.template for p in stream}

    kind = {p.url: p.kind for p in stream}

    def neutral(a: str, b: str) -> bool:
        ca, cb = cluster.get(a), cluster.get(b)
        ra, rb = related.get(a), related.get(b)
        if kind.get(b) in SHELLS and kind.get(a) not in SHELLS and rb == ca and _holds(texts[b][0], texts[a][0]) < 0.5:
            # the article against its own shell kept before it (a notice, a page before its script
            # ran) that holds under half of its words: the scorer calls either answer fine, but
            # only the article is worth storing, so it is no copy (the shell after the article,
            # or one still holding most of it, stays neutral)
            return False
        return ((ra is not None and ra in (cb, rb)) or (rb is not None and rb == ca)
                or (template.get(a) is not None and rb == template.get(a))
                or (ra is not None and template.get(b) == ra))

    where = _one_host if one_host else (lambda u: u)
    back = {where(p.url): p.url for p in stream}

    def neutral_at(a: str, b: str) -> bool:
        return neutral(back.get(a, a), back.get(b, b))

    rec = Recorder(f"realcopies-{seed}", "one-host" if one_host else "broad",
                   {where(u): c for u, c in cluster.items()}, neutral_at, settings)
    for p in stream:
        text, title = texts[p.url]
        if text is None:
            continue
        v = rec.d.check(where(p.url), html=p.html, text=text, title=title)
        if v.action == "keep" and v.doc_id is not None:
            rec.kept_groups.setdefault(cluster[p.url], where(p.url))
    from urllib.parse import urlsplit
    for row in rec.rows:  # (the site the page is of, in either mode: folds keep a site's pairs together)
        row["host"], row["doc_host"] = urlsplit(back[row["page"]]).hostname, urlsplit(back[row["doc"]]).hostname
    return rec.rows


def kinds(seed: int, per_kind: int, gold: str, dev: Path, one_host: bool = False,
          settings: dict | None = None) -> list[dict]:
    """benchmarks/pair_kinds.py's stream for `seed`: the pairs the decision gets wrong when it
    weighs them by kind rather than by measurement."""
    from urllib.parse import urlsplit

    from pair_kinds import load_texts, make_stream

    stream = make_stream(load_texts(gold, dev / "site"), per_kind, seed)
    where = _one_host if one_host else (lambda u: u)
    back = {where(p.url): p.url for p in stream}
    rec = Recorder(f"kinds-{seed}", "one-host" if one_host else "broad", {where(p.url): p.group for p in stream},
                   lambda a, b: False, settings)
    for p in stream:
        v = rec.d.check(where(p.url), html=p.html, text=p.text, title=p.title)
        if v.action == "keep" and v.doc_id is not None:
            rec.kept_groups.setdefault(p.group, where(p.url))
    for row in rec.rows:
        row["host"], row["doc_host"] = urlsplit(back[row["page"]]).hostname, urlsplit(back[row["doc"]]).hostname
    return rec.rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--holdout", type=Path, action="append", default=[], help="a holdout folder (manifest.json, site/)")
    ap.add_argument("--realcopies", default="", help="seeds of benchmarks/realcopies.py's streams, e.g. 7,8,9 (in --modes too)")
    ap.add_argument("--modes", default="broad,one-host", help="broad, one-host or both (holdouts)")
    ap.add_argument("--kinds", default="", help="seeds of benchmarks/pair_kinds.py's streams, e.g. 1,2")
    ap.add_argument("--per-kind", type=int, default=8, help="instances of each kind a --kinds stream")
    ap.add_argument("--gold", default=str(Path(HERE).parent.parent / "shared" / "holdout-dev" / "dev-gold.json.xz"))
    ap.add_argument("--dev", type=Path, help="the dev split's folder (--kinds takes its pages' titles)")
    ap.add_argument("--out", required=True, help="pairs as JSON lines (.gz)")
    ap.add_argument("--no-kept-text", action="store_true",
                    help="kept pages stored without their texts (DEDUP_STORE_TEXT=False): the pairs as such an index "
                         "measures them (from the sketches), each marked `kept_text: false`")
    args = ap.parse_args(argv)
    settings = {"DEDUP_STORE_TEXT": False} if args.no_kept_text else None
    rows: list[dict] = []
    for path in args.holdout:
        for mode in args.modes.split(","):
            t0 = time.time()
            got = holdout(path, mode == "one-host", settings)
            print(f"{path.name} {mode}: {len(got)} pairs ({sum(r['label'] is True for r in got)} copies) "
                  f"in {time.time() - t0:.0f}s", file=sys.stderr)
            rows += got
    for seed in filter(None, args.realcopies.split(",")):
        for mode in args.modes.split(","):
            t0 = time.time()
            got = realcopies(int(seed), mode == "one-host", settings)
            print(f"realcopies seed {seed} {mode}: {len(got)} pairs ({sum(r['label'] is True for r in got)} copies) "
                  f"in {time.time() - t0:.0f}s", file=sys.stderr)
            rows += got
    for seed in filter(None, args.kinds.split(",")):
        for mode in args.modes.split(","):
            got = kinds(int(seed), args.per_kind, args.gold, args.dev or args.holdout[0], mode == "one-host", settings)
            print(f"kinds seed {seed} {mode}: {len(got)} pairs ({sum(r['label'] is True for r in got)} copies)",
                  file=sys.stderr)
            rows += got
    if args.no_kept_text:
        for row in rows:
            row["kept_text"] = False
    with gzip.open(args.out, "wt", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    print(f"{len(rows)} pairs -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
