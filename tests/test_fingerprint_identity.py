"""The fast tokenizer, token hashes, shingles, simhash and notice guard give, bit for bit, what the
straightforward code they replaced gave (copied here as the oracle): stored indexes depend on it."""

import glob
import gzip
import os
import re
import tempfile
import unicodedata
import warnings

import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler_dedup.config import DedupConfig
from crawler_dedup.core.page import boilerplate as notices
from crawler_dedup.core.page import features
from crawler_dedup.core.page import simhash as simhash_mod
from crawler_dedup.core.page import tokens as tokens_mod
from crawler_dedup import Deduplicator
from crawler_dedup.core.dedup import Fingerprinted
from crawler_dedup.core.page.features import content_hash, shingles, token_hashes
from crawler_dedup.core.page.boilerplate import looks_like_notice
from crawler_dedup.core.page.simhash import simhash
from crawler_dedup.core.page.sketch import SKETCH_SIZE, sketch
from crawler_dedup.core.page.tokens import tokenize

from .conftest import SHARED_DATA

# -- the oracle: the code before the speed-up, verbatim ---------------------------------------

_SPACELESS = ("\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
              "\uac00-\ud7af\uf900-\ufaff")
_MARKS = "\u0300-\u036f\u0900-\u0dff\u0f00-\u0fff"
_TOKEN = re.compile(rf"[{_SPACELESS}]|(?:[^\W_{_SPACELESS}]|[{_MARKS}])+")
_RUN = re.compile(rf"[\w{_MARKS}]+")
_SPECIAL = re.compile(rf"[_{_SPACELESS}]")


def ref_tokenize(text):
    text = unicodedata.normalize("NFKC", text).casefold()
    runs = _RUN.findall(text)
    special = _SPECIAL.search
    if special(text) is None:
        return runs
    out = []
    for run in runs:
        if special(run) is None:
            out.append(run)
        else:
            out.extend(_TOKEN.findall(run))
    return out


_POSITION_MULT = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
     0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x94D049BB133111EB, 0xBF58476D1CE4E5B9,
     0x2545F4914F6CDD1D, 0x9FB21C651E98DF25, 0xE7037ED1A0B428DB, 0x8EBC6AF09C88C6E3,
     0x589965CC75374CC3, 0x1D8E4E27C47D124F, 0xA0761D6478BD642F, 0xE7037ED1A0B428DB ^ 2],
    dtype=np.uint64,
)


def ref_token_hashes(tokens):
    return np.array([xxhash.xxh3_64_intdigest(t.encode("utf-8")) for t in tokens], dtype=np.uint64)


