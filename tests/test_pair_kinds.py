"""Pairs of the kinds a copy-or-not decision gets wrong, decided by the shipped score: built from the
bundled real articles in realistic templates (benchmarks/pair_kinds.py), each page with the outcome
it must have. Each kind is decided by which way its measurements point, never by a word count:
the banner's quote is kept at every length and wherever its cut falls."""

import json
import os
import sys
from importlib import resources

import pytest

from .conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from pair_kinds import KINDS, _title_part, decide, make_stream, paragraphs  # noqa: E402


@pytest.fixture(scope="module")
def texts():
    root = resources.files("crawler_dedup.demo") / "pages"
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    out = []
    for article in manifest["articles"]:
        paras = [p for p in paragraphs(article["body"]) if len(p.split()) >= 8]
        headline = _title_part(article["title"])
        if headline and len(paras) >= 4 and sum(len(p.split()) for p in paras) >= 250:
            out.append((headline, paras))
    assert len(out) >= 12
    return out


def _wrong(stream, verdicts):
    return [(p.kind, p.url, p.expect, "drop" if v.would_drop else "keep", v.duplicate_of)
            for p, v in zip(stream, verdicts) if p.kind != "filler" and p.expect != ("drop" if v.would_drop else "keep")]


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_is_decided_right(texts, kind):
    for seed in (1, 2):
        stream = make_stream(texts, per_kind=1, seed=seed, kinds=(kind,))
        assert any(p.kind == kind for p in stream)
        assert not _wrong(stream, decide(stream)), kind


@pytest.mark.parametrize("cut", ["30", "90", "180", "299", "301", "450", "end-1", "end", "end+1"])
def test_a_banner_quoting_an_article_is_kept_wherever_its_quote_stops(texts, cut):
    """The shop page whose promo banner carries an article's first N words, the article before or
    after it: kept for every N, at a paragraph's end, one word before it, and past 300 words."""
    for order in ("article first", "shop first"):
        stream = make_stream(texts, per_kind=1, seed=3, kinds=("banner",), banner_cut=cut,
                             banner_first=order == "shop first")
        banner = [p for p in stream if p.kind == "banner"]
        assert len(banner) == 2
        assert not _wrong(stream, decide(stream)), (cut, order)
