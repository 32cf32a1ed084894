"""A title part that recurs across a site's pages (its name, a section) is not a headline: the
index learns those parts as it learns the site's lines (page/site.title_part_keys,
decide/sitelines.SitePage.site_parts), and the title measurements leave them out. Real titles."""

import pytest

from crawler_dedup import Deduplicator
from crawler_dedup.core.page.title import titles

# real titles of different pages of one host (the dev split's, and a shop's), sharing the site's name
SAME_HOST_PAGES = [
    ("Running Shoes | REI Co-op", "Hiking Boots | REI Co-op"),
    ("Managing dependencies - The Go Programming Language", "Defer, Panic, and Recover - The Go Programming Language"),
    ("Fair Trade & Organic Coffee – Death Wish Coffee", "Coffee Gift Sets – Death Wish Coffee"),
    ("Sheets for Every Bed | Soft & Durable | Brooklinen", "Duvet Covers | Soft & Durable | Brooklinen"),
    ("Tomato Sauce Recipes | Serious Eats", "The Best Pizza Dough | Serious Eats"),
]
# real titles of one story on two sites (the dev split's syndicated copies)
ONE_STORY = [
    ("Xbox Boss Teases E3 Plans - GameSpot", "Xbox Boss Teases E3 Plans | Wire"),
    ("CNN.com - Rita batters Louisiana, Texas coasts - Sep 24, 2005", "Rita batters Louisiana, Texas coasts | News"),
    ("Which Qt6 version for Ubuntu 24.04 | Qt Forum", "Which Qt6 version for Ubuntu 24.04 | Online"),
    ("Tips for Sleep Training Your Toddler", "Tips for Sleep Training Your Toddler (print)"),
]
TEXT = ("The council met on Tuesday evening to debate the plan for the new library, which would replace the "
        "old building on Main Street with a larger one that has rooms for classes and a garden. ")


@pytest.mark.parametrize("a, b", SAME_HOST_PAGES)
def test_two_pages_of_a_site_sharing_its_name_have_two_headlines(a, b):
    """Before the index knows the site's name: a part both titles carry beside parts of their own is it."""
    headline, words, _ = titles(a, b, same_site=True)
    assert headline is not None and headline < 0.5, (a, b, headline)
    assert words is not None and words < 0.5


@pytest.mark.parametrize("a, b", ONE_STORY)
def test_one_story_under_two_sites_names_is_one_headline(a, b):
    assert titles(a, b)[0] == 1.0


def _pair_measures(dedup: Deduplicator, url: str, title: str, kept_url: str) -> dict:
    seen = []
    dedup.observe = lambda page, weighed: seen.extend(w for w in weighed if w.doc.url == kept_url)
    dedup.check(url, text=TEXT * 4, title=title)
    assert seen, "the pair was weighed"
    return seen[0].measures


def test_the_site_names_are_learned_from_the_index_and_left_out(tmp_path):
    """One host serving two sites' pages (a mirror): once the index holds other pages of each,
    "GameSpot" and "Wire" are known as site names and the story's copy keeps its headline match;
    before that, two titles of one host sharing only the story's words beside parts of their own
    read as one site's name over two headlines."""
    copy = ("https://mirror.example/wire/xbox", "Xbox Boss Teases E3 Plans | Wire")
    kept = ("https://mirror.example/gamespot/xbox", "Xbox Boss Teases E3 Plans - GameSpot")
    with Deduplicator(dir=str(tmp_path / "fresh")) as dedup:
        dedup.check(kept[0], text=TEXT * 4, title=kept[1])
        assert _pair_measures(dedup, *copy, kept[0])["title"] == 0.0
    with Deduplicator(dir=str(tmp_path / "index")) as dedup:
        for i, story in enumerate(["New console prices announced", "Studio closes after layoffs",
                                   "Handheld sales beat forecasts"]):
            for site, sep in (("GameSpot", " - "), ("Wire", " | ")):
                dedup.check(f"https://mirror.example/{site.lower()}/{i}", text=f"{story} {site}. " + TEXT.replace(
                    "library", f"{story} {site}") * 3, title=f"{story}{sep}{site}")
        dedup.check(kept[0], text=TEXT * 4, title=kept[1])
        m = _pair_measures(dedup, *copy, kept[0])
        assert m["title"] == 1.0 and m["title_words"] == 1.0


def test_a_headline_repeated_under_the_same_title_is_not_a_site_name(tmp_path):
    """Copies of one story kept under one title (a page and its copies on one host) carry its
    headline on several pages: that is no site name, and a further copy keeps its headline match."""
    with Deduplicator(dir=str(tmp_path / "index")) as dedup:
        for i in range(3):  # the story kept three times (say, under DEDUP_ALLOW), one title
            dedup.check(f"https://news.example/a{i}", text=f"Edition {i}. " + TEXT * 3,
                        title="Storm hits the coast overnight | Daily News", never_drop=True)
        m = _pair_measures(dedup, "https://news.example/print", "Storm hits the coast overnight (print)",
                           "https://news.example/a0")
        assert m["title"] == 1.0