def ref_mix(x):
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def ref_shingles(tokens, w=3):
    if not tokens:
        return np.empty(0, dtype=np.uint64)
    th = ref_token_hashes(tokens)
    width = min(w, len(th))
    count = len(th) - width + 1
    acc = np.zeros(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i in range(width):
            acc += th[i : i + count] * _POSITION_MULT[i]
        return ref_mix(acc)


def ref_content_hash(tokens):
    return xxhash.xxh3_128_digest("\x1f".join(tokens).encode("utf-8"))


def ref_simhash(features, weights=None):
    features = np.ascontiguousarray(features, dtype=np.uint64)
    if features.size == 0:
        return 0
    bits = np.unpackbits(features.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    if features.dtype.byteorder == ">":
        bits = bits[:, ::-1]
    if weights is None:
        ones = bits.sum(axis=0, dtype=np.int64)
        vote = 2 * ones - features.size
    else:
        w = np.asarray(weights, dtype=np.float64)
        vote = 2 * (w @ bits) - w.sum()
    set_bits = (vote > 0).astype(np.uint8)
    return int(np.packbits(set_bits, bitorder="little").view("<u8")[0])


NOTICE_WORDS = frozenset("""
cookie cookies consent consenting consents privacy partners personalised personalized preferences
advertising ads ad tracking identifiers geolocation device processing gdpr accept reject
subscribe subscription subscriber subscribers paywall login log sign signed register registration
limit unlimited
account javascript browser enable enabled disable disabled blocker adblock unsupported
newsletter premium trial
""".split())

NOTICE_PHRASES = re.compile(r"\b(?:" + "|".join([
    r"(?:we|this (?:site|website)) uses? cookies", r"accept (?:all )?cookies", r"cookie (?:policy|settings|preferences)",
    r"(?:store|access) (?:and access )?information on (?:a|your) device", r"personali[sz]ed (?:ads|advertising|content)",
    r"(?:your|manage) (?:privacy )?(?:choices|preferences|settings)", r"(?:refuse|withdraw) (?:your )?consent",
    r"(?:reached|hit|used) (?:your|the) (?:limit|maximum|monthly limit)", r"free articles?",
    r"(?:already|become) a subscriber", r"subscribe (?:now |today )?to (?:continue|read|keep reading)",
    r"unlimited (?:digital )?access", r"(?:sign|log) in to (?:continue|read|keep reading)",
    r"(?:enable|turn on) javascript", r"javascript is (?:disabled|required|not enabled)",
    r"(?:disable|turn off|pause) (?:your )?ad ?blocker", r"browser is (?:not supported|out of date)",
]) + r")\b")


def ref_notice_share(tokens):
    return sum(t in NOTICE_WORDS for t in tokens) / len(tokens) if tokens else 0.0


def ref_looks_like_notice(tokens, max_tokens=400, share=0.06):
    if len(tokens) > max_tokens:
        return False
    phrases = len(set(m.group(0) for m in NOTICE_PHRASES.finditer(" ".join(tokens))))
    return phrases >= 2 or (phrases >= 1 and ref_notice_share(tokens) >= share)


def ref_fingerprint(text, min_tokens=15, w=3):
    """Deduplicator.fingerprint with the default settings, from the oracle's parts."""
    toks = ref_tokenize(text)
    if len(toks) < min_tokens:
        return "too_short"
    if ref_looks_like_notice(toks):
        return "notice"
    sh = ref_shingles(toks, w)
    distinct = np.unique(sh)
    return (len(toks), ref_simhash(sh), distinct[:SKETCH_SIZE].tolist(), ref_content_hash(toks), int(distinct.size))


# -- helpers -------------------------------------------------------------------------------------

def same_array(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def check_text(text):
    """Every step on one text against the oracle."""
    toks = tokenize(text)
    ref = ref_tokenize(text)
    assert toks == ref
    assert all(type(t) is str for t in toks)
    with warnings.catch_warnings(), np.errstate(all="raise"):  # no overflow warning may be raised
        warnings.simplefilter("error")
        assert same_array(token_hashes(toks), ref_token_hashes(ref))
        for w in (1, 2, 3, 5):
            assert same_array(shingles(toks, w), ref_shingles(ref, w))
        sh = shingles(toks, 3)
        assert simhash(sh) == ref_simhash(sh)
    assert content_hash(toks) == ref_content_hash(ref)
    assert looks_like_notice(toks) == ref_looks_like_notice(ref)
    assert same_array(sketch(sh), np.unique(ref_shingles(ref))[:SKETCH_SIZE])
    return toks


def deduplicator_fingerprint(dedup, text):
    got = dedup.fingerprint(text)
    if isinstance(got, Fingerprinted):
        got = (got.tokens, got.fingerprint, got.sketch.tolist(), got.digest, got.shingles)
    return got


@pytest.fixture(scope="module")
def dedup():
    with tempfile.TemporaryDirectory() as tmp:
        yield Deduplicator(DedupConfig(dir=tmp))


def _shared_texts():
    from crawler_dedup.core.page.extract import extract

    files = sorted(glob.glob(os.path.join(SHARED_DATA, "**", "*.html"), recursive=True)
                   + glob.glob(os.path.join(SHARED_DATA, "**", "*.html.gz"), recursive=True))
    texts = []
    for name in files:
        with (gzip.open(name) if name.endswith(".gz") else open(name, "rb")) as f:
            html = f.read()
        try:
            got = extract(html)
        except Exception:
            continue
        if got is not None:
            texts.append(got.text)
    return texts


@pytest.fixture(scope="module")
def shared_texts():
    if not os.path.isdir(SHARED_DATA):
        pytest.skip("../shared/data is not beside the checkout")
    texts = _shared_texts()
    assert len(texts) >= 300
    return texts


# -- real texts ------------------------------------------------------------------------------

def test_real_texts_give_the_same_tokens_shingles_and_fingerprints(shared_texts, dedup):
    for text in shared_texts:
        toks = check_text(text)
        assert deduplicator_fingerprint(dedup, text) == ref_fingerprint(text)
        # the notice guard on short texts: prefixes, and 300-word windows of the real words
        for prefix in (text[:80], text[:400], text[:1500]):
            check_text(prefix)
            assert deduplicator_fingerprint(dedup, prefix) == ref_fingerprint(prefix)
        for start in range(0, len(toks), 150):
            window = toks[start : start + 300]
            assert looks_like_notice(window) == ref_looks_like_notice(window)


def test_real_texts_joined_give_the_same_simhash_for_many_features(shared_texts):
    sh = np.concatenate([ref_shingles(ref_tokenize(t)) for t in shared_texts[:200]])
    for n in (254, 255, 256, 509, 510, 511, 2 * 255 * 7, 4000, 65535, sh.size):
        assert simhash(sh[:n]) == ref_simhash(sh[:n])


def test_real_texts_in_other_scripts_and_forms(shared_texts):
    """The same texts upper-cased, in full-width and NFD forms, with underscores and CJK mixed in."""
    for text in shared_texts[::5]:
        for variant in (text.upper(), unicodedata.normalize("NFD", text), text.replace(" ", "_"),
                        text.replace("e", "東").replace("a", "\u0e34"), text.replace(" ", "\u3000"),
                        text.translate({c: c + 0xFEE0 for c in range(0x21, 0x7F)})):
            check_text(variant)


# -- every code point ------------------------------------------------------------------------

EVERY = "".join(map(chr, range(0x110000)))  # surrogates included


@pytest.mark.parametrize("between", [
    " ", "a", "_", "東", "\u0301", "", "a\u0e34", "ก", "\n", "a\n", "\n\u0301", "\u0301\n",
])
def test_every_code_point_in_context(between):
    text = between.join(EVERY)
    assert tokenize(text) == ref_tokenize(text)


def test_line_feed_is_a_normalization_boundary():
    """Why tokenize may normalize line by line: the line feed is a starter (combining class 0),
    its own NFKC and in no composition pair, so it composes with nothing before or after it, and
    canonical reordering never moves a character across a starter."""
    assert unicodedata.combining("\n") == 0 and unicodedata.normalize("NFKC", "\n") == "\n"
    # no decomposition holds it: no composition pair has it first (composing with what follows) or
    # second (composing with what precedes)
    assert not any("000A" in unicodedata.decomposition(chr(c)).split() for c in range(0x110000))
    for between in ("\u0301", "\u0308\u0301", "\u1161", "\u3099", "\u0338"):
        for c in ("e", "a", "\u1100", "\u304b", "=", "\n"):
            text = c + "\n" + between
            lines = [unicodedata.normalize("NFKC", x) for x in text.split("\n")]
            assert unicodedata.normalize("NFKC", text) == "\n".join(lines)


def test_every_code_point_alone():
    """Each of the BMP alone, and every 7th beyond it (all of them are in the texts above)."""
    assert tokens_mod._MAP is not None
    chars = [chr(c) for c in [*range(0x10000), *range(0x10000, 0x110000, 7)]]
    assert [tokenize(c) for c in chars] == [ref_tokenize(c) for c in chars]


def test_table_grows_plane_by_plane_to_the_table_built_at_once(monkeypatch):
    monkeypatch.setattr(tokens_mod, "_MAP", tokens_mod._char_map(0, 0x10000))
    for text in ["abc 😀 x𠀀y", "\U000e0041a", "東", "\U0010fffd \U00030000", "\U00010400 \U0001d400"]:
        assert tokenize(text) == ref_tokenize(text)
    assert tokens_mod._MAP.size == 0x110000
    assert np.array_equal(tokens_mod._MAP, tokens_mod._char_map(0, 0x110000))
    monkeypatch.setattr(tokens_mod, "_MAP", None)  # the fallback: the patterns themselves
    text = "a_b 東京 😀 x\u0301"
    assert tokenize(text) == ref_tokenize(text)


@pytest.mark.parametrize("text", [
    "", " ", "_", "__a__", "a_b", "\ud800", "x\udfffy", "\ud83d\ude00", "😀", "hi😀there", "ǰ", "İstanbul", "ΣΑΣ",
    "ﬁne ﬂow", "Ｆｕｌｌ", "東京タワー is 333m", "กิน ภาษา", "नई दिल्ली", "e\u0301\u0301", "\u0301", "a\u200db", "①②",
    "x²", "½", "ⓐⓑ", "\u00a0\u2003\u3000", "\x1c\x1d\x1e\x1f", "a\x85b\u2028c", "𝐀𝐁𝐂", "𠀀𠀁", "\U000e0041",
    "snake_case_name 12_000", "ß STRASSE", "ﷺ", "ㄱㄴ 가나", "ຂ ລາວ", "က", "ក", "A" * 5000, "a " * 3000,
])
def test_edge_texts(text):
    check_text(text)


# -- generated texts -------------------------------------------------------------------------

ALPHABET = list(
    "aAbBzZ09_ -.,;:!?'\"()[]{}/\\@#$%^&*+=<>|~`\t\n\r\x0b\x0c\x1c\x1f\x85\u00a0\u2028\u3000"
    "éÉßİıǰſΣσςёЁж"  # case folding and composition
    "\u0300\u0301\u0308\u0327\u036f\u20dd"  # combining marks
    "東京タワーは高い가나ㄱ\u3005\u30fc\u309d〆"  # CJK, kana, Hangul
    "กขิีุ\u0e47\u0e4c\u0e50ລ\u0eb4ကျ\u1039ក\u17b6\u17d2"  # Thai, Lao, Myanmar, Khmer with marks
    "कि\u093f\u094d\u0964\u0965অ\u09cd\u0f00\u0f71ཀ"  # Indic and Tibetan with marks and dandas
    "ﬁﬂＡｚ１²½①ⓐ™℃㎞"  # compatibility forms
    "٠١٢عربي\u064bעברית"  # Arabic, Hebrew
) + ["😀", "👍", "\U0001f3fd", "\U0001d400", "\U00020000", "\U000e0041", "\ufeff", "\u200b", "\u200d"]

texts = st.one_of(
    st.text(alphabet=st.sampled_from(ALPHABET), max_size=80),
    st.text(max_size=40),  # anything hypothesis likes
    st.lists(st.sampled_from(["the", "cookie", "we", "use", "cookies", "東京", "a_b", "x\u0301", "😀", "42"]),
             max_size=30).map(" ".join),
)


@settings(max_examples=1500, deadline=None)
@given(texts)
def test_generated_texts(text):
    check_text(text)


@settings(max_examples=300, deadline=None)
@given(texts.map(lambda t: " ".join([t] * 8)), st.integers(15, 20))
def test_generated_texts_through_the_deduplicator(text, min_tokens):
    d = Deduplicator(DedupConfig(dir=tempfile.gettempdir(), min_tokens=min_tokens))
    assert deduplicator_fingerprint(d, text) == ref_fingerprint(text, min_tokens)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(max_size=6), max_size=40), st.integers(-2, 16))
def test_generated_token_lists_shingles(toks, w):
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        assert same_array(token_hashes(toks), ref_token_hashes(toks))
        assert same_array(shingles(toks, w), ref_shingles(toks, w))
    assert content_hash(toks) == ref_content_hash(toks)


def test_mix_is_unchanged():
    x = np.random.default_rng(3).integers(0, 2**64, size=1000, dtype=np.uint64, endpoint=False)
    before = x.copy()
    assert same_array(features._mix(x), ref_mix(x))
    assert same_array(x, before)  # _mix (used by the q-gram verifier) leaves its input alone


# -- simhash -----------------------------------------------------------------------------------

u64 = st.integers(min_value=0, max_value=2**64 - 1)


@settings(max_examples=300, deadline=None)
@given(st.lists(u64, max_size=700))
def test_generated_simhash(values):
    arr = np.array(values, dtype=np.uint64)
    assert simhash(arr) == ref_simhash(arr)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(u64, st.floats(0, 100)), max_size=80))
