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

`--banner` builds the other kind of hard negative: a thin page whose banner carries the first
~120 words of another page's main text (a shop's promo quoting another page, a forum engine's
banner; made of another page's template with its article emptied, that page left out), served
half on its own site and half on the quoted page's, beside the quoted page and a bare copy of it
under its own title (`print`-like: its title, an h1, its text); `--small`: the thin page a small
page of its own instead (its title, one line, the banner: little chrome). A drop of a thin
page, or of a page against one, is false; the bare copies are true copies (recall).

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
BLOCKS = {"p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "td", "dd", "dt", "pre", "figcaption",
          "div", "section", "article", "span"}


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
    for el in _gold_blocks(root, whole):
        n = len(el.text_content().split())
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


def _bare(title: str | None, text: str) -> bytes:
    paragraphs = "".join(f"<p>{htmllib.escape(line)}</p>" for line in text.splitlines() if line.strip())
    head = htmllib.escape(title or "")
    return f"<!DOCTYPE html><html><head><title>{head}</title></head><body><h1>{head}</h1>{paragraphs}</body></html>".encode()


def thin(markup: bytes, gold: str, banner_words: list[str], at_least: float = 0.8,
         extracted: str | None = None) -> bytes | None:
    """The page with its gold text emptied (a thin page of its template: a product with no
    description, a thread with one line) and a banner at the top of its body that carries
    another page's first words and a link; None when the page cannot be read or less than
    `at_least` of its gold words could be found and emptied. `extracted`: the page's main text as
    the extractor reads it, emptied too (so the thin page has nothing else to offer it)."""
    from lxml import etree, html as lhtml

    try:
        root = lhtml.document_fromstring(markup)
    except (etree.ParserError, ValueError):
        return None
    whole = _norm(gold)
    gold_words = sum(len(line.split()) for line in gold.splitlines() if len(line.split()) >= 4) or 1
    removed = 0
    for el in _gold_blocks(root, whole):
        removed += len(el.text_content().split())
        for child in list(el):
            el.remove(child)
        el.text = ""
    if extracted:  # what the extractor took besides the gold text (comments, a related list) goes too
        for el in _gold_blocks(root, _norm(extracted)):
            for child in list(el):
                el.remove(child)
            el.text = ""
    body = root.find("body")
    if body is None or removed < at_least * gold_words:
        return None
    banner = lhtml.fragment_fromstring(
        '<div class="promo-banner"><p>' + htmllib.escape(" ".join(banner_words)) + ' ...</p>'
        '<a href="/promo">Read the whole story</a></div>')
    body.insert(0, banner)
    return lhtml.tostring(root, encoding="utf-8", doctype="<!DOCTYPE html>")


def _gold_blocks(root, whole: str):
    """The innermost block elements whose text (4+ words) is part of the gold text, met one by
    one (an element its caller emptied takes its inner ones out of the tree)."""
    for el in list(root.iter()):
        if not isinstance(el.tag, str) or el.tag not in BLOCKS or el.getparent() is None:
            continue
        if any(isinstance(c.tag, str) and c.tag in BLOCKS - {"span"} for c in el.iterdescendants()):
            continue  # (its inner blocks are met on their own)
        text = el.text_content()
        if len(text.split()) >= 4 and _norm(text) in whole:
            yield el


