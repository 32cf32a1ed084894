"""Steps 1-4 for one page: extract, tokenize, features, simhash and sketch -> `Fingerprinted`.

Plain functions of the page and the settings (and, for the paper plugins that learn from kept
pages, their state), so they also run in worker processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .boilerplate import looks_like_notice, template_keys
from .extract import extract
from .features import content_hash, shingles
from .plugins import NoConceptual, Shingles, feature_plugin, is_pure
from .simhash import simhash
from .site import lines_of
from .sketch import SKETCH_SIZE
from .tokens import tokenize
from .visible import main_shingles, page_view
from ..verdict import Skip, Step


class Keeps(Protocol):
    """What a fingerprint takes from the verifier chosen above it (decide/verify.Verifier): what a
    page keeps for it to score against later."""

    name: str

    def keep(self, tokens: list[str], features: np.ndarray) -> dict[str, bytes]: ...


@dataclass
class Fingerprinted:
    text: str
    title: str | None
    tokens: int
    fingerprint: int
    sketch: np.ndarray
    digest: bytes
    shingles: int = 0
    extras: dict = field(default_factory=dict)  # what the verifier keeps per page
    df_keys: np.ndarray | None = None  # what a kept page adds to the document frequencies
    terms: tuple | None = None  # (bucket ids, log tf) for the LSI model
    template: np.ndarray | None = None  # keys of the lines shown outside the text (boilerplate.py)
    body: bytes | None = None  # the digest of the response's bytes (filed with a kept page)
    lines: Any = None  # its lines under its site (sitelines.Lines), when a worker found them
    view: Any = None  # what the page shows beside its main text (visible.PageView), DEDUP_VISIBLE_CONTAINMENT
    known: bool = False  # steps 1-4 came from a kept page with these very bytes (Deduplicator.known): no view needed
    not_modified: bool = False  # steps 1-4 came from the URL's kept page: its server answered 304 (fetches.py)
    copy_reason: str | None = None  # a known copy's 304: how it was dropped when last downloaded (exact, near)
    copy_named: bool = False  # and whether it named the page it copies as its rel=canonical then
    bodiless: bool = False  # a 304 with no copy of the page: passing it on asks it again in full
    measured: dict = field(default_factory=dict, repr=False, compare=False)  # (decide/measures.py) once a kept page


def extract_step(html, url: str, max_bytes: int, mode: str = "thorough") -> tuple[Step, object, str | None]:
    """Step 1: (TEXT, text, title), (SKIPPED, Skip, None) or (ERROR, exception, None)."""
    kind, value, title, _ = extract_parsed(html, url, max_bytes, mode)
    return kind, value, title


def extract_parsed(html, url: str, max_bytes: int, mode: str = "thorough") -> tuple[Step, object, str | None, Any]:
    """extract_step, and the page's parse (an lxml tree, or None) for its view: one parse a page."""
    if not html:
        return Step.SKIPPED, Skip.EMPTY, None, None
    if not isinstance(html, (str, bytes, bytearray)):
        return Step.SKIPPED, Skip.BAD_INPUT, None, None
    if len(html) > max_bytes:
        return Step.SKIPPED, Skip.TOO_LARGE, None, None
    try:
        extracted = extract(bytes(html) if isinstance(html, bytearray) else html, url, mode)
    except Exception as exc:  # trafilatura/lxml on hostile markup: keep the page
        return Step.ERROR, exc, None, None
    if extracted is None:
        return Step.SKIPPED, Skip.NO_TEXT, None, None
    return Step.TEXT, extracted.text, extracted.title, extracted.tree


def fingerprint(text: str, config, features: Shingles, verifier: Keeps,
                conceptual: NoConceptual = NoConceptual(), tokens: list[str] | None = None) -> Fingerprinted | Skip:
    """Steps 2-4, or why the text is not checked (too short, a notice). `tokens`: the text's, if made already."""
    tokens = tokenize(text) if tokens is None else tokens
    if len(tokens) < config.min_tokens:
        return Skip.TOO_SHORT
    if looks_like_notice(tokens):
        return Skip.NOTICE
    word_shingles = shingles(tokens, config.shingle)
    values, weights, df_keys = features.features(tokens, word_shingles)
    distinct = np.unique(values)
    fp = Fingerprinted(
        text=text, title=None, tokens=len(tokens), fingerprint=simhash(values, weights),
        sketch=distinct[:SKETCH_SIZE].copy(), digest=content_hash(tokens), shingles=int(distinct.size),
        extras=verifier.keep(tokens, word_shingles), df_keys=df_keys,
    )
    conceptual.describe(tokens, fp)
    return fp


_WORKER_PLUGINS: dict = {}


def fingerprint_html(html, url: str, config, verifier: Keeps) -> tuple[Step, object, str | None]:
    """Steps 1-4 in a worker process: like extract_step, but (FINGERPRINT, Fingerprinted or the
    Skip, title) when the fingerprint depends on the text alone (plugins.is_pure); otherwise the
    text comes back, to be fingerprinted where the pages kept before are known. `verifier`: the
    one DEDUP_VERIFIER names (decide/verify.make_verifier), chosen by the caller."""
    kind, value, title, tree = extract_parsed(html, url, config.max_bytes, config.extract_mode)
    if kind != Step.TEXT or not is_pure(config):
        return kind, value, title
    key = (config.features, config.weighting)
    features = _WORKER_PLUGINS.get(key) or _WORKER_PLUGINS.setdefault(key, feature_plugin(config))
    try:
        tokens = tokenize(str(value))  # once, for the fingerprint and the view
        fp = fingerprint(str(value), config, features, verifier, tokens=tokens)
        if isinstance(fp, Fingerprinted) and config.boilerplate:
            fp.template = template_keys(html, fp.text)
        if isinstance(fp, Fingerprinted) and config.site_boilerplate and config.store_text:
            fp.lines = lines_of(fp.text, url, title)  # (the crawler's thread keeps only the lookup)
        if isinstance(fp, Fingerprinted) and config.visible_containment:
            fp.view = page_view(html, fp.text, main=main_shingles(tokens), tree=tree)
        return Step.FINGERPRINT, fp, title
    except Exception:  # decided in the crawler process instead, where a failure is counted
        return kind, value, title


def body_digest(raw: bytes | bytearray | memoryview) -> bytes:
    """The fast path's key: 16 bytes of xxh3-128 of a response's bytes (about 10 us for 100 KB)."""
    import xxhash

    return xxhash.xxh3_128_digest(raw)


def fp_hex(fp: int | None) -> str | None:
    return None if fp is None else f"{fp:016x}"