def test_generated_weighted_simhash(pairs):
    arr = np.array([f for f, _ in pairs], dtype=np.uint64)
    w = np.array([x for _, x in pairs], dtype=np.float64)
    assert simhash(arr, w) == ref_simhash(arr, w)


@pytest.mark.parametrize("n", [1, 2, 3, 254, 255, 256, 509, 510, 511, 764, 765, 766, 5000, 65280, 70001])
def test_simhash_at_block_edges_and_ties(n):
    rng = np.random.default_rng(n)
    cases = [
        rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False),
        np.full(n, 2**64 - 1, np.uint64),  # every count n: no byte may wrap
        np.zeros(n, np.uint64),
        (rng.random(n) < 0.5).astype(np.uint64) * np.uint64(0x8000000000000001),
    ]
    half = rng.integers(0, 2**64, size=(n + 1) // 2, dtype=np.uint64, endpoint=False)
    cases.append(np.concatenate([half, ~half])[:n])  # exact ties when n is even: bit 0
    for arr in cases:
        assert simhash(arr) == ref_simhash(arr)
    # other inputs simhash accepts: lists, other integer dtypes, big-endian, 2-d, strided
    arr = cases[0]
    for other in (arr.tolist(), arr.astype(">u8"), arr.reshape(-1, 1), arr[::-1], (arr % 1000).astype(np.int64)):
        assert simhash(other) == ref_simhash(other)
    assert simhash(arr, np.ones(n)) == ref_simhash(arr, np.ones(n))


# -- the notice guard --------------------------------------------------------------------------

NOTICE_VOCAB = sorted(set(re.findall(r"[a-z]+", NOTICE_PHRASES.pattern)) | NOTICE_WORDS
                      | {"personalised", "personalized", "articles", "the", "news", "today", "", "x"})


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(NOTICE_VOCAB), max_size=60), st.integers(0, 70), st.floats(0, 0.5))
def test_generated_notices(toks, max_tokens, share):
    assert looks_like_notice(toks, max_tokens, share) == ref_looks_like_notice(toks, max_tokens, share)
    assert looks_like_notice(toks) == ref_looks_like_notice(toks)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("abcdefghijklmnopqrstuvwxyz _")), max_size=12), max_size=40))
