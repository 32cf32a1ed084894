"""Where a page belongs: its site (registered domain), its URL's canonical form, and the keys it
is filed under there: the lines of its extracted text (site boilerplate, decide/sitelines.py
compares on them) and its headline. Facts of the page alone; the index files them, the rules
weigh them.

Lines: each kept page files the lines of its extracted text under its site and its canonical URL
(seed 004: text repeated across a host's pages says nothing about the page). A line's key is its
words, casefolded, hashed with the site as seed. The parts of its title are filed the same way: a
part that other pages of the site carry too is the site's name or a section, not a headline.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import numpy as np
import xxhash
from w3lib.url import canonicalize_url

from .features import shingles
from .title import title_words
from .tokens import tokenize

MIN_WORDS = 5  # lines shorter than this (a menu entry, "Share") are never filed, so never boilerplate
MAX_LINES = 400  # lines of a page filed and looked up at most (a huge extraction: its first ones)
HEADLINE_WORDS = 3  # a title of fewer words is no headline (a site's name, "Home")


@functools.lru_cache(maxsize=4096)  # a page's URL is looked up, then filed: canonicalized once (~25 us)
def canonical_url(url: str) -> str:
    """The URL as Scrapy's request fingerprint sees it: query sorted, fragment dropped, escapes
    normalized. Two URLs with the same canonical form are one page."""
    try:
        return canonicalize_url(url, keep_fragments=False)
    except (ValueError, UnicodeError, TypeError):  # a URL w3lib cannot parse stays as it is
        return url


@functools.lru_cache(maxsize=1)
def _public_suffixes():
    import tldextract

    # the list shipped with tldextract (no download), private suffixes too: two blogs on
    # blogspot.com are two sites
    return tldextract.TLDExtract(suffix_list_urls=(), include_psl_private_domains=True)


@functools.lru_cache(maxsize=65536)
def _domain_of_host(host: str) -> str:
    return _public_suffixes()(host).top_domain_under_public_suffix or host.removeprefix("www.")  # (no known suffix)


def registered_domain(url: str | None) -> str | None:
    if not url:
        return None
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return _domain_of_host(host) if host else None


def same_site(url: str | None, other_url: str | None) -> bool:
    """Both URLs under one registered domain."""
    a, b = registered_domain(url), registered_domain(other_url)
    return a is not None and a == b


@dataclass
class Lines:
    """A text cut into lines: each line, its words, and its key under its site (None: too short to file)."""

    texts: list[str]
    words: list[int]
    keys: list[bytes | None]
    parts: list[bytes] = field(default_factory=list)  # its title's parts' keys (title_part_keys)
    _shingled: tuple | None = None  # (w, line word counts, shingles, the line of each shingle)

    @property
    def filed(self) -> list[bytes]:
        return list(dict.fromkeys([*(k for k in self.keys if k is not None), *self.parts]))

    def shingled(self, w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(each line's tokens, the text's word shingles, the line each shingle starts in), once."""
        if self._shingled is None or self._shingled[0] != w:
            counts, tokens = [], []
            for text in self.texts:
                toks = tokenize(text)
                counts.append(len(toks))
                tokens.extend(toks)
            sh = shingles(tokens, w) if tokens else np.empty(0, np.uint64)
            line_of = np.repeat(np.arange(len(counts)), counts)[: sh.size] if tokens else np.empty(0, np.int64)
            self._shingled = (w, np.array(counts, dtype=np.int64), sh, line_of)
        return self._shingled[1], self._shingled[2], self._shingled[3]

    def rest(self, boilerplate: set[bytes], w: int) -> tuple[int, np.ndarray]:
        """The words and distinct word shingles of the lines that are not boilerplate."""
        counts, sh, line_of = self.shingled(w)
        keep = np.array([key is None or key not in boilerplate for key in self.keys], dtype=bool)
        words = int(counts[keep].sum()) if keep.size else 0
        return words, (np.unique(sh[keep[line_of]]) if sh.size else sh)


def site_seed(url: str | None) -> int | None:
    site = registered_domain(url)
    return None if site is None else xxhash.xxh64_intdigest(site.encode("utf-8", "surrogatepass"))


def lines_of(text: str, url: str | None, title: str | None = None) -> Lines | None:
    """The lines of an extracted text and their keys under the URL's site, with its title's
    parts' keys (title_part_keys); None without a site. A line's key is its words, casefolded:
    boilerplate repeats verbatim, so no finer normalization is needed (this runs on every page)."""
    seed = site_seed(url)
    if seed is None:
        return None
    texts: list[str] = []
    words: list[int] = []
    keys: list[bytes | None] = []
    digest = xxhash.xxh64_digest
    for line in text.splitlines():
        parts = line.casefold().split()
        if not parts:
            continue
        texts.append(line)
        words.append(len(parts))
        filed = len(parts) >= MIN_WORDS and len(keys) < MAX_LINES
        keys.append(digest(" ".join(parts).encode("utf-8", "surrogatepass"), seed=seed) if filed else None)
    title_parts, whole = title_part_keys(url, title, seed)
    return Lines(texts, words, keys, [key for _, key in title_parts] + ([whole] if whole is not None else []))


def title_part_keys(url: str | None, title: str | None,
                    seed: int | None = None) -> tuple[list[tuple[frozenset[str], bytes]], bytes | None]:
    """((words, key) of each part of the title (page/title.title_parts), the whole title's key)
    under the URL's site: the keys a kept page files its title under beside its lines, so that the
    parts other pages of its site carry under other titles (its name, a section) are known
    (decide/sitelines.SitePage.site_parts)."""
    seed = site_seed(url) if seed is None else seed
    if not title or seed is None:
        return [], None
    out = {}
    ordered = title_words(title)
    for words in ordered:
        out[frozenset(words)] = digest_part(words, seed)
    if not ordered:
        return [], None
    whole = xxhash.xxh64_digest(("\x1fT " + " | ".join(" ".join(p) for p in ordered)).encode("utf-8", "surrogatepass"),
                                seed=seed)
    return list(out.items()), whole


def digest_part(words: list[str], seed: int) -> bytes:
    """A title part's key: its distinct words (as title_parts compares parts), marked apart from lines."""
    return xxhash.xxh64_digest(("\x1ft " + " ".join(sorted(set(words)))).encode("utf-8", "surrogatepass"), seed=seed)


def holder_of(url: str | None) -> int:
    """What a kept page's lines are filed under: its canonical URL, so an update of a page never
    makes its own lines boilerplate, and its lines leave with it."""
    return xxhash.xxh64_intdigest(canonical_url(url or "").encode("utf-8", "surrogatepass"))


def _headline(title: str | None) -> str | None:
    words = (title or "").casefold().split()
    return " ".join(words) if len(words) >= HEADLINE_WORDS else None


def title_key(url: str | None, title: str | None) -> bytes | None:
    """The key a kept page is filed under in the index's `titles` table: its site and headline
    (None for a title of fewer than HEADLINE_WORDS words or a page without a site)."""
    headline, seed = _headline(title), site_seed(url)
    if headline is None or seed is None:
        return None
    return xxhash.xxh64_digest(headline.encode("utf-8", "surrogatepass"), seed=seed)
