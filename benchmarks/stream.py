"""A labelled stream of real pages and their near-duplicates, and the scoring of a detector on it.

Bases are real pages with a reference main text (article-extraction-benchmark, newspaper and
readability test pages in ../shared/data). Each base may get variants placed later in the
stream: syndication into another site's template, boilerplate churn, tracking URLs, print
versions, truncated copies and 1-5% word edits. Hard negatives come with the data (same site,
other article) and from the shared templates (same template, other article), plus pages whose
only text is the same consent banner. A page is a true duplicate when an earlier page of the
stream has the same base; a drop is correct only when it names a page of that base.

Its copies are easier than real ones: the quality benchmark is benchmarks/realcopies.py, which
takes the page loading, extraction, scoring and baselines from here. This stream stays as the
regression record of benchmarks/decisions.py. Research code, not part of the package: it needs
the page sets of ../shared/data.
"""

from __future__ import annotations

import hashlib
import html as htmllib
import os
import pickle
import random
import re
import sys
import time
from multiprocessing import Pool
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterable

from crawler_dedup.demo.site import PORTAL, PRINT, WIRE, _churn, _paragraphs
from crawler_dedup.core.page.extract import extract
from crawler_dedup.core.page.tokens import tokenize
from pages import reference_pages, strip_tags

VARIANT_KINDS = ("tracking", "churn", "print", "syndicated", "truncated", "edit1", "edit3", "edit5")
REPORTED_KINDS = VARIANT_KINDS

BLOG = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title} &#8211; Notes from Elsewhere</title></head>
<body><div class="site-header"><h1 class="site-title">Notes from Elsewhere</h1>
<p>A blog about whatever crosses our desk.</p></div>
<div class="content"><div class="post"><h2 class="entry-title">{title}</h2>
<div class="entry-meta">Posted in Uncategorized | 3 Comments</div>
<div class="entry-content">{paragraphs}</div></div>
<div id="comments"><h3>3 Responses</h3>
<div class="comment">Great post, thanks for sharing!</div>
<div class="comment">I have been saying this for years.</div>
<div class="comment">Where can I read more about this?</div></div></div>
<div id="sidebar"><h3>Archives</h3><ul><li>November 2019</li><li>October 2019</li></ul>
<h3>Blogroll</h3><ul><li>Another Blog</li><li>Yet Another Blog</li></ul></div>
<div id="footer">Proudly powered by a blog engine.</div></body></html>
"""

TEMPLATES = {"portal": PORTAL, "wire": WIRE, "blog": BLOG}

BANNER = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title>
<script src="/static/app.{n}.js"></script></head><body>
<div id="consent"><h2>We value your privacy</h2>
<p>We and our partners store and access information on your device, such as cookies, and process
personal data, such as unique identifiers and standard information sent by a device, for
personalised ads and content, ad and content measurement, audience insights and product
development. With your permission we and our partners may use precise geolocation data and
identification through device scanning. You may click to consent to our and our partners'
processing as described above. Alternatively you may access more detailed information and change
your preferences before consenting or to refuse consenting. Please note that some processing of
your personal data may not require your consent, but you have a right to object to such
processing. Your preferences will apply to this website only.</p>
<button>Accept all</button> <button>More options</button></div>
<div id="root" data-article="{n}"></div></body></html>
"""


@dataclass
class Base:
    id: str
    site: str
    html: bytes
    gold: str
    title: str


@dataclass
class StreamPage:
    url: str
    html: bytes
    cluster: str  # the base it comes from: equal clusters = duplicates
    kind: str  # original | a VARIANT_KINDS entry | banner | shared-block
    related: str | None = None  # a cluster this page may match or not, both fine (scored neutral)
    template: str | None = None  # the base whose page this one is built in (a syndicated copy): it
    # holds that page's shell (related = the base) plus a block, so matching the shell is neutral too


def load_bases(data_dir: str) -> list[Base]:
    """Every real page with a reference text in `data_dir` (../shared/data: benchmarks/pages.py)
    and a real article, one page per text; [] when absent."""
    from crawler_dedup.core.page.extract import page_title

    bases: list[Base] = []
    for p in reference_pages(data_dir, expected=strip_tags):
        if p.set == "aeb":
            host = re.sub(r"^www\.", "", p.url.split("/")[2])
            bases.append(Base(f"aeb-{p.key[:10]}", host, p.html, p.text, page_title(p.html) or p.key))
        elif p.set == "newspaper":
            site = re.sub(r"\d+$", "", p.key)
            bases.append(Base(f"np-{p.key}", site, p.html, p.text, page_title(p.html) or p.key))
        else:
            bases.append(Base(f"rd-{p.key}", p.key.rsplit("-", 1)[0], p.html, p.text, page_title(p.html) or p.key))
    # keep pages with a real article, and one page per reference text: the readability set has
    # ~35 micro-pages sharing one lorem text under different markup, duplicates of each other
    from crawler_dedup.core.page.features import shingles
    from crawler_dedup.core.page.sketch import resemblance, sketch

    kept: list[tuple[Base, object]] = []
    for b in bases:
        words = tokenize(b.gold)
        if len(words) < 80:
            continue
        sk = sketch(shingles(words, 3))
        if any(resemblance(sk, other) >= 0.2 for _, other in kept):
            continue
        kept.append((b, sk))
    out = [b for b, _ in kept]
    return out