def test_generated_notices_from_letters(toks):
    assert looks_like_notice(toks) == ref_looks_like_notice(toks)


@pytest.mark.parametrize("pattern", notices.NOTICE_PHRASE_PATTERNS)
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_every_notice_phrase_holds_a_hint(pattern, data):
    """What lets the guard skip the phrase scan: every match of every phrase holds a hint."""
    phrase = data.draw(st.from_regex(re.compile(pattern), fullmatch=True))
    assert any(hint in phrase for hint in notices._PHRASE_HINTS)


def test_notice_phrases_are_unchanged():
    assert notices.NOTICE_PHRASES.pattern == NOTICE_PHRASES.pattern
    assert notices.NOTICE_WORDS == NOTICE_WORDS


@pytest.mark.parametrize("text", [
    "We use cookies to improve your experience. Accept all cookies or manage your preferences.",
    "Please enable JavaScript. JavaScript is disabled in your browser.",
    "You have reached your limit of free articles. Already a subscriber? Sign in to continue.",
    "This website uses cookies. Cookie policy. Withdraw consent.",
    "Cookie settings are discussed in this long article about browsers and privacy law in Europe.",
])
def test_known_notices(text):
    check_text(text)
    check_text(" ".join([text] * 5))


def test_simhash_module_keeps_its_api():
    assert simhash_mod.hamming(0b1011, 0) == 3
