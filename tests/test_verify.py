"""Each verifier against an exact computation on small texts; the seed methods end to end."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler_dedup import Deduplicator
from crawler_dedup.core.page.features import document_image, token_hashes
from crawler_dedup.core.page.sketch import sketch
from crawler_dedup.core.page.tokens import tokenize
from crawler_dedup.core.decide.verify import (
    Verifier,
    lcs_length,
    qgram_hashes,
    qgram_overlap,
    sketch_scores,
    swlr,
    swlr_prefilter,
)
from crawler_dedup.core.page.plugins import DocFrequencies
from crawler_dedup.exceptions import ConfigError
from crawler_dedup.stores import MemoryStore


def lcs_oracle(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
    return table[-1][-1]


@given(st.lists(st.integers(0, 6), max_size=40), st.lists(st.integers(0, 6), max_size=40))
def test_bit_parallel_lcs_equals_dynamic_programming(a, b):
    assert lcs_length(a, b) == lcs_oracle(a, b)


def test_swlr_is_lcs_over_mean_length():
    a = np.array([1, 2, 3, 4, 5, 6], np.uint64)
    b = np.array([1, 2, 9, 4, 5, 6, 7, 8], np.uint64)
    assert swlr(a, b) == 5 / 7  # LCS 1 2 4 5 6
    assert swlr(a, a[::-1]) == 1 / 6  # order matters, unlike resemblance
    assert swlr(a, np.empty(0, np.uint64)) == 0.0


@given(st.lists(st.integers(0, 5), min_size=1, max_size=30), st.lists(st.integers(0, 5), min_size=1, max_size=30),
       st.floats(0.05, 1.0))
def test_swlr_prefilter_never_rejects_a_pair_that_reaches_the_threshold(a, b, t):
    a, b = np.array(a, np.uint64), np.array(b, np.uint64)
    if swlr(a, b) >= t:
        assert swlr_prefilter(a, b, t)


def test_swlr_prefilter_rejects_disjoint_and_keeps_equal():
    a = np.arange(100, dtype=np.uint64) * np.uint64(7919)
    assert swlr_prefilter(a, a, 0.5)
    far = np.arange(100, dtype=np.uint64) * np.uint64(7919) + np.uint64(3)
    assert not swlr_prefilter(a, far, 0.9)


def test_qgram_overlap_is_exact_on_small_texts():
    ta, tb = tokenize("the cat sat"), tokenize("the cat sat down")
    ga, gb = qgram_hashes(ta), qgram_hashes(tb)
    grams = lambda t: {t[i : i + 4] for i in range(len(t) - 3)}  # noqa: E731
    exact = len(grams("the cat sat") & grams("the cat sat down")) / max(len(grams("the cat sat")),
                                                                         len(grams("the cat sat down")))
    assert ga.size == len(grams("the cat sat")) and gb.size == len(grams("the cat sat down"))
    assert qgram_overlap(sketch(ga), ga.size, sketch(gb), gb.size) == pytest.approx(exact)


def test_containment_is_exact_when_sets_fit_the_sketch():
    a = np.arange(40, dtype=np.uint64)
    b = np.arange(30, 100, dtype=np.uint64)  # |A∩B| = 10
    j, c = sketch_scores(sketch(a), a.size, sketch(b), b.size)
    assert j == pytest.approx(10 / 100) and c == pytest.approx(10 / 40)


def test_document_image_takes_top_words_per_part():
    df = DocFrequencies()
    common = tokenize("the and of to in")
    for _ in range(50):
        df.add(np.unique(token_hashes(common)))
    tokens = tokenize("the the the and of zebra to in quokka") * 3
    image = set(document_image(tokens, df.idf, chunk=100, top=2).tolist())
    assert image == set(token_hashes(["zebra", "quokka"]).tolist())


def test_doc_frequencies_persist_in_the_index(tmp_path, articles):
    path = str(tmp_path / "idx")
    with Deduplicator(dir=path, weighting="tfidf") as d:
        for i, (_, gold) in enumerate(articles[:5]):
            d.check(f"u{i}", text=gold)
        counts = d.features.df.counts.copy()
    with Deduplicator(dir=path, weighting="tfidf") as d:
        assert d.features.df.docs == 5 and np.array_equal(d.features.df.counts, counts)


@pytest.mark.parametrize("settings", [
    {}, {"verifier": "qgram", "threshold": 0.7}, {"verifier": "swlr"}, {"weighting": "tfidf"},
    {"features": "docimage"},
])
def test_every_method_drops_an_edited_copy_and_keeps_other_articles(settings, articles):
    d = Deduplicator(store=MemoryStore(), **settings).open()
    for i, (_, gold) in enumerate(articles[:8]):
        assert d.check(f"https://site/{i}", text=gold).action == "keep", (settings, i)
    words = articles[2][1].split(" ")
    words[len(words) // 2] = "edited"
    v = d.check("https://copy/2", text=" ".join(words))
    assert (v.action, v.duplicate_of) == ("drop", "https://site/2"), settings


def test_the_verifier_is_a_checked_setting():
    from crawler_dedup import DedupConfig
    from crawler_dedup.exceptions import ConfigError

    with pytest.raises(ConfigError, match="DEDUP_VERIFIER='lcs'.*resemblance, qgram, swlr"):
        DedupConfig.from_settings({"DEDUP_VERIFIER": "lcs"})
    with pytest.raises(ConfigError, match="DEDUP_FEATURES"):
        DedupConfig.from_settings({"DEDUP_FEATURES": "words"})


def test_batch_policy_keeps_the_longest_of_each_group(articles):
    from crawler_dedup import dedupe_batch

    gold = [a[1] for a in articles]
    short = " ".join(gold[0].split(" ")[: int(len(gold[0].split(" ")) * 0.8)])  # a truncated copy first
    pages = [("u/short", short), ("u/other", gold[1]), ("u/full", gold[0]), ("u/third", gold[2])]
    longest = dedupe_batch(pages)
    assert longest.keep == ["u/other", "u/full", "u/third"] and longest.drop == {"u/short": "u/full"}
    first = dedupe_batch(pages, keep="first")
    assert first.keep == ["u/short", "u/other", "u/third"] and first.drop == {"u/full": "u/short"}
    assert dedupe_batch(pages + [("u/full", gold[0])]).groups == longest.groups  # a repeated URL is one page
    with pytest.raises(ValueError, match="keep must be"):
        dedupe_batch(pages, keep="newest")


def test_conceptual_duplicates_are_flagged_not_dropped(articles):
    """Two outlets' write-ups of one story: textually different, close in LSI space."""
    from crawler_dedup.stores import MemoryStore

    d = Deduplicator(store=MemoryStore(), conceptual="flag", lsi_train=10, lsi_dims=8,
                     conceptual_threshold=0.8).open()
    golds = [a[1] for a in articles]
    for i, gold in enumerate(golds[:10]):
        d.check(f"https://site/{i}", text=gold)
    assert d.conceptual.lsi is not None  # fitted on the first 10 kept pages
    stored = d.index.read(lambda t: d.index.doc(t, 1))
    assert "lsi" in stored.extras  # training pages got their vectors
    # a rewrite: the same words of story 3, sentences reordered and every 4th word swapped
    sentences = golds[3].replace("\n", " ").split(". ")
    words = ". ".join(sentences[::-1]).split(" ")
    rewrite = " ".join("however" if i % 4 == 0 else w for i, w in enumerate(words))
    v = d.check("https://other/3", text=rewrite)
    assert (v.action, v.reason, v.duplicate_of) == ("flag", "conceptual", "https://site/3"), v
    assert v.similarity >= 0.8
    assert d.index.read(lambda t: t.doc_count()) == 11  # flagged, and kept


