"""The real pages the benchmarks read: one loader of ../shared/data (its README.md says what each
set is), and of the demo pages bundled with the package where the data is absent.

- data_dir(): the shared data folder beside the checkout (<repo>/../shared/data);
- real_pages(limit, distinct=...): pages as bytes, for speed, crawls and servers (speed.py,
  killtest.py, memory.py);
- reference_pages(data, ...): the pages that come with a reference main text, in a fixed order
  (stream.py's bases, hence realcopies.py, scan.py and decisions.py; recrawl's candidates);
- aeb_gold(data): the article-extraction-benchmark's human texts (memory.py's sentences);
- newspaper_html(data, snapshot): a newspaper-testpages snapshot's pages (realcopies.py's natural
  copies);
- demo_pages(), demo_texts(): the bundled demo articles (real_pages without the data;
  redis_backend.py's texts).

What a benchmark makes of the pages (variants, copies, servers) stays in the benchmark. The page
sets and their order are what the recorded figures and benchmarks/decisions.json.gz were made
from: a change here changes them.
"""

from __future__ import annotations

import glob
import gzip
import html as htmllib
import json
import os
import re
from dataclasses import dataclass
from typing import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

AEB = "article-extraction-benchmark"
NEWSPAPER = "newspaper-testpages"
NEWSPAPER_TEXT = {"old-79553f6": "text", "head": "txt"}  # snapshot -> its folder of expected texts
READABILITY = os.path.join("readability-test-pages", "test", "test-pages")


def data_dir() -> str:
    """The shared data folder: ../shared/data beside the checkout."""
    return os.path.normpath(os.path.join(ROOT, "..", "shared", "data"))


def _gunzip(path: str) -> bytes:
    with gzip.open(path) as fh:
        return fh.read()


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _text(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


# -- pages as bytes ----------------------------------------------------------------------------

def real_pages(limit: int, distinct: bool = False, data: str | None = None) -> list[bytes]:
    """`limit` real pages: the article-extraction-benchmark's, repeated to fill; `distinct`: no
    page twice (the readability and newspaper test pages added, up to what there is), so that no
    crawl of them meets a byte-identical copy (which the fast path decides without extraction).
    Without the data: the bundled demo pages, the same way."""
    data = data or data_dir()
    pages = [_gunzip(f) for f in sorted(glob.glob(os.path.join(data, AEB, "html", "*.html.gz")))]
    if distinct:
        more = sorted(glob.glob(os.path.join(data, READABILITY, "*", "source.html"))
                      + glob.glob(os.path.join(data, NEWSPAPER, "old-79553f6", "tests", "data", "html", "*.html")))
        pages += [_read(f) for f in more]
        seen: set[bytes] = set()
        pages = [p for p in pages if not (p in seen or seen.add(p))]  # type: ignore[func-returns-value]
    if not pages:
        pages = demo_pages()
    if distinct:
        return pages[:limit]
    return (pages * (limit // len(pages) + 1))[:limit]


def _demo_manifest():
    from importlib import resources

    root = resources.files("crawler_dedup.demo") / "pages"
    return root, json.loads((root / "manifest.json").read_text(encoding="utf-8"))


def demo_pages() -> list[bytes]:
    """The HTML of the demo's articles (bundled with the package)."""
    root, manifest = _demo_manifest()
    return [gzip.decompress((root / a["file"]).read_bytes()) for a in manifest["articles"]]


def demo_texts() -> list[str]:
    """The demo's texts: each article's body, then each text's."""
    _, manifest = _demo_manifest()
    return [a["body"] for a in manifest["articles"]] + [t["body"] for t in manifest["texts"]]


# -- pages with a reference text ---------------------------------------------------------------

def strip_tags(markup: str) -> str:
    """The text of an HTML fragment by regular expressions: scripts and styles out, a line break
    for each block's end (stream.py's bases: the regression record was made with it)."""
    markup = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", markup)
    markup = re.sub(r"(?i)</(p|div|li|h\d|br|tr)>|<br\s*/?>", "\n", markup)
    return htmllib.unescape(re.sub(r"<[^>]+>", " ", markup))


def text_content(markup: str) -> str:
    """The text of an HTML fragment as lxml gives it (recrawl's candidates), tags cut out by a
    regular expression where lxml cannot parse it."""
    import lxml.html

    try:
        return lxml.html.fromstring(markup).text_content()
    except Exception:
        return re.sub(r"<[^>]+>", " ", markup)


@dataclass
class RefPage:
    set: str       # "aeb", "newspaper" or "readability"
    key: str       # aeb: its ground-truth key; newspaper: the file's stem; readability: the folder's name
    html: bytes    # the page as stored
    text: str      # its reference main text
    url: str = ""  # where it was fetched from (aeb only)
    snapshot: str = ""  # newspaper: "old-79553f6" or "head"


def aeb_gold(data: str | None = None) -> dict:
    """The article-extraction-benchmark's ground-truth.json: {key: {"url", "articleBody", ...}};
    {} when absent."""
    path = os.path.join(data or data_dir(), AEB, "ground-truth.json")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def newspaper_html(data: str, snapshot: str) -> list[tuple[str, str]]:
    """(stem, path) of the pages of a newspaper-testpages snapshot, by file name; [] when absent."""
    folder = os.path.join(data, NEWSPAPER, snapshot, "tests", "data", "html")
    if not os.path.isdir(folder):
        return []
    return [(name[: -len(".html")], os.path.join(folder, name)) for name in sorted(os.listdir(folder))
            if name.endswith(".html")]


def reference_pages(data: str | None = None, *, expected: Callable[[str], str],
                    newspaper: tuple[str, ...] = ("old-79553f6",)) -> list[RefPage]:
    """Every page that comes with a reference main text, in a fixed order: the
    article-extraction-benchmark's (human gold text, by key), then each newspaper-testpages
    snapshot's of `newspaper` (their expected text, by file name), then the readability test
    pages' (`expected` of their expected.html, by folder name: strip_tags or text_content); none
    of a set that is absent."""
    data = data or data_dir()
    out: list[RefPage] = []
    gold = aeb_gold(data)
    for key in sorted(gold):
        path = os.path.join(data, AEB, "html", key + ".html.gz")
        if os.path.exists(path):
            out.append(RefPage("aeb", key, _gunzip(path), gold[key]["articleBody"],
                               url=gold[key].get("url", "")))
    for snapshot in newspaper:
        texts = os.path.join(data, NEWSPAPER, snapshot, "tests", "data", NEWSPAPER_TEXT[snapshot])
        for stem, path in newspaper_html(data, snapshot):
            txt = os.path.join(texts, stem + ".txt")
            if os.path.exists(txt):
                out.append(RefPage("newspaper", stem, _read(path), _text(txt), snapshot=snapshot))
    rdb = os.path.join(data, READABILITY)
    if os.path.isdir(rdb):
        for name in sorted(os.listdir(rdb)):
            src, exp = os.path.join(rdb, name, "source.html"), os.path.join(rdb, name, "expected.html")
            if os.path.exists(src) and os.path.exists(exp):
                out.append(RefPage("readability", name, _read(src), expected(_text(exp))))
    return out
