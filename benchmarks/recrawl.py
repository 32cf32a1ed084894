"""Recrawl: what a second crawl over the same index does with a site of real pages that changed.

    python benchmarks/recrawl.py [--pages 300] [--seed 0] [--data ../shared/data] [--out DIR [--keep]]
                                 [--json FILE] [--skip-baseline]

Builds a site of N real article pages from ../shared/data (article-extraction-benchmark,
newspaper-testpages, readability-test-pages; pages whose trafilatura text is under 100 words or
a near-duplicate of a page already chosen are skipped), serves it on 127.0.0.1 with the demo's
PageServer, and crawls it twice with the project's own spider, as a user would:

    python -m scrapy crawl pages -a urls=URLFILE -s DEDUP_DIR=DIR/index -s DEDUP_DROPLOG=DIR/drops-N.jsonl \\
        -s ROBOTSTXT_OBEY=0 -s LOG_LEVEL=INFO -s CONCURRENT_REQUESTS=1 -o DIR/items-N.jsonl

Between the crawls the site changes (deterministically, by --seed), in groups:
  updated            ~N/6   a real correction: a new paragraph of another page's human text inserted
                            after a body paragraph, and 3-5 words of the body replaced
  churn              ~N/6   the same article re-fetched: digits of dates, times and counters changed
                            outside the article's text, and a "N views" element added after it
  figures            ~N/12  a correction of one figure: a number inside a sentence of the article's
                            own text changed (an update that differs only in a number: to be kept)
  replaced           ~N/12  the file now holds another (unchanged) page of the site
  copies_of_updates  ~N/12  new URLs after all old ones: an updated page's new HTML, byte for byte
                            (half) or with a few words of a sidebar changed (half)
  unchanged          rest   byte-identical
  new                ~10    real pages that were not in crawl 1
Crawl 2 uses the same index and the old URLs, then the new ones. One page at a time
(CONCURRENT_REQUESTS=1) so which copy comes first is defined.

Prints, per setting (the default, and DEDUP_REVISIT=drop in its own index: a revisit matched
against its own URL dropped as a copy of itself), what crawl 2 did with each group, and crawl 2's
dedup/* counters. --json FILE gets every figure plus the URLs that went wrong with their drop-log
lines. Exits 0 when the crawls ran (the figures are measured, not asserted); a setting the
project does not accept prints "n/a". Skips (exit 0) when the data folder is absent.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

DEFAULT_DATA = os.path.join(REPO, "..", "shared", "data")
MIN_WORDS = 100
SETTINGS = {"update": [], "drop": ["DEDUP_REVISIT=drop"]}  # row name -> extra -s settings
CRAWL_TIMEOUT = 1800


# -- the pages ---------------------------------------------------------------------------------

@dataclass
class Page:
    name: str      # where it comes from, e.g. aeb/042bb7b5fe
    html: str
    gold: str      # reference main text (human gold for aeb; the sets' expected text otherwise)
    text: str = ""  # trafilatura's text of the page as served (crawler_dedup.core.extract)
    url: str = ""


def _strip_tags(html: str) -> str:
    import lxml.html

    try:
        return lxml.html.fromstring(html).text_content()
    except Exception:
        return re.sub(r"<[^>]+>", " ", html)


def load_candidates(data: str) -> list[Page]:
    """Every page with a reference text, in a fixed order (source, then file name)."""
    out: list[Page] = []
    aeb = os.path.join(data, "article-extraction-benchmark")
    if os.path.isdir(aeb):
        gold = json.load(open(os.path.join(aeb, "ground-truth.json"), encoding="utf-8"))
        for key in sorted(gold):
            path = os.path.join(aeb, "html", key + ".html.gz")
            if os.path.exists(path):
                out.append(Page(f"aeb/{key[:10]}", _decode(gzip.open(path).read()), gold[key]["articleBody"]))
    # newspaper: old-79553f6 (text/*.txt) and head (txt/*.txt); the same page in both is
    # caught by the near-duplicate filter
    for sub, textdir in (("old-79553f6", "text"), ("head", "txt")):
        base = os.path.join(data, "newspaper-testpages", sub, "tests", "data")
        if not os.path.isdir(os.path.join(base, "html")):
            continue
        for name in sorted(os.listdir(os.path.join(base, "html"))):
            txt = os.path.join(base, textdir, name[: -len(".html")] + ".txt")
            if name.endswith(".html") and os.path.exists(txt):
                html = _decode(open(os.path.join(base, "html", name), "rb").read())
                out.append(Page(f"np-{sub[:3]}/{name[:-5]}", html, open(txt, encoding="utf-8").read()))
    rdb = os.path.join(data, "readability-test-pages", "test", "test-pages")
    if os.path.isdir(rdb):
        for name in sorted(os.listdir(rdb)):
            src, exp = os.path.join(rdb, name, "source.html"), os.path.join(rdb, name, "expected.html")
            if os.path.exists(src) and os.path.exists(exp):
                out.append(Page(f"rd/{name}", _decode(open(src, "rb").read()),
                                _strip_tags(open(exp, encoding="utf-8").read())))
    return out


def _decode(raw: bytes) -> str:
    # the PageServer sends every .html as charset=utf-8, and the files are written back as UTF-8
    return raw.decode("utf-8", "replace")


WORD = re.compile(r"\w+", re.U)


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def grams(ws: list[str], n: int) -> set[tuple]:
    return {tuple(ws[i:i + n]) for i in range(len(ws) - n + 1)}


def norm(text: str) -> str:
    return " ".join(text.split())


SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"“‘A-Z])")
LOREM = re.compile(r"lorem|ipsum|dolor sit", re.I)


def choose_pages(cands: list[Page], n_site: int, n_new: int, url_of) -> tuple[list[Page], list[Page]]:
    """The first n_site + n_new candidates (in order) with a real article (100+ words, no lorem
    ipsum) that is not a near-duplicate of one chosen before, judged the way the crawl judges
    (default settings, in a memory index), so crawl 1 keeps them all.
    Returns (chosen, the candidates never chosen that are no copy of a chosen one)."""
    from crawler_dedup.core.dedup import Deduplicator
    from crawler_dedup.core.extract import extract

    chosen, rest = [], []
    with Deduplicator(backend="memory") as d:
        for i, page in enumerate(cands):
            if len(chosen) >= n_site + n_new:
                rest.extend(cands[i:])
                break
            if LOREM.search(page.gold):
                continue  # readability's synthetic micro-pages: lorem ipsum, not an article
            url = url_of(len(chosen))
            ex = extract(page.html, url)
            if ex is None or len(ex.text.split()) < MIN_WORDS:
                rest.append(page)
                continue
            v = d.check(url, text=ex.text, title=ex.title)
            if v.action != "keep" or v.skipped or v.guard or v.error:
                continue  # a copy of a chosen page (e.g. the readability micro-pages' shared text)
            page.text, page.url = ex.text, url
            chosen.append(page)
    return chosen, rest


def donor_snippets(pool: list[Page], site_texts: list[str], want: int) -> list[str]:
    """Sentences (one or two, 15-60 words) of human text from pages not on the site, none of whose
    5-word runs occur on the site: the text of a real correction, new to the index."""
    seen = set()
    for t in site_texts:
        seen |= grams(words(t), 5)
    per_page = []
    for page in pool:
        if LOREM.search(page.gold):
            continue
        sents = [norm(s) for s in SENTENCE.split(page.gold.replace("\n", " ")) if s.strip()]
        got, i = [], 1  # not the first sentence: the gold texts often glue the headline onto it
        while i < len(sents):
            snip = sents[i]
            if len(snip.split()) < 15 and i + 1 < len(sents):
                snip, i = snip + " " + sents[i + 1], i + 1
            i += 1
            n = len(snip.split())
            if 15 <= n <= 60 and _english_prose(snip) and not (grams(words(snip), 5) & seen):
                got.append(snip)
        if got:
            per_page.append(got)
    # round robin over donor pages: each correction from a different page while there are enough
    out = []
    for depth in range(max((len(g) for g in per_page), default=0)):
        out.extend(g[depth] for g in per_page if depth < len(g))
        if len(out) >= want:
            break
    return out[:want] if len(out) >= want else out


ABBREV_END = re.compile(r"\b(?:vs|Mr|Mrs|Ms|Dr|St|Gov|Sen|Rep|Gen|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec|"
                        r"Inc|Corp|Co|No|Jr|Sr|[A-Z])\.$")
ENGLISH = {"the", "and", "of", "to", "in", "a", "is", "for", "that", "with", "on", "was", "it", "as"}


def _english_prose(s: str) -> bool:
    """A sentence of English prose: the site's pages are mostly English, and a heading, a
    listing or an upper-case line is not what a correction adds."""
    ws = s.split()
    letters = sum(ch.isalpha() for ch in s)
    return (sum(w.lower().strip(",.;:") in ENGLISH for w in ws) >= 3 and s[-1] in ".!?\"”'’"
            and sum(ch.isupper() for ch in s) < 0.2 * letters and "<" not in s
            and sum(ch.isascii() for ch in s if ch.isalpha()) >= 0.98 * letters
            and not ABBREV_END.search(s))  # "... UAH Chargers vs." is a sentence cut at an abbreviation


def common_words(pages: list[Page], min_pages: int = 5) -> list[str]:
    """Lower-case words of 4-10 letters found in the gold texts of at least `min_pages` pages:
    real, common words (no names) to put in place of a page's words."""
    seen: dict[str, int] = {}
    for p in pages:
        for w in set(re.findall(r"(?<![\w'’-])[a-z]{4,10}(?![\w'’-])", p.gold)):
            seen[w] = seen.get(w, 0) + 1
    return sorted(w for w, k in seen.items() if k >= min_pages)