def _edit_words(text: str, rate: float, rnd: random.Random, vocab: list[str]) -> str:
    """Replace, delete or insert about `rate` of the words."""
    out = []
    for word in text.split(" "):
        if word.strip() and rnd.random() < rate:
            op = rnd.random()
            if op < 0.5:
                out.append(rnd.choice(vocab))
            elif op < 0.75:
                continue
            else:
                out.extend([word, rnd.choice(vocab)])
        else:
            out.append(word)
    return " ".join(out)


def _edit_html(raw: bytes, rate: float, rnd: random.Random, vocab: list[str]) -> bytes:
    """The same page with word edits inside its paragraphs (an updated article)."""
    import lxml.html
    from trafilatura.utils import decode_file

    try:  # decode as trafilatura does, so the edited page keeps its charset
        tree = lxml.html.document_fromstring(decode_file(raw))
    except Exception:
        return raw
    for p in tree.iter("p", "li", "h1", "h2", "h3", "blockquote"):
        if p.text and p.text.strip():
            p.text = _edit_words(p.text, rate, rnd, vocab)
        for child in p:
            if child.tail and child.tail.strip():
                child.tail = _edit_words(child.tail, rate, rnd, vocab)
    return lxml.html.tostring(tree, encoding="utf-8", doctype="<!DOCTYPE html>")


def _truncate(text: str, keep: float) -> str:
    paras = [p for p in text.split("\n") if p.strip()]
    if len(paras) >= 4:
        return "\n".join(paras[: max(2, round(len(paras) * keep))])
    words = text.split(" ")
    return " ".join(words[: round(len(words) * keep)])