class NeverVerifier:
    """A verifier of one's own, written in a test module: no candidate is ever alike."""

    name = "never"

    def keep(self, tokens, features):
        return {}

    def score(self, fp, doc, config):
        return 0.0, 0.0


class AlwaysVerifier(NeverVerifier):
    name = "always"

    def score(self, fp, doc, config):
        return 1.0, 0.0


def test_a_verifier_of_ones_own_is_selected_by_dotted_path(plain_model):
    text = "the harbour board approved the dredging plan after a long debate on costs and wildlife " * 8
    edited = text.replace("long", "short", 1)  # a near copy: a candidate the verifier decides on
    outcomes = {}
    for verifier in ("resemblance", "tests.test_verify.NeverVerifier", "tests.test_verify.AlwaysVerifier"):
        with Deduplicator(backend="memory", verifier=verifier, model=plain_model) as d:
            assert d.check("https://a/1", text=text).action == "keep"
            v = d.check("https://b/1", text=edited)
            outcomes[verifier.rsplit(".", 1)[-1]] = (v.action, v.measure)
    assert outcomes == {"resemblance": ("drop", "resemblance"), "NeverVerifier": ("keep", None),
                        "AlwaysVerifier": ("drop", "always")}
    with pytest.raises(ConfigError, match="importable Verifier class"):
        Deduplicator(backend="memory", verifier="tests.test_verify.NoSuchVerifier")


def test_document_frequencies_saved_in_an_aborted_transaction_stay_unsaved(monkeypatch):
    from types import SimpleNamespace

    from crawler_dedup.core.page import plugins
    from crawler_dedup.core.page.plugins import TfIdfShingles

    monkeypatch.setattr(plugins, "SAVE_EVERY", 2)
    plugin, meta = TfIdfShingles(), {}
    txn = SimpleNamespace(meta_get=meta.get, meta_put=meta.__setitem__)
    page = SimpleNamespace(df_keys=np.array([1 << 60, 2 << 60, 3 << 60], dtype=np.uint64))
    plugin.start()
    plugin.kept(None, txn, 1, page)
    plugin.end(committed=True)
    plugin.start()
    plugin.kept(None, txn, 2, page)  # the second unsaved page: saved inside this transaction ...
    assert plugin.df._unsaved == 0
    plugin.end(committed=False)  # ... which aborted: the save never landed
    assert (plugin.df.docs, plugin.df._unsaved) == (1, 1) and plugin.unsaved()


class Unnamed(Verifier):
    """Inherits the default's name: its scores would be logged as `resemblance`."""


def test_a_verifier_of_ones_own_needs_a_name_of_its_own():
    with pytest.raises(ConfigError, match="a `name` of its own"):
        Deduplicator(backend="memory", verifier="tests.test_verify.Unnamed")


def test_compare_scores_with_a_verifier_of_ones_own_too(tmp_path):
    from .conftest import ROOT, cli

    text = "the harbour board approved the dredging plan after a long debate on costs and wildlife " * 8
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(text, encoding="utf-8")
    b.write_text(text.replace("long", "short", 1), encoding="utf-8")
    proc = cli("compare", a, b, "-s", "DEDUP_VERIFIER=tests.test_verify.NeverVerifier", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "   never 0.000" in proc.stdout and "B kept: not a duplicate of A" in proc.stdout
    proc = cli("compare", a, b, "-s", "DEDUP_VERIFIER=tests.test_verify.Missing", cwd=ROOT)
    assert proc.returncode == 2 and "importable Verifier class" in proc.stderr and "Traceback" not in proc.stderr
