import numpy as np
import xxhash
from hypothesis import given
from hypothesis import strategies as st

from crawler_dedup.core.page.features import content_hash, shingles, token_hashes
from crawler_dedup.core.page.tokens import tokenize


def test_tokenize_normalizes_case_width_and_punctuation():
    assert tokenize("Hello, WORLD! Ｆｕｌｌ-width ﬁne") == ["hello", "world", "full", "width", "fine"]


def test_tokenize_splits_cjk_per_character_and_keeps_latin_words():
    assert tokenize("東京タワー is 333m") == ["東", "京", "タ", "ワ", "ー", "is", "333m"]


def test_tokenize_casefolds_german_sharp_s():
    assert tokenize("STRASSE straße") == ["strasse", "strasse"]


def test_token_hashes_are_xxh3_of_utf8():
    assert token_hashes(["a", "ü"]).tolist() == [xxhash.xxh3_64_intdigest(b"a"), xxhash.xxh3_64_intdigest("ü".encode())]


def test_shingles_count_and_order_sensitivity():
    words = "the quick brown fox jumps over the lazy dog".split()
    sh = shingles(words, 3)
    assert sh.dtype == np.uint64 and sh.size == len(words) - 2
    # same multiset of words, other order: other shingles
    assert set(shingles(words[::-1], 3).tolist()).isdisjoint(sh.tolist())
    # the same 3 words anywhere give the same shingle hash
    assert shingles(["x", "quick", "brown", "fox"], 3)[1] == sh[1]


def test_short_text_is_one_shingle_and_empty_is_none():
    assert shingles(["a", "b"], 3).size == 1
    assert shingles([], 3).size == 0


@given(st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=3, max_size=30))
def test_shingle_equality_iff_same_word_triples(words):
    sh = shingles(words, 3).tolist()
    triples = [tuple(words[i : i + 3]) for i in range(len(words) - 2)]
    for i in range(len(triples)):
        for j in range(len(triples)):
            assert (sh[i] == sh[j]) == (triples[i] == triples[j])


def test_content_hash_ignores_markup_whitespace_and_case():
    assert content_hash(tokenize("Hello   world.\n")) == content_hash(tokenize("hello WORLD"))
    assert content_hash(tokenize("hello world")) != content_hash(tokenize("world hello"))


def test_tokenize_keeps_indic_words_whole_and_splits_thai_per_character():
    assert tokenize("नई दिल्ली में सोमवार") == ["नई", "दिल्ली", "में", "सोमवार"]
    assert tokenize("कि की के का") == ["कि", "की", "के", "का"]  # vowel signs stay in their word
    assert tokenize("ภาษา ok") == ["ภ", "า", "ษ", "า", "ok"]


@given(st.text(alphabet=st.sampled_from(list("ab_ 1é\u0301\u093f\u0915東タ\u0e01\uac00-.,\u00a0ﬁＡ")), max_size=60))
def test_fast_tokenizer_equals_the_reference_pattern(text):
    import unicodedata

    from crawler_dedup.core.page.tokens import _TOKEN

    assert tokenize(text) == _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())


def test_token_hash_cache_gives_the_same_hashes():
    words = ["alpha", "beta", "alpha", "gamma"]
    first = token_hashes(words)
    assert token_hashes(words).tolist() == first.tolist()
    assert first.tolist() == [xxhash.xxh3_64_intdigest(w.encode()) for w in words]