# -- the edits (lxml.html) ---------------------------------------------------------------------

def _parse(html: str):
    import lxml.html

    return lxml.html.document_fromstring(html)


def _serialize(tree) -> bytes:
    import lxml.html

    doctype = tree.getroottree().docinfo.doctype or None
    return lxml.html.tostring(tree, encoding="unicode", doctype=doctype).encode("utf-8")


LONGWORD = re.compile(r"\b[A-Za-z]{4,}\b")


def make_update(page: Page, snippet: str, vocab: list[str], rnd: random.Random) -> bytes | None:
    """A correction: `snippet` as a new <p> right after a body paragraph that holds a sentence of
    the page's own gold text, and 3-5 words of the body paragraphs replaced by other real words.
    None when no paragraph works (the extraction must change and show the new paragraph)."""
    from crawler_dedup.core.extract import extract

    gold8 = grams(words(page.gold), 8)
    body = [i for i, p in enumerate(_parse(page.html).iter("p")) if grams(words(p.text_content()), 8) & gold8]
    rnd.shuffle(body)
    for anchor_at in body[:4]:
        tree = _parse(page.html)
        ps = list(tree.iter("p"))
        anchor = ps[anchor_at]
        new = anchor.makeelement("p", {})
        new.text = snippet
        new.tail, anchor.tail = anchor.tail, None  # the text that followed the anchor follows the new <p>
        anchor.addnext(new)
        # 3-5 word changes inside the body paragraphs' own text (p.text and its children's tails)
        slots = []
        for i in body:
            p = ps[i]
            slots.append((p, "text"))
            slots.extend((c, "tail") for c in p)
        spots = [(el, attr, m.start(), m.end()) for el, attr in slots
                 for m in LONGWORD.finditer(getattr(el, attr) or "")]
        if len(spots) < 3:
            continue
        picked = rnd.sample(spots, min(len(spots), rnd.randint(3, 5)))
        for el, attr, a, b in sorted(picked, key=lambda s: -s[2]):  # right to left: offsets stay valid
            s = getattr(el, attr)
            old = s[a:b]
            w = rnd.choice([v for v in vocab if v != old.lower()])
            w = w.capitalize() if old[0].isupper() else w
            setattr(el, attr, s[:a] + w + s[b:])
        out = _serialize(tree)
        ex = extract(out.decode("utf-8"), page.url)
        if ex is not None and norm(ex.text) != norm(page.text) and norm(snippet) in norm(ex.text):
            return out
    return None


