"""Rebuild crawler_dedup/demo/pages/ from ../shared/data (run by a maintainer, not at install).

Picks real article pages (MIT sets) whose trafilatura extraction agrees with the human gold
text (so the demo's variants test dedup, not extraction), plus same-site page pairs as hard
negatives, and writes them gzipped with their gold texts and sources.
"""

import gzip
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from crawler_dedup.core.page.extract import extract  # noqa: E402
from crawler_dedup.core.page.features import shingles  # noqa: E402
from crawler_dedup.core.page.sketch import resemblance, sketch  # noqa: E402
from crawler_dedup.core.page.tokens import tokenize  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
OUT = os.path.join(os.path.dirname(__file__), "..", "crawler_dedup", "demo", "pages")
ARTICLES, EXTRA_TEXTS = 16, 4
PAIRS = ["foxnews.com", "nypost.com", "bostonherald.com"]


def sk(text):
    return sketch(shingles(tokenize(text)))


def main():
    aeb = os.path.join(DATA, "article-extraction-benchmark")
    gold = json.load(open(os.path.join(aeb, "ground-truth.json")))
    os.makedirs(OUT, exist_ok=True)
    manifest = {"articles": [], "texts": [], "pairs": []}
    for key in sorted(gold):
        path = os.path.join(aeb, "html", key + ".html.gz")
        raw = gzip.open(path).read()
        body = gold[key]["articleBody"]
        words = len(tokenize(body))
        if len(manifest["articles"]) >= ARTICLES:
            if len(manifest["texts"]) < EXTRA_TEXTS and 250 <= words <= 1200:
                manifest["texts"].append({"id": key[:12], "source": gold[key]["url"], "body": body})
            continue
        if not 250 <= words <= 1200 or os.path.getsize(path) > 60_000:
            continue
        got = extract(raw)
        if got is None or resemblance(sk(got.text), sk(body)) < 0.95:
            continue
        name = key[:12] + ".html.gz"
        with open(os.path.join(OUT, name), "wb") as fh:
            fh.write(gzip.compress(raw, 9, mtime=0))
        manifest["articles"].append({"file": name, "source": gold[key]["url"], "title": got.title, "body": body})
    np_dir = os.path.join(DATA, "newspaper-testpages", "old-79553f6", "tests", "data", "html")
    for site in PAIRS:
        files = []
        for n in (1, 2):
            raw = open(os.path.join(np_dir, f"{site}{n}.html"), "rb").read()
            name = f"{site}{n}.html.gz"
            with open(os.path.join(OUT, name), "wb") as fh:
                fh.write(gzip.compress(raw, 9, mtime=0))
            files.append(name)
        manifest["pairs"].append({"site": site, "files": files})
    with open(os.path.join(OUT, "manifest.json"), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, ensure_ascii=False, indent=1)
    print(f"{len(manifest['articles'])} articles, {len(manifest['texts'])} texts, {len(manifest['pairs'])} pairs -> {OUT}")


if __name__ == "__main__":
    main()
