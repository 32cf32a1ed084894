"""The site of benchmarks/recrawl.py: the real pages chosen for it, and the changes crawl 2 meets
(the groups of recrawl.py's docstring), made deterministically from a random source.
"""

from __future__ import annotations

import os
import random
import re
import sys
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pages import reference_pages, text_content  # noqa: E402

MIN_WORDS = 100


# -- the pages ---------------------------------------------------------------------------------

@dataclass
class Page:
    name: str      # where it comes from, e.g. aeb/042bb7b5fe
    html: str
    gold: str      # reference main text (human gold for aeb; the sets' expected text otherwise)
    text: str = ""  # trafilatura's text of the page as served (crawler_dedup.core.page.extract)
    url: str = ""


def load_candidates(data: str) -> list[Page]:
    """Every page with a reference text (benchmarks/pages.py), in a fixed order (source, then file
    name): newspaper's old-79553f6 and head snapshots both (the same page in both is caught by
    the near-duplicate filter), readability's expected text as lxml reads it."""
    name = {"aeb": lambda p: f"aeb/{p.key[:10]}", "newspaper": lambda p: f"np-{p.snapshot[:3]}/{p.key}",
            "readability": lambda p: f"rd/{p.key}"}
    return [Page(name[p.set](p), _decode(p.html), p.text)
            for p in reference_pages(data, expected=text_content, newspaper=("old-79553f6", "head"))]


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
    from crawler_dedup import Deduplicator
    from crawler_dedup.core.page.extract import extract

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
            if v.action != "keep" or v.skipped or v.scored_apart or v.error:
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
    from crawler_dedup.core.page.extract import extract

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
    from crawler_dedup.core.page.extract import extract

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
    """Crawl 2's site: the groups of recrawl.py's docstring, each edit checked where it can fail."""
    from crawler_dedup.core.page.extract import extract

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