def build_stream(bases: list[Base], seed: int = 7, variant_share: float = 0.6, banners: int = 8,
                 shared_blocks: int = 20) -> list[StreamPage]:
    """Bases in random order, each variant somewhere after its base; deterministic for a seed."""
    rnd = random.Random(seed)
    # a few long texts stay out of the stream: they give the shared blocks of the hard negatives
    donors = [b for b in bases if len(b.gold.split()) >= 400][:shared_blocks // 2] if shared_blocks else []
    bases = [b for b in bases if b not in donors]
    vocab = sorted({w for b in bases[:50] for w in b.gold.split() if w.isalpha() and len(w) > 3}) or ["word"]
    keyed: list[tuple[float, StreamPage]] = []
    with_variants: set[str] = set()
    for i, b in enumerate(bases):
        start = rnd.random()
        url = f"https://{b.site}/{b.id}"
        keyed.append((start, StreamPage(url, b.html, b.id, "original")))
        if rnd.random() >= variant_share:
            continue
        with_variants.add(b.id)
        for kind in rnd.sample(VARIANT_KINDS, 2):
            title = htmllib.escape(b.title)
            tpl = TEMPLATES[rnd.choice(sorted(TEMPLATES))]
            if kind == "tracking":
                page = StreamPage(f"{url}?utm_source=feed&utm_medium=rss&sid={rnd.getrandbits(32):08x}", b.html, b.id, kind)
            elif kind == "churn":
                page = StreamPage(f"{url}-live", _churn(b.html.decode("utf-8", "replace"), rnd).encode(), b.id, kind)
            elif kind == "print":
                page = StreamPage(f"{url}/print", PRINT.format(title=title, paragraphs=_paragraphs(b.gold)).encode(), b.id, kind)
            elif kind == "syndicated":
                page = StreamPage(f"https://syndicator{i % 5}.example/{b.id}",
                                  tpl.format(title=title, paragraphs=_paragraphs(b.gold)).encode(), b.id, kind)
            elif kind == "truncated":
                page = StreamPage(f"https://teasers.example/{b.id}",
                                  tpl.format(title=title, paragraphs=_paragraphs(_truncate(b.gold, 0.75))).encode(), b.id, kind)
            else:
                rate = int(kind[-1]) / 100
                page = StreamPage(f"{url}?rev={kind}", _edit_html(b.html, rate, rnd, vocab), b.id, kind)
            keyed.append((start + (1 - start) * rnd.random(), page))
    for n in range(banners):
        title = htmllib.escape(bases[(n * 37) % len(bases)].title) if bases else f"Story {n}"
        page = StreamPage(f"https://spa{n}.example/article/{n}", BANNER.format(title=title, n=n).encode(),
                          f"banner-{n}", "banner")
        keyed.append((rnd.random(), page))
    # hard negatives: two different short articles that end with the same long block (a press
    # release's "About us", a disclaimer, an author bio), inside the content extraction keeps.
    # The two must never match. Against its own article either answer is fine: it holds all of
    # it, plus a block that may be boilerplate or not.
    # articles without variants: a copy matched to the block page instead of its article would
    # otherwise be scored as missed
    short = [b for b in bases if 60 <= len(b.gold.split()) <= 250 and b.id not in with_variants]
    for n in range(min(shared_blocks, len(short) // 2) if donors else 0):
        one, two = rnd.sample(short, 2)
        words = donors[n % len(donors)].gold.split()
        start = rnd.randint(0, max(0, len(words) - 350))
        block = " ".join(words[start : start + rnd.randint(150, 350)])
        for tag, art in (("a", one), ("b", two)):
            body = f"{art.gold}\n{block}"
            markup = PORTAL.format(title=htmllib.escape(art.title), paragraphs=_paragraphs(body))
            keyed.append((rnd.random(), StreamPage(f"https://press{n}.example/{tag}", markup.encode(),
                                                   f"shared-{n}-{tag}", "shared-block", related=art.id)))
    keyed.sort(key=lambda kv: kv[0])
    return [page for _, page in keyed]


# -- running detectors on the stream -------------------------------------------------------

def _extract(args):
    url, html, mode, options = args
    if options:  # trafilatura options other than the product's (realcopies.py --trafilatura)
        import functools

        import trafilatura

        from crawler_dedup.core.page import extract as extract_module

        extract_module.trafilatura = type("T", (), {"bare_extraction": staticmethod(
            functools.partial(trafilatura.bare_extraction, **options))})
    t0 = time.perf_counter()
    got = extract(html, url, mode)
    return url, (got.text, got.title) if got else (None, None), time.perf_counter() - t0


def extract_all(stream, workers=2, progress=None, mode: str = "thorough", options: dict | None = None,
                timings: list | None = None):
    """Extract every page once (cached on disk by content), so every method sees the same texts.
    options: trafilatura keywords over the product's; timings: filled with seconds a page (when
    extracted now, not read from the cache)."""
    import trafilatura

    from crawler_dedup.core.page import extract as extract_module

    # keyed by the pages and by the extraction code, so a change to either re-extracts
    key = hashlib.sha1(trafilatura.__version__.encode() + open(extract_module.__file__, "rb").read() + mode.encode()
                       + repr(sorted((options or {}).items())).encode())
    for p in stream:
        key.update(hashlib.sha1(p.html).digest())
    digest = key.hexdigest()[:16]
    cache = os.path.join(os.path.expanduser("~/.cache/crawler-dedup"), f"extract-{digest}.pkl")
    if os.path.exists(cache):
        with open(cache, "rb") as fh:
            return pickle.load(fh)
    t0 = time.perf_counter()
    texts = {}
    with Pool(workers) as pool:
        jobs = [(p.url, p.html, mode, options) for p in stream]
        for i, (url, got, seconds) in enumerate(pool.imap(_extract, jobs, chunksize=8), 1):
            texts[url] = got
            if timings is not None:
                timings.append(seconds)
            if progress:
                progress(i, len(stream))
    print(f"extracted {len(stream)} pages in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    with open(cache, "wb") as fh:
        pickle.dump(texts, fh)
    return texts


def ours(name, texts, settings=None, **overrides):
    """crawler-dedup on an in-memory index, with DEDUP_* `settings` and field-name `overrides`."""
    from crawler_dedup import DedupConfig, Deduplicator
    from crawler_dedup.stores import MemoryStore

    d = Deduplicator(DedupConfig.from_settings(settings or {}, **overrides), store=MemoryStore()).open()

    def decide(page):
        text, title = texts[page.url]
        if text is None:
            return None
        v = d.check(page.url, html=page.html, text=text, title=title)  # the markup too, as in a crawl
        # a drop, or what a dry run would drop; a conceptual flag keeps the page
        dropped = v.would_drop
        return v.duplicate_of if dropped else None

    return name, decide


def plain_simhash(name, texts, k=3, w=3):
    """What a simhash script does: word 3-shingle simhash, brute-force Hamming <= k, nothing else."""
    import numpy as np

    from crawler_dedup.core.page.features import shingles
    from crawler_dedup.core.page.simhash import simhash

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


def word_shingles(text: str, w: int) -> set[str] | None:
    """The text's word w-shingles, as the baselines take them; None for a text under 15 words."""
    toks = tokenize(text)
    if len(toks) < 15:
        return None
    return {" ".join(toks[i : i + w]) for i in range(max(1, len(toks) - w + 1))}


def minhash_lsh(name, texts, threshold, num_perm=128, w=5):
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    sigs = {}

    def decide(page):
        text, _ = texts[page.url]
        if text is None:
            return None
        sh = word_shingles(text, w)
        if sh is None:
            return None
        m = MinHash(num_perm=num_perm)
        m.update_batch([s.encode() for s in sh])
        hits = lsh.query(m)
        if hits:
            return max(hits, key=lambda u: (m.jaccard(sigs[u]), u))
        lsh.insert(page.url, m)
        sigs[page.url] = m
        return None

    return name, decide


# -- scoring ------------------------------------------------------------------------------

@dataclass
class Score:
    name: str
    tp: int = 0
    fp: int = 0
    fn: int = 0
    by_kind: Counter = field(default_factory=Counter)  # true duplicates caught, by kind
    kinds: Counter = field(default_factory=Counter)  # true duplicates, by kind
    false_by_kind: Counter = field(default_factory=Counter)
    neutral: int = 0  # matches between a page and a related one: neither right nor wrong
    seconds: float = 0.0
    pages: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def score_stream(name: str, stream: list[StreamPage], decide: Callable[[StreamPage], str | None]) -> Score:
    """`decide(page)` returns the URL the page duplicates, or None to keep it; called in order."""
    import time

    cluster_of: dict[str, str] = {}
    related_of: dict[str, str | None] = {}
    template_of: dict[str, str | None] = {}
    seen: set[str] = set()
    s = Score(name)
    t0 = time.perf_counter()
    for page in stream:
        matched = decide(page)
        is_dup = page.cluster in seen
        theirs, their_related = cluster_of.get(matched), related_of.get(matched)
        if matched is not None and theirs != page.cluster and (
                (page.related is not None and page.related in (theirs, their_related))
                or (their_related is not None and their_related == page.cluster)
                or (page.template is not None and their_related == page.template)
                or (page.related is not None and template_of.get(matched) == page.related)):
            s.neutral += 1  # a page and one holding all of it plus a block: either answer is fine
            seen.add(page.cluster)
            continue
        if is_dup:
            s.kinds[page.kind] += 1
        if matched is not None:
            if is_dup and cluster_of.get(matched) == page.cluster:
                s.tp += 1
                s.by_kind[page.kind] += 1
            else:
                s.fp += 1
                s.false_by_kind[page.kind] += 1
                if is_dup:
                    s.fn += 1
        else:
            cluster_of[page.url] = page.cluster  # kept: later copies may name it
            related_of[page.url] = page.related
            template_of[page.url] = page.template
            if is_dup:
                s.fn += 1
        seen.add(page.cluster)
    s.seconds = time.perf_counter() - t0
    s.pages = len(stream)
    return s


def format_table(scores: Iterable[Score], kinds: Iterable[str] = REPORTED_KINDS) -> str:
    scores, kinds = list(scores), list(kinds)
    head = f"{'method':<34} {'P':>6} {'R':>6} {'F1':>6} {'FP':>4} {'FN':>4} {'ms/page':>8}  " + " ".join(f"{k[:8]:>8}" for k in kinds)
    lines = [head, "-" * len(head)]
    for s in scores:
        per = " ".join(f"{(s.by_kind[k] / s.kinds[k]) if s.kinds[k] else float('nan'):>8.2f}" for k in kinds)
        lines.append(f"{s.name:<34} {s.precision:>6.3f} {s.recall:>6.3f} {s.f1:>6.3f} {s.fp:>4} {s.fn:>4} "
                     f"{1000 * s.seconds / max(s.pages, 1):>8.2f}  {per}")
    if any(s.false_by_kind for s in scores):
        lines.append("")
        lines.append("false drops by kind of the dropped page:")
        for s in scores:
            if s.false_by_kind:
                lines.append(f"  {s.name}: " + ", ".join(f"{k} {n}" for k, n in sorted(s.false_by_kind.items())))
    return "\n".join(lines)


def kinds_present(stream: list[StreamPage]) -> list[str]:
    counts = defaultdict(int)
    for p in stream:
        counts[p.kind] += 1
    return [k for k in REPORTED_KINDS if counts[k]]
