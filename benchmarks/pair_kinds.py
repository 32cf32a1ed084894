"""Pairs of the kinds a copy-or-not decision gets wrong, built from real main texts, decided in order.

    python benchmarks/pair_kinds.py [--gold ../shared/holdout-dev/dev-gold.json.xz] [--seed 1] [--per-kind 20]

Each kind is a few pages in realistic templates (a site's header, menus, footer), made from the
gold main texts of the dev split (other pages of the same sites run beside them, so their sites'
names are known as such), and each page has the outcome it must have:

- banner: a shop page whose promo banner quotes an article's first N words (N from 30 to 450,
  cut inside a paragraph, one word before its end or at it), the article before or after: kept;
- adcut: a copy of an article on another site, under a rewritten headline, one paragraph cut by
  an inline ad: dropped;
- mostread: six articles of one site whose extraction takes an in-content "most read" block
  listing their headlines (the articles load by script): all kept;
- press: a press release, then a news story under the same headline quoting it whole with 600
  words of its own: kept;
- verb: a copy whose headline changes one word ("hits" / "lashes"): dropped;
- printcomments: a print version, then the full page whose extraction took its 500-word comment
  thread (the text given, as a pipeline would give it): dropped;
- products: product pages of one shop ("Running Shoes | Shop" and "Hiking Boots | Shop") whose
  extraction is the shop's same block, on a shop of two pages and of five: kept;
- controls: tracking-URL copies of an article and of a short product page: dropped;
- frames: a site of script shells titled in one frame ("Rankings for Computer Science 2025",
  "Rankings for Engineering 2025"): kept; one of them again under a tracking URL: dropped;
- appbanner: two sites on one forum engine whose threads' extraction is the engine's app banner
  (the text given), under titles of their own: kept; one again under a tracking URL: dropped;
- paywall: a paywall shell naming the headline, then the full article under the same title with
  the shell's block in its footer: kept;
- related: two articles of one site whose extraction took one "more stories" block (the text
  given), their own articles on the page: kept;
- printtitle: a print edition (its text alone) under its own wording of the headline: dropped;
- hosttitle: the article put in another site's page whose own title it keeps (syndicated): dropped.
Each site has one of three templates (news, blog, magazine), the same on all its pages.

Prints, per kind, the pages decided right (`--pairs OUT` writes every weighed pair, labelled, for
benchmarks/fit_score.py). `make_stream` is also what tests/test_pair_kinds.py builds its pairs with.
"""

from __future__ import annotations

import argparse
import html as htmllib
import json
import lzma
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

KINDS = ("banner", "adcut", "mostread", "press", "verb", "printcomments", "products", "controls", "frames",
         "appbanner", "paywall", "related", "printtitle", "hosttitle")
BLOG = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head><body>
<div class="topbar"><a href="/">{site}</a> <a href="/archive">Archive</a> <a href="/tags">Tags</a> <a href="/feed">RSS</a></div>
<div class="wrap"><div class="post"><h1 class="entry-title">{h1}</h1><div class="meta">Posted in Notes</div>
<div class="entry-content">{body}</div></div>
<div class="widget"><h4>About {site}</h4><p>Notes on the things we read and write about, since 2009.</p></div></div>
<div class="bottom">{site} runs on coffee. <a href="/imprint">Imprint</a></div></body></html>"""
MAGAZINE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head><body>
<nav role="navigation"><ul><li><a href="/">{site}</a></li><li><a href="/features">Features</a></li>
<li><a href="/reviews">Reviews</a></li><li><a href="/opinion">Opinion</a></li></ul></nav>
<section class="story"><header><h1>{h1}</h1><p class="dek">A {site} report</p></header>
<div class="story-body">{body}</div></section>
<section class="promo"><p>Subscribe to {site} magazine: twelve issues for the price of ten.</p></section>
<footer role="contentinfo">&copy; {site} Media Group</footer></body></html>"""
NEWS = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head><body>
<header><a class="logo" href="/">{site}</a><nav><a href="/news">News</a> <a href="/world">World</a>
<a href="/business">Business</a> <a href="/culture">Culture</a> <a href="/sport">Sport</a></nav></header>
<main><article><h1>{h1}</h1><p class="byline">By staff writers</p>
{body}
</article>
<aside class="sidebar"><h3>Newsletter</h3><p>Get {site}'s top stories in your inbox every morning, free.</p></aside></main>
<footer><p>&copy; 2026 {site}. All rights reserved.</p><p><a href="/about">About</a> <a href="/privacy">Privacy</a>
<a href="/contact">Contact</a></p></footer></body></html>"""
SHOP = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head><body>
<header><a class="logo" href="/">{site}</a><nav><a href="/men">Men</a> <a href="/women">Women</a> <a href="/camp">Camp</a>
<a href="/sale">Sale</a> <a href="/stores">Stores</a></nav></header>
<main><div class="product"><h1>{h1}</h1>
{body}
</div>{extra}</main>
<footer><p>Free shipping on orders over $50. Members get 10% back.</p><p>&copy; 2026 {site}</p></footer></body></html>"""
BARE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title></head><body><h1>{h1}</h1>
{body}
</body></html>"""


@dataclass
class Page:
    url: str
    html: bytes
    group: str
    kind: str
    expect: str  # keep | drop
    text: str | None = None  # given instead of extracted (a pipeline's item)
    title: str | None = None


def paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n|\n", text) if len(p.split()) >= 1]


def body(paras: list[str]) -> str:
    return "\n".join(f"<p>{htmllib.escape(p)}</p>" for p in paras)


def name_of(host: str) -> str:
    """A site's name from its host: www.banner3-daily.example -> Banner3 Daily."""
    return host.split(".")[1].replace("-", " ").title()