def build_banner(holdout: Path, gold_path: Path, out: Path, seed: int = 7, words: int = 120,
                 small: bool = False) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from crawler_dedup.core.page.extract import extract

    gold = json.load(lzma.open(gold_path, "rt"))
    manifest = json.loads((holdout / "manifest.json").read_text())
    items = {it["path"]: it for it in manifest["items"] if it.get("kind") == "base"}
    paths = [p for p in gold if p in items]
    rnd = random.Random(seed)
    rnd.shuffle(paths)
    used: set[str] = set()
    groups: set[str] = set()
    out_items, made, skipped = [], 0, 0
    (out / "site").mkdir(parents=True, exist_ok=True)
    for q in paths:
        # the quoted page: a short article (up to 3x the banner), so that the banner holds much of
        # it, yet not all of it
        if q in used or not words + 10 <= len(gold[q].split()) <= 3 * words or items[q]["group"] in groups:
            continue
        hosts = [p for p in paths if p not in used and p != q and items[p]["group"] not in groups
                 and items[p]["host"] != items[q]["host"]]
        if not hosts:
            break
        p = rnd.choice(hosts)
        raw = (holdout / "site" / p).read_bytes()
        if small:  # a small page of its own: its title, a line, the banner, a footer line
            title = _title(holdout / "site" / p) or "Item"
            markup = (f"<!DOCTYPE html><html><head><title>{htmllib.escape(title)}</title></head><body>"
                      f"<header><a href='/'>Home</a></header><div class='promo-banner'><p>"
                      f"{htmllib.escape(' '.join(gold[q].split()[:words]))} ...</p><a href='/promo'>Read the whole "
                      f"story</a></div><main><h1>{htmllib.escape(title)}</h1><p>Out of stock. Ask us when it is "
                      f"back.</p></main><footer>Contact us</footer></body></html>").encode()
        else:
            got = extract(raw.decode("utf-8", "replace"), "http://" + items[p]["host"] + "/" + p)
            markup = thin(raw, gold[p], gold[q].split()[:words], extracted=got.text if got else None)
        if markup is None:
            skipped += 1
            continue
        used |= {p, q}
        groups |= {items[p]["group"], items[q]["group"]}
        on_theirs = made % 2 == 1  # half on the quoted page's site
        (out / "site" / q).write_bytes((holdout / "site" / q).read_bytes())
        (out / "site" / ("banner-" + p)).write_bytes(markup)
        (out / "site" / ("bare-" + q)).write_bytes(_bare(_title(holdout / "site" / q), gold[q]))
        # (the page whose template the thin page is made of is left out: the thin page is its
        # version with the article gone, which a crawl may well take for it)
        out_items += [dict(items[q], group=items[q]["id"]),
                      dict(items[p], path="banner-" + p, id="banner:" + items[p]["id"], group="banner:" + items[p]["id"],
                           kind="banner", source=q, host=items[q]["host"] if on_theirs else items[p]["host"]),
                      dict(items[q], path="bare-" + q, id="bare:" + items[q]["id"], group=items[q]["id"], kind="bare",
                           source=q)]
        made += 1
    rnd.shuffle(out_items)
    (out / "manifest.json").write_text(json.dumps({"items": out_items, "ignore": []}))
    return {"banner_pages": made, "bare_copies": made, "skipped": skipped}


def _title(path: Path) -> str | None:
    m = re.search(rb"<title[^>]*>(.*?)</title", path.read_bytes()[:400_000], re.I | re.S)
    return " ".join(htmllib.unescape(m.group(1).decode("utf-8", "replace")).split()) if m else None


def build(holdout: Path, gold_path: Path, out: Path, seed: int = 7, at_least: float = 0.8, same_title: bool = False,
          other_host: bool = False) -> dict:
    gold = json.load(lzma.open(gold_path, "rt"))
    manifest = json.loads((holdout / "manifest.json").read_text())
    items = {it["path"]: it for it in manifest["items"] if it.get("kind") == "base"}
    paths = [p for p in gold if p in items]
    titles = {}
    for p in paths:
        titles[p] = _title(holdout / "site" / p)
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
    ap.add_argument("--banner", action="store_true",
                    help="thin pages whose banner quotes another page's first words, and bare copies of those pages")
    ap.add_argument("--small", action="store_true",
                    help="with --banner: the thin page is a small page of its own (title, a line, the banner), "
                    "not another page's template with its article emptied")
    args = ap.parse_args(argv)
    if args.banner:
        print(json.dumps(build_banner(args.holdout, args.gold, args.out, args.seed, small=args.small)))
        return 0
    print(json.dumps(build(args.holdout, args.gold, args.out, args.seed, same_title=args.same_title,
                                  other_host=args.other_host)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
