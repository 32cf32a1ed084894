"""Hard negatives built from the gold main texts: pages that share everything but their content.

    python benchmarks/hard_negatives.py --holdout DIR --gold ../shared/holdout-dev/dev-gold.json.xz --out DIR2
    python ../shared/holdout-dev/run_holdout.py --holdout DIR2 --project . --python .venv/bin/python [--one-host]

For each page of the holdout whose gold main text is known, a twin is made: the same markup,
the block elements that hold the page's gold paragraphs refilled with another page's gold text
(of about the same length, from a page of another site), its <title> and <h1> replaced by that
page's title (`--same-title`: kept; `--other-host`: the twin served on a host of its own, two
sites on one engine). The donor page is left out of the output and gives its text to one twin
only (else twins would be copies of the donor or of each other). A twin is another article in
the page's own template: the site's chrome (its menus, banners, overlays, footer) is the page's,
byte for byte, so an extraction that returns the chrome instead of the content returns the same
text for both. Only twins in which the replaced text holds at least 80% of the gold text's words
are written (others would keep so much of the page's own content that they would be its
near-copies). Figures: docs/benchmarks.md, "Is the main text the content?".

The output is a holdout like the input (manifest.json and site/, each page and each twin a group
of its own, the twin on its page's host): every drop between a page and its twin, or any other
pair, is false; run_holdout.py scores it, and its `false_drops` is the count.
"""

from __future__ import annotations

import argparse
import html as htmllib
import json
import lzma
import random
import re
import sys
from pathlib import Path

_WS = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


def twin(markup: bytes, gold: str, other_gold: str, other_title: str | None) -> tuple[bytes, float] | None:
    """The page with its gold text nodes replaced by the other text; (markup, share of the gold
    words replaced), or None when the page cannot be read."""
    from lxml import etree, html as lhtml

    try:
        root = lhtml.document_fromstring(markup)
    except (etree.ParserError, ValueError):
        return None
    lines = [_norm(line) for line in gold.splitlines() if len(line.split()) >= 4]
    gold_words = sum(len(line.split()) for line in lines) or 1
    wanted = set(lines)
    source = [line for line in other_gold.splitlines() if line.strip()]
    if not source:
        return None
    at = 0
    replaced = 0

    def take(n_words: int) -> str:
        nonlocal at
        out: list[str] = []
        while len(out) < n_words:
            out += source[at % len(source)].split()
            at += 1
        return " ".join(out[:max(1, n_words)])

    whole = _norm(gold)
    blocks = {"p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "td", "dd", "dt", "pre", "figcaption",
              "div", "section", "article", "span"}
    for el in list(root.iter()):
        if not isinstance(el.tag, str) or el.tag not in blocks or el.getparent() is None:
            continue
        if any(isinstance(c.tag, str) and c.tag in blocks - {"span"} for c in el.iterdescendants()):
            continue  # (its inner blocks are met on their own)
        text = el.text_content()
        n = len(text.split())
        if n < 4 or _norm(text) not in whole:
            continue
        tail = el.tail
        for child in list(el):
            el.remove(child)
        el.text, el.tail = take(n), tail
        replaced += n
    if other_title:
        for el in root.iter("title", "h1"):
            el.text = other_title
            for child in list(el):
                el.remove(child)
    return lhtml.tostring(root, encoding="utf-8", doctype="<!DOCTYPE html>"), min(1.0, replaced / gold_words)


def build(holdout: Path, gold_path: Path, out: Path, seed: int = 7, at_least: float = 0.8, same_title: bool = False,
          other_host: bool = False) -> dict:
    gold = json.load(lzma.open(gold_path, "rt"))
    manifest = json.loads((holdout / "manifest.json").read_text())
    items = {it["path"]: it for it in manifest["items"] if it.get("kind") == "base"}
    paths = [p for p in gold if p in items]
    titles = {}
    for p in paths:
        raw = (holdout / "site" / p).read_bytes()
        m = re.search(rb"<title[^>]*>(.*?)</title", raw[:400_000], re.I | re.S)
        titles[p] = " ".join(htmllib.unescape(m.group(1).decode("utf-8", "replace")).split()) if m else None
    rnd = random.Random(seed)
    rnd.shuffle(paths)
    (out / "site").mkdir(parents=True, exist_ok=True)
    # a donor's text is used once and its page is left out: a twin must be no page's copy
    donors: set[str] = set()
    emitted: set[str] = set()
    groups: set[str] = set()
    out_items, made, skipped = [], 0, 0
    for p in paths:
        if p in donors:
            continue
        it = items[p]
        size = len(gold[p].split())
        others = [q for q in paths if q not in donors and q not in emitted and q != p
                  and items[q]["host"] != it["host"] and items[q]["group"] != it["group"]
                  and items[q]["group"] not in groups and 0.5 * size <= len(gold[q].split()) <= 2 * size + 50]
        if not others:
            skipped += 1
            continue
        q = rnd.choice(others)
        got = twin((holdout / "site" / p).read_bytes(), gold[p], gold[q], None if same_title else titles.get(q))
        if got is None or got[1] < at_least:
            skipped += 1
            continue
        donors.add(q)
        emitted.add(p)
        groups.add(it["group"])
        markup, _ = got
        (out / "site" / p).write_bytes((holdout / "site" / p).read_bytes())
        twin_path = "twin-" + p
        (out / "site" / twin_path).write_bytes(markup)
        out_items.append(dict(it, id=it["id"], group=it["id"]))
        out_items.append(dict(it, path=twin_path, id="twin:" + it["id"], group="twin:" + it["id"], kind="twin",
                              source=q, host=("twin." + it["host"]) if other_host else it["host"]))
        made += 1
    rnd.shuffle(out_items)
    (out / "manifest.json").write_text(json.dumps({"items": out_items, "ignore": []}))
    return {"pages": made, "twins": made, "donors": len(donors), "skipped": skipped}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--holdout", required=True, type=Path)
    ap.add_argument("--gold", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--same-title", action="store_true", help="the twin keeps the page's title and headline")
    ap.add_argument("--other-host", action="store_true",
                    help="the twin is served on a host of its own (two sites built on one engine)")
    args = ap.parse_args(argv)
    print(json.dumps(build(args.holdout, args.gold, args.out, args.seed, same_title=args.same_title,
                                  other_host=args.other_host)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