def template_of(host: str) -> str:
    """A site's template, the same for each of its pages: one of three kinds of site."""
    import zlib

    return (NEWS, BLOG, MAGAZINE)[zlib.crc32(host.encode()) % 3]


def news(host: str, title: str, paras: list[str], h1: str | None = None, extra: str = "") -> bytes:
    site = name_of(host)
    return template_of(host).format(title=htmllib.escape(f"{title} | {site}"), site=site,
                                    h1=htmllib.escape(h1 if h1 is not None else title), body=body(paras) + extra).encode()


def load_texts(gold_path: str, titles_from: Path | None) -> list[tuple[str, list[str]]]:
    """(headline, paragraphs) of gold texts of 250-1500 words, the headline the page's own title's
    longest part (or the text's first line)."""
    gold = json.load(lzma.open(gold_path, "rt"))
    out, seen = [], set()
    for path, text in sorted(gold.items()):
        key = " ".join(text.split()[:40])
        if key in seen:  # (natural copies among the pages: one of them)
            continue
        seen.add(key)
        paras = [p for p in paragraphs(text) if len(p.split()) >= 8]
        words = sum(len(p.split()) for p in paras)
        if not 250 <= words <= 1500 or len(paras) < 4 or "\ufffd" in text:
            continue
        title = _title(titles_from / path) if titles_from is not None else None
        if not title:
            continue
        out.append((title, paras))
    return out


def _title(path: Path) -> str | None:
    if not path.exists():
        return None
    m = re.search(rb"<title[^>]*>(.*?)</title>", path.read_bytes()[:200_000], re.S | re.I)
    if not m:
        return None
    return _title_part(htmllib.unescape(m.group(1).decode("utf-8", "replace")))


def _title_part(title: str) -> str | None:
    """A title's headline: its longest part, 3 to 16 words (else None)."""
    parts = [p.strip() for p in re.split(r"\s+[|\-–—:·•»]\s+", title) if p.strip()]
    best = max(parts, key=len) if parts else ""
    return best if 3 <= len(best.split()) <= 16 else None