MONTH = (r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
         r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?")
COUNTER_WORDS = r"(?:comments?|shares?|views?|replies|reply|likes?|reads?|responses?|reactions?)"


def _new_day(g: str, rnd: random.Random) -> str:
    d = int(g)
    d2 = (d + rnd.randint(0, 26)) % 28 + 1  # 1..28, any but d (for d in 1..28)
    return f"{d2:0{len(g)}d}" if g[0] == "0" else str(d2)  # "05" stays two digits, "16" may become "5"


def _ordinal(day: str, suffix: str) -> str:
    if not suffix:
        return day
    d = int(day)
    return day + ("th" if 10 <= d % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(d % 10, "th"))


# (pattern, replacement given the match and the random source): the digits a re-fetch changes
CHURN = [(re.compile(p, re.I), f) for p, f in [
    (rf"\b({MONTH})(\s+)(\d{{1,2}})(st|nd|rd|th)?\b",
     lambda m, r: m[1] + m[2] + _ordinal(_new_day(m[3], r), m[4])),
    (rf"\b(\d{{1,2}})(st|nd|rd|th)?(\s+(?:of\s+)?{MONTH})(?=\W|$)",
     lambda m, r: _ordinal(_new_day(m[1], r), m[2]) + m[3]),
    (r"\b(\d{4})-(\d{2})-(\d{2})", lambda m, r: f"{m[1]}-{m[2]}-{_new_day(m[3], r)}"),
    (r"\b(\d{1,2})/(\d{1,2})/(\d{2,4})\b", lambda m, r: f"{m[1]}/{_new_day(m[2], r)}/{m[3]}"),
    (r"\b(\d{1,2})\.(\d{1,2})\.(\d{4})\b", lambda m, r: f"{_new_day(m[1], r)}.{m[2]}.{m[3]}"),
    (r"(?<![\d:])(\d{1,2}):(\d{2})(?!\d)", lambda m, r: f"{m[1]}:{(int(m[2]) + r.randint(1, 59)) % 60:02d}"),
    (rf"\b(\d[\d,]*)(\s+{COUNTER_WORDS})\b",
     lambda m, r: _count(int(m[1].replace(",", "")) + r.randint(1, 250), "," in m[1]) + m[2]),
    (r"\b(\d+)(\s+(?:minutes?|mins?|hours?|hrs?|days?|weeks?)\s+ago)\b",
     lambda m, r: str(int(m[1]) + r.randint(1, 9)) + m[2]),
]]


def has_churn(s: str) -> bool:
    return any(p.search(s) for p, _ in CHURN)


def churn_string(s: str, rnd: random.Random) -> tuple[str, int]:
    """Change the digits of every date-, time- or counter-like run in s; (new s, runs changed)."""
    n = 0
    for pattern, repl in CHURN:
        s, k = pattern.subn(lambda m: repl(m, rnd), s)
        n += k
    return s, n


def _count(v: int, commas: bool) -> str:
    return f"{v:,}" if commas else str(v)


INLINE = {"a", "abbr", "b", "bdi", "cite", "code", "em", "font", "i", "mark", "q", "s", "small", "span", "strong",
          "sub", "sup", "time", "u"}


def make_churn(page: Page, rnd: random.Random) -> tuple[bytes, int]:
    """The same article as a re-fetch brings it: the digits of dates, times and counters changed
    wherever they are not part of the article (bylines, timestamps, "N comments", related-link
    lists, <time>): a date inside a block of the gold text, or inside a block of over 25 words, is
    the article's own and changing it would be a real edit. And a "N views" element added at the
    end of <body>. Returns (new html, date/time/counter runs changed)."""
    tree = _parse(page.html)
    gold = norm(page.gold).lower()
    changed, verdicts = 0, {}

    def churnable(el) -> bool:
        while el is not None and el.tag in INLINE:  # judge the block the text is in
            el = el.getparent()
        if el is None:
            return False
        if el not in verdicts:
            text = norm(el.text_content()).lower()
            n = len(text.split())
            verdicts[el] = n <= 25 and not (n >= 3 and text in gold)
        return verdicts[el]

    for el in list(tree.iter()):
        # a comment's or a script's own text is not page text; their tails are
        own = isinstance(el.tag, str) and el.tag not in ("script", "style")
        if own and el.text and has_churn(el.text) and churnable(el):
            el.text, k = churn_string(el.text, rnd)
            changed += k
        if el.tail and has_churn(el.tail) and churnable(el.getparent()):
            el.tail, k = churn_string(el.tail, rnd)
            changed += k
        if el.tag == "time" and el.get("datetime"):
            v, k = churn_string(el.get("datetime"), rnd)
            el.set("datetime", v)
            changed += k
    body = tree.find("body")
    body = body if body is not None else tree
    views = body.makeelement("div", {"class": "views"})
    views.text = f"{rnd.randint(1000, 99999):,} views"
    body.append(views)
    return _serialize(tree), changed


NUMBER = re.compile(r"(?<![\w$£€.,:/-])(\d{1,3})(?![\w.,:/%-]?\d)")


def make_figure_edit(page: Page, rnd: random.Random) -> bytes | None:
    """One number of a body paragraph of the page's gold text (over 25 words) changed, as a
    correction of a figure would; None when no such paragraph holds a plain number."""
    from crawler_dedup.core.extract import extract

    gold8 = grams(words(page.gold), 8)
    tree = _parse(page.html)
    spots = []
    for p in tree.iter("p"):
        text = p.text_content()
        if len(text.split()) > 25 and grams(words(text), 8) & gold8:
            for el, attr in [(p, "text")] + [(c, "tail") for c in p]:
                spots += [(el, attr, m) for m in NUMBER.finditer(getattr(el, attr) or "")]
    if not spots:
        return None
    el, attr, m = rnd.choice(spots)
    value = getattr(el, attr)
    new = str(int(m[1]) + rnd.randint(1, 9))
    setattr(el, attr, value[:m.start(1)] + new + value[m.end(1):])
    out = _serialize(tree)
    ex = extract(out.decode("utf-8"), page.url)
    return out if ex is not None and norm(ex.text) != norm(page.text) else None


def sidebar_variant(html: bytes, rnd: random.Random, vocab: list[str]) -> bytes:
    """The same page with a few words of a sidebar changed, as a tracking URL's copy shows it."""
    words_ = " ".join(rnd.sample(vocab, 3))
    tag = f'<div class="via">Shared via {words_}</div>'.encode()
    at = html.lower().rfind(b"</body>")
    return html[:at] + tag + html[at:] if at >= 0 else html + tag


# -- the crawls --------------------------------------------------------------------------------

STAT = re.compile(r"'(dedup/[^']+)': (\d+)")


@dataclass
class Crawl:
    setting: str
    n: int
    cmd: list[str]
    seconds: float = 0.0
    rc: int | None = None
    error: str | None = None
    stats: dict = field(default_factory=dict)
    items: set = field(default_factory=set)
    drops: dict = field(default_factory=dict)  # url -> last drop-log line


def run_crawl(setting: str, n: int, urlfile: str, d: str) -> Crawl:
    cmd = [sys.executable, "-m", "scrapy", "crawl", "pages", "-a", f"urls={urlfile}",
           "-s", f"DEDUP_DIR={d}/index", "-s", f"DEDUP_DROPLOG={d}/drops-{n}.jsonl",
           "-s", "ROBOTSTXT_OBEY=0", "-s", "LOG_LEVEL=INFO", "-s", "CONCURRENT_REQUESTS=1"]
    for s in SETTINGS[setting]:
        cmd += ["-s", s]
    cmd += ["-o", f"{d}/items-{n}.jsonl"]
    c = Crawl(setting, n, cmd)
    print(f"crawl {n} [{setting}]: {shlex.join(cmd)}", flush=True)
    log = os.path.join(d, f"crawl-{n}.log")
    t0 = time.perf_counter()
    try:
        with open(log, "w", encoding="utf-8") as err:
            c.rc = subprocess.run(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err,
                                  timeout=CRAWL_TIMEOUT).returncode
    except subprocess.TimeoutExpired:
        c.error = f"timed out after {CRAWL_TIMEOUT} s"
    c.seconds = time.perf_counter() - t0
    with open(log, encoding="utf-8", errors="replace") as fh:
        stderr = fh.read()  # Scrapy's log, ending with the stats dump
    c.stats = {k: int(v) for k, v in STAT.findall(stderr)}
    if c.error is None and c.rc != 0:
        first = next((ln for ln in stderr.splitlines() if "ERROR" in ln), None) or stderr.strip().splitlines()[-1:]
        first = first if isinstance(first, str) else " ".join(first)
        first = re.sub(r"^\S+ \S+ \[[^\]]*\] ERROR: ", "", first)  # the log line's time and logger
        c.error = f"exit status {c.rc}: {first}"[:400]
    items = os.path.join(d, f"items-{n}.jsonl")
    if os.path.exists(items):
        with open(items, encoding="utf-8") as fh:
            c.items = {json.loads(ln)["url"] for ln in fh if ln.strip()}
    drops = os.path.join(d, f"drops-{n}.jsonl")
    if os.path.exists(drops):
        with open(drops, encoding="utf-8") as fh:
            for ln in fh:
                if ln.strip():
                    rec = json.loads(ln)
                    c.drops[rec["url"]] = rec
    print(f"  {c.seconds:.1f} s, {len(c.items)} items, {len(c.drops)} drop-log lines"
          + (f"  FAILED: {c.error}" if c.error else ""), flush=True)
    return c


def _line(rec: dict) -> dict:
    """A drop-log line without its bulky fields, for the report."""
    return {k: v for k, v in rec.items() if k not in ("item", "text", "excerpt")}


def fate(c: Crawl, url: str) -> tuple[str, dict | None]:
    """kept | unchanged | self (exact/near copy of its own URL) | dropped | missing."""
    if url in c.items:
        return "kept", None
    rec = c.drops.get(url)
    if rec is None:
        return "missing", None
    if rec.get("reason") == "unchanged":
        return "unchanged", rec
    if rec.get("duplicate_of") == url and rec.get("reason") in ("exact", "near"):
        return "self", rec
    return "dropped", rec


def figures(c: Crawl, groups: dict, sources: dict, copy_of: dict) -> dict:
    out: dict = {"stats": dict(sorted(c.stats.items())), "failures": {}}
    fails = out["failures"]

    def record(key, url, how, rec):
        fails.setdefault(key, []).append({"url": url, "fate": how, "drop": _line(rec) if rec else None})

    for g in ("updated", "figures", "new"):
        kept = 0
        for u in groups[g]:
            how, rec = fate(c, u)
            kept += how == "kept"
            if how != "kept":
                record(f"{g}_lost", u, how, rec)
        out[g] = {"kept": kept, "total": len(groups[g])}
    for g in ("churn", "unchanged"):
        split = {"unchanged": 0, "self": 0, "kept": 0, "dropped": 0, "missing": 0}
        reasons: dict = {}
        for u in groups[g]:
            how, rec = fate(c, u)
            split[how] += 1
            r = "kept" if how == "kept" else (rec or {}).get("reason", how)
            reasons[r] = reasons.get(r, 0) + 1
            if how in ("self", "dropped", "missing") or (g == "unchanged" and how == "kept"):
                record(f"{g}_{how}", u, how, rec)
        out[g] = {**split, "total": len(groups[g]), "reasons": reasons}
    for g, target in (("replaced", sources), ("copies_of_updates", copy_of)):
        right = 0
        for u in groups[g]:
            how, rec = fate(c, u)
            ok = how != "kept" and rec is not None and rec.get("duplicate_of") == target[u]
            right += ok
            if not ok:
                fails.setdefault(f"{g}_wrong", []).append(
                    {"url": u, "expected_duplicate_of": target[u], "fate": how, "drop": _line(rec) if rec else None})
        out[g] = {"dropped_as_copy": right, "total": len(groups[g])}
    return out


# -- the report --------------------------------------------------------------------------------

def table(rows: dict, groups: dict) -> str:
    """One row per setting, a column (or four) per group; a setting that did not run says why."""
    n = {g: len(v) for g, v in groups.items()}
    spans = [("", 1), (f"updated ({n['updated']})", 1), (f"figures ({n['figures']})", 1), (f"churn ({n['churn']})", 4),
             (f"unchanged ({n['unchanged']})", 4), (f"replaced ({n['replaced']})", 1),
             (f"copies ({n['copies_of_updates']})", 1), (f"new ({n['new']})", 1)]
    head = ["setting", "kept", "kept", "unch", "self", "kept", "other", "unch", "self", "kept", "other", "->source",
            "->updated", "kept"]
    lines, skipped = [head], []
    for name, f in rows.items():
        if "n/a" in f:
            skipped.append((name, f"n/a ({f['n/a']})"))
            continue
        cells = [name, f"{f['updated']['kept']}/{f['updated']['total']}", f"{f['figures']['kept']}/{f['figures']['total']}"]
        for g in ("churn", "unchanged"):
            s = f[g]
            cells += [str(s["unchanged"]), str(s["self"]), str(s["kept"]), str(s["dropped"] + s["missing"])]
        cells += [f"{f['replaced']['dropped_as_copy']}/{f['replaced']['total']}",
                  f"{f['copies_of_updates']['dropped_as_copy']}/{f['copies_of_updates']['total']}",
                  f"{f['new']['kept']}/{f['new']['total']}"]
        lines.append(cells)
    widths = [max(len(r[i]) for r in lines) for i in range(len(head))]
    at = 0
    for title, cols in spans:  # widen a one-column group to its title
        if cols == 1:
            widths[at] = max(widths[at], len(title))
        at += cols
    top, at = [], 0
    for title, cols in spans:
        top.append(f"{title:^{sum(widths[at:at + cols]) + 2 * (cols - 1)}}")
        at += cols
    out = ["  ".join(top).rstrip()]
    out += ["  ".join(f"{c:<{w}}" if i == 0 else f"{c:>{w}}" for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in lines]
    out += [f"{name:<{widths[0]}}  {why}" for name, why in skipped]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=300, help="pages of the site in crawl 1 (default 300)")
    ap.add_argument("--seed", type=int, default=0, help="which pages, groups and edits (default 0)")
    ap.add_argument("--data", default=DEFAULT_DATA, help="the shared data folder (default <repo>/../shared/data)")
    ap.add_argument("--out", help="an empty or new folder for the site, indexes, logs and feeds "
                                  "(default: a temporary folder, removed unless --keep)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--json", metavar="FILE", help="write every figure (and the failures) to FILE")
    ap.add_argument("--skip-baseline", action="store_true", help="only the default setting, not DEDUP_REVISIT=drop")
    args = ap.parse_args(argv)
    if args.pages < 4:
        ap.error("--pages must be at least 4 (one page per group)")
    data = os.path.abspath(args.data)
    if not os.path.isdir(data):
        print(f"no data folder at {data}: skipping the recrawl benchmark")
        return 0
    if args.out and os.path.isdir(args.out) and os.listdir(args.out):
        ap.error(f"--out {args.out} is not empty (a used index would change the results)")
    out = os.path.abspath(args.out) if args.out else tempfile.mkdtemp(prefix="crawler-dedup-recrawl-")
    os.makedirs(os.path.join(out, "site"), exist_ok=True)

    from crawler_dedup.demo.server import PageServer

    # one server for all four crawls: the URLs (its port) must be the same in both crawls; it
    # reads a file again when its mtime or size changes, so the site is changed on disk
    server = PageServer(os.path.join(out, "site")).start()
    try:
        return run(args, data, out, server)
    finally:
        server.stop()
        if args.out or args.keep:
            print(f"kept: {out}")
        else:
            shutil.rmtree(out, ignore_errors=True)


@dataclass
class Site:
    pages: list[Page]                      # crawl 1's site, /p000.html ...
    fresh: list[Page]                      # the new pages of crawl 2
    groups: dict = field(default_factory=dict)      # group -> URLs
    new_html: dict = field(default_factory=dict)    # URL -> crawl 2's bytes (changed or added files)
    sources: dict = field(default_factory=dict)     # replaced URL -> the URL whose page it now holds
    copy_of: dict = field(default_factory=dict)     # copy URL -> the updated URL it copies
    churn_runs: dict = field(default_factory=dict)  # churn URL -> date/time/counter runs changed
    churn_changed: list = field(default_factory=list)        # churn URLs whose extracted text changed
    churn_changed_words: list = field(default_factory=list)  # ... beyond its digits


def change_site(site: Site, n_upd: int, n_churn: int, n_repl: int, n_copies: int, snippets: list[str],
                vocab: list[str], rnd: random.Random, base_url: str, url_of, n_fig: int = 0) -> None:
    """Crawl 2's site: the groups of the module docstring, each edit checked where it can fail."""
    from crawler_dedup.core.extract import extract

    pages, n = site.pages, len(site.pages)
    g = site.groups = {k: [] for k in ("updated", "churn", "figures", "replaced", "copies_of_updates", "unchanged",
                                       "new")}
    order = list(range(n))
    rnd.shuffle(order)
    left, k, misses = [], 0, 0
    for i in order:
        if len(g["updated"]) < n_upd:
            html = make_update(pages[i], snippets[k % len(snippets)], vocab, rnd)
            if html is not None:
                g["updated"].append(pages[i].url)
                site.new_html[pages[i].url] = html
                k, misses = k + 1, 0
                continue
            misses += 1
            if misses >= 3:  # a snippet the extraction does not show as written: take the next
                k, misses = k + 1, 0
        left.append(i)  # a page with no paragraph of its gold text to anchor a correction to
    g["churn"] = [pages[i].url for i in left[:n_churn]]
    by_url = {p.url: p for p in pages}
    rest = []
    for i in left[n_churn:]:
        html = make_figure_edit(pages[i], rnd) if len(g["figures"]) < n_fig else None
        if html is None:
            rest.append(i)
        else:
            g["figures"].append(pages[i].url)
            site.new_html[pages[i].url] = html
    g["replaced"] = [pages[i].url for i in rest[:n_repl]]
    g["unchanged"] = [pages[i].url for i in rest[n_repl:]]
    for u in g["churn"]:
        html, site.churn_runs[u] = make_churn(by_url[u], rnd)
        site.new_html[u] = html
        ex = extract(html.decode("utf-8"), u)
        before, after = norm(by_url[u].text), norm(ex.text if ex else "")
        if after != before:
            site.churn_changed.append(u)
            if re.sub(r"\d", "", after) != re.sub(r"\d", "", before):
                site.churn_changed_words.append(u)
    # a replaced URL holds an unchanged page: whichever of the two is fetched first, the other
    # URL's page is the one it copies
    site.sources = dict(zip(g["replaced"], rnd.sample(g["unchanged"], len(g["replaced"]))))
    for u, src in site.sources.items():
        site.new_html[u] = by_url[src].html.encode("utf-8")
    for j in range(n_copies):
        upd = g["updated"][j % len(g["updated"])]
        u = f"{base_url}/new{j:03d}.html"
        html = site.new_html[upd]
        site.new_html[u] = html if j % 2 == 0 else sidebar_variant(html, rnd, vocab)
        site.copy_of[u] = upd
        g["copies_of_updates"].append(u)
    for j, p in enumerate(site.fresh):
        p.url = url_of(n + j)  # the URL it was chosen (checked) under
        site.new_html[p.url] = p.html.encode("utf-8")
        g["new"].append(p.url)


def run(args, data: str, out: str, server) -> int:
    t_start = time.perf_counter()
    rnd = random.Random(args.seed)
    cands = load_candidates(data)
    if not cands:
        print(f"no pages under {data}: skipping the recrawl benchmark")
        return 0
    rnd.shuffle(cands)  # mix the three sets; the same seed gives the same order
    n = args.pages
    n_new = max(1, min(10, n // 6))
    width = max(3, len(str(n + n_new - 1)))
    url_of = lambda i: f"{server.base_url}/p{i:0{width}d}.html"  # noqa: E731
    chosen, rest = choose_pages(cands, n, n_new, url_of)
    if len(chosen) < n + n_new:
        n_new = max(1, min(n_new, len(chosen) // 7))
        n = len(chosen) - n_new
        print(f"only {len(chosen)} usable pages: the site gets {n}, and {n_new} new ones")
        if n < 4:
            print("too few pages for the benchmark")
            return 1
    site = Site(chosen[:n], chosen[n:n + n_new])
    n_upd, n_churn, n_repl, n_copies = max(1, n // 6), max(1, n // 6), max(1, n // 12), max(1, n // 12)
    n_fig = max(1, n // 12)
    n_repl = max(1, min(n_repl, (n - n_upd - n_churn - n_fig) // 2))  # as many unchanged pages as sources
    snippets = donor_snippets(rest, [p.text for p in chosen] + [p.gold for p in chosen], 2 * n_upd)
    if not snippets:
        print("no donor text for the updates (too few pages outside the site)")
        return 1
    vocab = common_words(cands)
    kinds = {k: sum(p.name.startswith(k) for p in site.pages) for k in ("aeb", "np", "rd")}
    print(f"site: {n} pages ({kinds['aeb']} article-extraction-benchmark, {kinds['np']} newspaper, "
          f"{kinds['rd']} readability) + {n_new} new in crawl 2, from {len(cands)} candidates; "
          f"{len(snippets)} correction snippets from pages not on the site ({time.perf_counter() - t_start:.1f} s)")

    # crawl 1: the pages as they are (the sets are all UTF-8: written back byte for byte)
    for p in site.pages:
        _write(os.path.join(out, "site", p.url.rsplit("/", 1)[1]), p.html.encode("utf-8"))
    urls1 = [p.url for p in site.pages]
    _write(os.path.join(out, "urls-1.txt"), ("\n".join(urls1) + "\n").encode())
    settings = ["update"] + ([] if args.skip_baseline else ["drop"])
    crawls: dict = {s: {} for s in settings}
    for s in settings:
        os.makedirs(os.path.join(out, s), exist_ok=True)
        crawls[s][1] = run_crawl(s, 1, os.path.join(out, "urls-1.txt"), os.path.join(out, s))

    t0 = time.perf_counter()
    change_site(site, n_upd, n_churn, n_repl, n_copies, snippets, vocab, rnd, server.base_url, url_of, n_fig)
    time.sleep(0.01)  # a rewritten file gets a new mtime, so the server reads it again
    for u, html in site.new_html.items():
        _write(os.path.join(out, "site", u.rsplit("/", 1)[1]), html)
    urls2 = urls1 + site.groups["new"] + site.groups["copies_of_updates"]
    _write(os.path.join(out, "urls-2.txt"), ("\n".join(urls2) + "\n").encode())
    runs = site.churn_runs.values()
    print(f"crawl 2's site ({time.perf_counter() - t0:.1f} s): "
          + ", ".join(f"{g} {len(v)}" for g, v in site.groups.items())
          + f"\n  churn: {sum(runs)} date/time/counter runs changed on {sum(1 for v in runs if v)} of the "
          f"{len(runs)} pages; extracted text changed on {len(site.churn_changed)} "
          f"({len(site.churn_changed_words)} beyond its digits)")
    for s in settings:
        if crawls[s][1].error is None:
            crawls[s][2] = run_crawl(s, 2, os.path.join(out, "urls-2.txt"), os.path.join(out, s))

    rows = {}
    for s in settings:
        c1, c2 = crawls[s][1], crawls[s].get(2)
        bad = c1.error or (c2.error if c2 else None)
        if bad:
            rows[s] = {"n/a": bad}
            continue
        f = figures(c2, site.groups, site.sources, site.copy_of)
        f["crawl1"] = {"kept": len(c1.items & set(urls1)), "total": n,
                       "dropped": [_line(r) for r in c1.drops.values()], "stats": dict(sorted(c1.stats.items()))}
        f["churn_text_changed"] = {u: _short_fate(c2, u) for u in site.churn_changed}
        rows[s] = f
    report(rows, site, crawls)
    total = time.perf_counter() - t_start
    print(f"total {total:.1f} s")
    if args.json:
        doc = {"pages": n, "seed": args.seed, "data": data, "base_url": server.base_url,
               "sources": {p.url: p.name for p in site.pages + site.fresh},
               "groups": site.groups, "replaced_sources": site.sources, "copies_of": site.copy_of,
               "churn": {"text_changed": site.churn_changed, "text_changed_beyond_digits": site.churn_changed_words,
                         "runs_changed": site.churn_runs},
               "settings": rows,
               "crawls": [{"setting": s, "crawl": k, "cmd": c.cmd, "seconds": round(c.seconds, 2), "rc": c.rc,
                           "error": c.error} for s in settings for k, c in sorted(crawls[s].items())],
               "seconds": round(total, 1)}
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1, ensure_ascii=False)
    if "n/a" in rows["update"]:
        print(f"the crawl with the default settings failed: {rows['update']['n/a']}", file=sys.stderr)
        return 1
    return 0


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)


def _short_fate(c: Crawl, url: str) -> str:
    how, rec = fate(c, url)
    return how if how != "dropped" else f"dropped/{rec.get('reason')}"


def report(rows: dict, site: Site, crawls: dict) -> None:
    print()
    print(table(rows, site.groups))
    print("unch = dropped as `unchanged`; self = dropped as an exact/near copy of its own URL; other = dropped "
          "otherwise, or never fetched;\n->source, ->updated = dropped as a copy of the page whose content it holds")
    for s, f in rows.items():
        if "n/a" in f:
            continue
        c1 = f["crawl1"]
        print(f"\n[{s}] crawl 1 kept {c1['kept']}/{c1['total']}")
        for d in c1["dropped"]:  # a page crawl 1 dropped is not in the index under its own URL
            print(f"    crawl 1 dropped {d['url']} as {d.get('reason')} of {d.get('duplicate_of')}")
        print(f"[{s}] crawl 2 stats: " + (", ".join(f"{k.split('/', 1)[1]}={v}" for k, v in f["stats"].items())
                                          or "none"))
        if f["churn_text_changed"]:
            fates: dict = {}
            for v in f["churn_text_changed"].values():
                fates[v] = fates.get(v, 0) + 1
            print(f"[{s}] churn pages whose extracted text changed ({len(f['churn_text_changed'])}): "
                  + ", ".join(f"{k} {v}" for k, v in sorted(fates.items())))
        if not f["failures"]:
            print(f"[{s}] no failures: every group did what the design says")
        for key, lst in f["failures"].items():
            print(f"[{s}] {key}: {len(lst)}")
            for e in lst[:3 if key.endswith("_self") else 5]:
                d = e["drop"] or {}
                print(f"    {e['url']}  {e['fate']}"
                      + (f"  reason={d.get('reason')} duplicate_of={d.get('duplicate_of')} "
                         f"similarity={d.get('similarity')}" if d else "")
                      + (f"  expected {e['expected_duplicate_of']}" if "expected_duplicate_of" in e else ""))
            if len(lst) > (3 if key.endswith("_self") else 5):
                print("    ... (all in --json)")
    print("\ncrawls:")
    for s, runs in crawls.items():
        for k, c in sorted(runs.items()):
            print(f"  [{s}] crawl {k}: {c.seconds:6.1f} s, {len(c.items)} items, {len(c.drops)} drop-log lines"
                  + (f", failed: {c.error}" if c.error else ""))


if __name__ == "__main__":
    sys.exit(main())
