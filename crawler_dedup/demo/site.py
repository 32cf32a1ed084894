"""The demo site: real article pages plus the near-duplicates crawlers really meet.

Built from the bundled pages (see NOTICE) into a folder, deterministically. Every page has an
expected outcome: originals and hard negatives (same template, different article) must be kept;
tracking/session URLs, print versions, syndicated copies, boilerplate churn and small edits are
duplicates of an original crawled earlier.
"""

from __future__ import annotations

import gzip
import html
import json
import os
import random
from dataclasses import asdict, dataclass
from importlib import resources

VARIANTS = ("tracking", "session", "print", "syndicated", "churn", "edited")


@dataclass
class DemoPage:
    path: str  # URL path (with query or ;params) on the demo server
    kind: str  # original | one of VARIANTS | template-negative | same-site-negative
    expect: str  # keep | drop
    of: str | None = None  # path of the original it duplicates
    note: str = ""


def _bundle():
    root = resources.files("crawler_dedup.demo") / "pages"
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    return root, manifest


def _paragraphs(body: str) -> str:
    return "\n".join(f"<p>{html.escape(p.strip())}</p>" for p in body.split("\n") if p.strip())


PORTAL = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title} | Daily Portal</title></head>
<body>
<header><a href="/">Daily Portal</a>
<nav><a href="/news">News</a> <a href="/world">World</a> <a href="/business">Business</a>
<a href="/tech">Tech</a> <a href="/sport">Sport</a> <a href="/subscribe">Subscribe</a></nav></header>
<main><article>
<h1>{title}</h1>
<p class="byline">From our wire partners. Republished with permission.</p>
{paragraphs}
</article>
<aside><h3>Most read</h3><ul>
<li><a href="/news/1">City council approves the new budget after a long debate</a></li>
<li><a href="/news/2">Five things to know before the weekend storm</a></li>
<li><a href="/news/3">Local team wins the championship in overtime</a></li></ul>
<div class="newsletter">Sign up for our newsletter and get the top stories every morning.</div></aside>
</main>
<footer><p>&copy; 2026 Daily Portal. All rights reserved.</p>
<p><a href="/privacy">Privacy</a> <a href="/terms">Terms</a> <a href="/contact">Contact us</a></p></footer>
</body></html>
"""

WIRE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title} - Wire Service</title></head>
<body><div id="top">WIRE SERVICE | Latest | Markets | Photos</div>
<div id="story"><h2>{title}</h2>{paragraphs}</div>
<div id="bottom">Wire Service content is for licensed members only. Contact sales for syndication.</div>
</body></html>
"""

PRINT = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title} (print version)</title>
<meta name="robots" content="noindex"></head>
<body onload="window.print()"><article><h1>{title}</h1>{paragraphs}</article></body></html>
"""

_AD_WORDS = ("mortgage rates", "holiday deals", "smart watches", "travel insurance", "used cars", "online courses")
_HEADLINES = (
    "Scientists map the ocean floor in new detail", "Markets close higher on tech rally",
    "Stadium expansion plan faces new delays", "Recipe: a quick weeknight pasta",
    "Airport adds late-night routes for winter", "Museum reopens its modern art wing",
)


def _churn(raw: str, rnd: random.Random) -> str:
    """Same page, different ads, related links and timestamp: what a re-fetch often looks like."""
    ad = f'<div class="ad">Sponsored: compare {rnd.choice(_AD_WORDS)} today, offer ends soon.</div>'
    related = "".join(f"<li><a href='/r/{rnd.randint(1, 999)}'>{h}</a></li>" for h in rnd.sample(_HEADLINES, 3))
    tail = (f'<div class="related"><h3>Related stories</h3><ul>{related}</ul>'
            f'<p class="stamp">Updated {rnd.randint(2, 59)} minutes ago</p></div>')
    lower = raw.lower()
    at = lower.find(">", lower.find("<body")) + 1 if "<body" in lower else 0
    raw = raw[:at] + ad + raw[at:]
    end = raw.lower().rfind("</body")
    return raw[:end] + tail + raw[end:] if end >= 0 else raw + tail


def _edit(body: str, rnd: random.Random, edits: int = 3) -> str:
    """A few single-word corrections, as an updated article has."""
    words = body.split(" ")
    for pos in rnd.sample(range(len(words) // 10, len(words)), edits):
        words[pos] = "(corrected)" if rnd.random() < 0.5 else words[pos].upper()
    return " ".join(words)


def build_site(dest: str) -> list[DemoPage]:
    """Write the site into `dest`; return its pages in crawl order."""
    root, manifest = _bundle()
    rnd = random.Random(2007)  # fixed: the same site every time
    files: dict[str, str] = {}
    originals, variants, negatives = [], [], []
    for i, art in enumerate(manifest["articles"]):
        raw = gzip.decompress((root / art["file"]).read_bytes()).decode("utf-8", "replace")
        slug = art["file"].split(".")[0]
        orig = f"/articles/{slug}.html"
        files[orig] = raw
        originals.append(DemoPage(orig, "original", "keep", note=art["source"]))
        title = html.escape(art["title"] or slug)
        for kind in (VARIANTS[i % 6], VARIANTS[(i + 3) % 6]):
            if kind == "tracking":
                path = f"{orig}?utm_source=newsletter&utm_medium=email&utm_campaign=week{i}"
            elif kind == "session":
                path = f"{orig};jsessionid={rnd.getrandbits(64):016X}"
            elif kind == "print":
                path = f"/print/{slug}.html"
                files[path] = PRINT.format(title=title, paragraphs=_paragraphs(art["body"]))
            elif kind == "syndicated":
                path = f"/portal/{slug}.html"
                files[path] = PORTAL.format(title=title, paragraphs=_paragraphs(art["body"]))
            elif kind == "churn":
                path = f"/articles/{slug}-live.html"
                files[path] = _churn(raw, rnd)
            else:
                path = f"/wire/{slug}.html"
                files[path] = WIRE.format(title=title, paragraphs=_paragraphs(_edit(art["body"], rnd)))
            variants.append(DemoPage(path, kind, "drop", of=orig))
    for j, text in enumerate(manifest["texts"]):
        path = f"/portal/story-{j + 1}.html"
        files[path] = PORTAL.format(title=f"Story {j + 1}", paragraphs=_paragraphs(text["body"]))
        negatives.append(DemoPage(path, "template-negative", "keep", note="Daily Portal template, another article"))
    for pair in manifest["pairs"]:
        for name in pair["files"]:
            path = f"/sites/{name[:-3]}"
            files[path] = gzip.decompress((root / name).read_bytes()).decode("utf-8", "replace")
            negatives.append(DemoPage(path, "same-site-negative", "keep", note=f"{pair['site']}: same site, other article"))
    rnd.shuffle(variants)
    # originals first, the hard negatives among them, then the copies found later in the crawl
    pages = originals[:8] + negatives + originals[8:] + variants
    for path, text in files.items():
        full = os.path.join(dest, path.lstrip("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as fh:
            fh.write(text)
    links = "\n".join(f'<li><a href="{html.escape(p.path)}">{html.escape(p.path)}</a> ({p.kind})</li>' for p in pages)
    with open(os.path.join(dest, "index.html"), "w", encoding="utf-8") as fh:
        fh.write(f"<!DOCTYPE html><html><head><title>crawler-dedup demo</title></head><body><ul>{links}</ul></body></html>")
    with open(os.path.join(dest, "pages.json"), "w", encoding="utf-8") as fh:
        json.dump([asdict(p) for p in pages], fh, indent=1)
    return pages