def make_stream(texts: list[tuple[str, list[str]]], per_kind: int = 10, seed: int = 1,
                kinds: tuple[str, ...] = KINDS, banner_cut: str | None = None,
                banner_first: bool | None = None) -> list[Page]:
    """Pages of each kind (`per_kind` instances), in the order they are decided, with filler
    articles of the same sites around them so each site's name is known as such. `banner_cut`:
    where every banner's quote stops (N words, or "end-1", "end", "end+1": a paragraph's end;
    else drawn), `banner_first`: the shop page before the article (else drawn)."""
    rnd = random.Random(seed)
    pool = list(texts)
    rnd.shuffle(pool)
    it = iter(pool)  # each text once: a reused text would be a copy
    out: list[Page] = []
    n = 0

    def take():
        try:
            return next(it)
        except StopIteration:
            raise SystemExit(f"{len(pool)} texts are not enough for {per_kind} of each kind: ask fewer") from None

    def filler(site: str, count: int = 1) -> None:
        nonlocal n
        for _ in range(count):
            t, p = take()
            n += 1
            out.append(Page(f"https://{site}/story/{n}", news(site, t, p), f"f{n}", "filler", "keep"))

    for kind in kinds:
        for i in range(per_kind):
            n += 1
            tag = f"{kind}{i}"
            site_a, site_b = f"www.{tag}-daily.example", f"www.{tag}-herald.example"
            filler(site_a)
            filler(site_b)
            title, paras = take()
            a = Page(f"https://{site_a}/a/{n}", news(site_a, title, paras), f"{tag}-a", kind, "keep")
            if kind == "banner":
                out += _banner(rnd, tag, n, title, paras, a, take, banner_cut, banner_first)
            elif kind == "adcut":
                other_title, _ = take()
                cut = rnd.randrange(len(paras) // 3, max(len(paras) // 3 + 1, 2 * len(paras) // 3))
                words = paras[cut].split()
                half = max(3, len(words) // 2)
                ad = ('<div class="ad-slot"><span>Advertisement</span><p>Save 40% on everything today only with code '
                      'SPRING at checkout.</p></div>')
                copy_body = (body(paras[:cut]) + f"\n<p>{htmllib.escape(' '.join(words[:half]))}</p>{ad}"
                             f"<p>{htmllib.escape(' '.join(words[half:]))}</p>\n" + body(paras[cut + 1:]))
                rewritten = " ".join(other_title.split()[:3] + title.split()[-3:])
                copy = template_of(site_b).format(title=htmllib.escape(f"{rewritten} | {name_of(site_b)}"),
                                                  site=name_of(site_b), h1=htmllib.escape(rewritten),
                                                  body=copy_body).encode()
                stopped = None
                if i % 2:  # the extraction stopped at the ad (the text given, as a pipeline would give it)
                    stopped = "\n\n".join(paras[:cut] + [" ".join(words[:half])])
                out += [a, Page(f"https://{site_b}/wire/{n}", copy, f"{tag}-a", kind, "drop", text=stopped,
                                title=f"{rewritten} | {name_of(site_b)}" if stopped else None)]
            elif kind == "mostread":
                stories = [take() for _ in range(5)] + [(title, paras)]
                teaser = (25, 60)[i % 2]
                heads = [h for h, _ in stories]
                block = "<section class=\"most-read\"><h2>Most read</h2><ol>" + "".join(
                    f"<li><a href=\"/s/{k}\">{htmllib.escape(h)}</a><p>{htmllib.escape(' '.join(' '.join(p).split()[:teaser]))}"
                    f"</p></li>" for k, (h, p) in enumerate(stories)) + "</ol></section>"
                for k, h in enumerate(heads):
                    page = template_of(site_a).format(
                        title=htmllib.escape(f"{h} | {name_of(site_a)}"), site=name_of(site_a), h1=htmllib.escape(h),
                        body=f"<div class=\"article-body\" data-load=\"/api/{k}\"></div>{block}").encode()
                    out.append(Page(f"https://{site_a}/s/{k}", page, f"{tag}-{k}", kind, "keep"))
            elif kind == "press":
                release = paras[:max(2, min(len(paras), 4))]
                _, own = take()
                own_words = " ".join(" ".join(own).split()[:600]).split()
                own_paras = [" ".join(own_words[k:k + 60]) for k in range(0, len(own_words), 60)]
                site_pr = f"www.{tag}-wire.example"
                filler(site_pr)
                out.append(Page(f"https://{site_pr}/release/{n}", news(site_pr, title, release), f"{tag}-r", kind, "keep"))
                story = own_paras[:3] + [f"In a statement, the company said: {release[0]}"] + release[1:] + own_paras[3:]
                out.append(Page(f"https://{site_b}/news/{n}", news(site_b, title, story), f"{tag}-s", kind, "keep"))
            elif kind == "verb":
                words = title.split()
                at = rnd.randrange(1, len(words)) if len(words) > 1 else 0
                words[at] = rnd.choice(["lashes", "rattles", "grips", "shakes", "stuns"])
                copy = news(site_b, " ".join(words), paras)
                out += [a, Page(f"https://{site_b}/copy/{n}", copy, f"{tag}-a", kind, "drop")]
            elif kind == "printcomments":
                printed = BARE.format(title=htmllib.escape(f"{title} (print)"), h1=htmllib.escape(title),
                                      body=body(paras)).encode()
                comments, donor = [], [w for p in take()[1] for w in p.split()]
                while sum(len(c.split()) for c in comments) < 500 and donor:
                    comments.append(" ".join(donor[:rnd.randrange(25, 70)]))
                    donor = donor[len(comments[-1].split()):]
                thread = "<section class=\"comments\"><h3>Comments</h3>" + "".join(
                    f"<div class=\"comment\"><b>reader{k}</b><p>{htmllib.escape(c)}</p></div>"
                    for k, c in enumerate(comments)) + "</section>"
                full = news(site_a, title, paras, extra=thread)
                out += [Page(f"https://{site_a}/print/{n}", printed, f"{tag}-a", kind, "keep"),
                        Page(f"https://{site_a}/a/{n}", full, f"{tag}-a", kind, "drop", text="\n\n".join(comments),
                             title=f"{title} | {name_of(site_a)}")]
            elif kind == "products":
                out += _products(rnd, tag, take, 2 if i % 2 == 0 else 5)
            elif kind == "frames":
                out += _frames(rnd, tag, take)
            elif kind == "appbanner":
                out += _appbanner(rnd, tag, take)
            elif kind == "paywall":
                wall = (f"Subscribe to {name_of(site_a)} to read {title}. Subscribers get unlimited access to every "
                        "story, the daily newsletter and our archive, and can cancel at any time.")
                shell = news(site_a, title, [wall])
                out += [Page(f"https://{site_a}/app/{n}", shell, f"{tag}-shell", kind, "keep"),
                        Page(f"https://{site_a}/a/{n}", news(site_a, title, paras, extra=f"<p class='wall'>{wall}</p>"),
                             f"{tag}-a", kind, "keep")]
            elif kind == "related":
                _, more = take()
                block = "More stories: " + " ".join(" ".join(more).split()[:rnd.randrange(120, 260)])
                other_title, other_paras = take()
                for k, (h, ps) in enumerate(((title, paras), (other_title, other_paras))):
                    page = news(site_a, h, ps, extra=f"<div class='more'>{htmllib.escape(block)}</div>")
                    out.append(Page(f"https://{site_a}/r/{n}-{k}", page, f"{tag}-{k}", kind, "keep", text=block,
                                    title=f"{h} | {name_of(site_a)}"))
            elif kind == "hosttitle":
                host_title, host_paras = take()  # the page of another site the article was put in, its title kept
                copy = template_of(site_b).format(title=htmllib.escape(f"{host_title} | {name_of(site_b)}"),
                                                  site=name_of(site_b), h1="", body=body(paras)).encode()
                out += [a, Page(f"https://{site_b}/{n}", copy, f"{tag}-a", kind, "drop")]
            elif kind == "printtitle":
                words = title.split()
                own = " ".join(words[len(words) // 2:] + words[:len(words) // 2])  # the print edition's own wording
                printed = BARE.format(title=htmllib.escape(f"{own} (print)"), h1=htmllib.escape(own),
                                      body=body(paras)).encode()
                out += [a, Page(f"https://{site_a}/print/{n}", printed, f"{tag}-a", kind, "drop")]
            elif i % 2 == 0:  # controls: an article's tracking-URL copy
                out += [a, Page(f"https://{site_a}/a/{n}?utm_source=feed", a.html, f"{tag}-a", kind, "drop")]
            else:  # controls: a short product page's tracking-URL copy (a short text is a copy all the same)
                shop = f"www.{tag}-store.example"
                desc = " ".join(" ".join(paras).split()[:rnd.randrange(25, 70)])
                page = SHOP.format(title=htmllib.escape(f"{title} | {name_of(shop)}"), site=name_of(shop),
                                   h1=htmllib.escape(title), body=body([desc]), extra="").encode()
                out += [Page(f"https://{shop}/p/{n}", page, f"{tag}-p", kind, "keep"),
                        Page(f"https://{shop}/p/{n}?utm_campaign=mail", page, f"{tag}-p", kind, "drop")]
    return out


def _banner(rnd, tag, n, title, paras, article: Page, take, cut_at: str | None = None,
            shop_first: bool | None = None) -> list[Page]:
    words = [w for p in paras for w in p.split()]
    ends, total = [], 0
    for p in paras:
        total += len(p.split())
        ends.append(total)
    how = cut_at or rnd.choice(["inside", "inside", "end-1", "end", "long"])
    first_end = next((e for e in ends if e >= 40), ends[0])
    if how.startswith("end"):
        cut = first_end + {"end-1": -1, "end": 0, "end+1": 1}[how]
    elif how == "long":
        cut = rnd.randrange(300, 460)
    elif how == "inside":
        cut = rnd.randrange(30, min(250, len(words) - 20))
    else:
        cut = int(how)
    cut = max(10, min(cut, int(0.75 * len(words))))  # a quote is a part: a banner with most of it carries the article
    quote = " ".join(words[:max(cut, 10)])
    product, own = take()
    shop = f"www.{tag}-outfitters.example"
    banner = (f'<div class="promo-banner"><h3>From our journal: {htmllib.escape(title)}</h3>'
              f'<p>{htmllib.escape(quote)}...</p><a href="/journal/{n}">Read more</a></div>')
    desc = body([" ".join(" ".join(own).split()[:rnd.choice([8, 70])])])
    page = SHOP.format(title=htmllib.escape(f"{product} | {name_of(shop)}"), site=name_of(shop), h1=htmllib.escape(product), body=desc,
                       extra=banner).encode()
    shop_page = Page(f"https://{shop}/p/{n}", page, f"{tag}-shop", "banner", "keep")
    first = rnd.random() < 0.5 if shop_first is None else shop_first
    return [shop_page, article] if first else [article, shop_page]


def _frames(rnd, tag, take) -> list[Page]:
    """A site whose pages are one script shell, titled in one frame around their subjects
    ("Rankings for Computer Science 2025"): each a page of its own; a tracking copy of one a copy."""
    site = f"www.{tag}-ranks.example"
    name = name_of(site)
    frame = rnd.choice(["Rankings for {} 2025", "Reviews of {}", "{} weather this week", "Best {} deals today"])
    subjects = []
    while len(subjects) < 3:
        words = [w for w in re.findall(r"[A-Za-z]{4,}", take()[0])]
        if len(words) >= 2:
            subjects.append(" ".join(rnd.sample(words, min(len(words), rnd.randrange(1, 4)))).title())
    shell = [f"{name} ranks and reviews what matters to you. Our editors test every product and service "
             "we list, and we never take payment for a place in a ranking.",
             f"Sign in to {name} to save your lists, follow topics and get alerts when a ranking changes."]
    out = []
    for k, subject in enumerate(subjects):
        page = template_of(site).format(title=htmllib.escape(f"{frame.format(subject)} | {name}"), site=name,
                                        h1="", body=f"<div id='app' data-page='{k}'></div>" + body(shell)).encode()
        out.append(Page(f"https://{site}/list/{k}", page, f"{tag}-{k}", "frames", "keep"))
    out.append(Page(f"https://{site}/list/0?utm_source=news", out[0].html, f"{tag}-0", "frames", "drop"))
    return out


def _appbanner(rnd, tag, take) -> list[Page]:
    """Two sites on one forum engine whose threads' extraction is the engine's app banner (the
    text given, as a pipeline would give it; the thread itself on the page), under titles of their
    own: two pages; one thread again under a tracking URL: a copy."""
    engine = rnd.choice(["Forumly", "Threadbase", "Boardwise"])
    banner = (f"Get the {engine} app. Follow the threads you care about, get a notification when someone replies "
              "to you, and read every community you belong to in one place, even when you are offline. "
              f"{engine} is free on phones and tablets. Open in the app to keep reading this thread, see the "
              "pictures in full size and join the conversation with the people who started it.")
    out = []
    for k in range(2):
        site = f"forum.{tag}-site{k}.example"
        title, paras = take()
        thread = "".join(f"<div class='post'><b>member{m}</b>{body([p])}</div>" for m, p in enumerate(paras[:6]))
        page = template_of(site).format(title=htmllib.escape(f"{title} | {name_of(site)} Forum"), site=name_of(site),
                                        h1=htmllib.escape(title),
                                        body=f"<div class='app-banner' role='dialog'><p>{banner}</p></div>"
                                        + thread).encode()
        out.append(Page(f"https://{site}/t/{k}", page, f"{tag}-{k}", "appbanner", "keep", text=banner,
                        title=f"{title} | {name_of(site)} Forum"))
    again = out[0]
    out.append(Page(again.url + "?utm_source=app", again.html, f"{tag}-0", "appbanner", "drop", text=banner,
                    title=again.title))
    return out


def _products(rnd, tag, take, count: int) -> list[Page]:
    shop = f"www.{tag}-coop.example"
    name = name_of(shop)
    threshold = rnd.choice([25, 35, 49, 50, 75, 99])
    block = body([f"Free standard shipping on {name} orders over ${threshold}. Members earn an annual dividend on "
                  f"eligible purchases at {name}.",
                  f"Returns accepted within {rnd.choice(['one year', '90 days', '60 days'])} of purchase for members; "
                  f"{rnd.choice([30, 45, 60])} days for everyone else.",
                  f"Questions about sizing or fit? Chat with the {name} experts {rnd.choice(['seven days a week', 'daily', 'every day from 8 to 8'])}."])
    kinds = ["Shoes", "Boots", "Jacket", "Poles", "Stove", "Sleeping Bag", "Tent", "Backpack", "Gloves", "Headlamp"]
    uses = ["Running", "Hiking", "Rain", "Trekking", "Camp", "Trail", "Winter", "Ultralight", "Kids'", "Climbing"]
    names = rnd.sample([f"{u} {k}" for u in uses for k in kinds], count)  # (each shop its own: product names recur
    # across a crawl's shops, and one host serving them all would learn them as its sections)
    out = []
    for k in range(count):
        product = names[k]
        page = SHOP.format(title=htmllib.escape(f"{product} | {name}"), site=name,
                           h1="", body=f"<div class=\"app\" data-product=\"{k}\"></div>{block}", extra="").encode()
        out.append(Page(f"https://{shop}/product/{k}", page, f"{tag}-{k}", "products", "keep"))
    return out


def decide(stream: list[Page], settings: dict | None = None, observe=None):
    """Each page's verdict, in order, over one fresh in-memory index."""
    from crawler_dedup import DedupConfig, Deduplicator
    from crawler_dedup.stores import MemoryStore

    from crawler_dedup.core.page.fingerprint import body_digest

    d = Deduplicator(DedupConfig.from_settings(settings or {}), store=MemoryStore()).open()
    if observe is not None:
        d.observe = observe
    # (each response's bytes' digest, as a crawl hands it: the same bytes under two URLs are one document)
    return [d.check(p.url, html=p.html, text=p.text, title=p.title, body=body_digest(p.html)) for p in stream]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gold", default=str(HERE.parent.parent / "shared" / "holdout-dev" / "dev-gold.json.xz"))
    ap.add_argument("--holdout", type=Path, default=None, help="the dev split's folder (its pages' titles)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--per-kind", type=int, default=20)
    ap.add_argument("--settings", nargs="*", default=[])
    args = ap.parse_args(argv)
    if args.holdout is None:
        print("--holdout: the dev split's folder (tar -xJf holdout-dev.tar.xz), for its titles", file=sys.stderr)
        return 2
    texts = load_texts(args.gold, args.holdout / "site")
    stream = make_stream(texts, args.per_kind, args.seed)
    settings = dict(s.split("=", 1) for s in args.settings)
    verdicts = decide(stream, settings)
    from collections import Counter
    right, total, wrong = Counter(), Counter(), []
    for page, v in zip(stream, verdicts):
        if page.kind == "filler":
            continue
        got = "drop" if v.would_drop else "keep"
        total[page.kind] += 1
        if got == page.expect:
            right[page.kind] += 1
        else:
            wrong.append((page.kind, page.url, page.expect, got, v.duplicate_of))
    for kind in KINDS:
        if total[kind]:
            print(f"{kind:<14} {right[kind]:>4} of {total[kind]:<4} right")
    print(f"{'all':<14} {sum(right.values()):>4} of {sum(total.values())}")
    for row in wrong[:40]:
        print("  wrong:", *row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
