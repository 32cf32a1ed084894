import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler_dedup.core.page.features import shingles
from crawler_dedup.core.page.simhash import hamming_many, simhash
from crawler_dedup.core.page.sketch import resemblance, sketch
from crawler_dedup.core.page.tokens import tokenize

u64 = st.integers(min_value=0, max_value=2**64 - 1)


def simhash_oracle(features, weights=None):
    """Charikar's simhash, bit by bit in plain Python."""
    weights = weights or [1.0] * len(features)
    out = 0
    for bit in range(64):
        vote = sum(w if (f >> bit) & 1 else -w for f, w in zip(features, weights))
        if vote > 0:
            out |= 1 << bit
    return out


@given(st.lists(u64, max_size=60))
def test_simhash_matches_bitwise_oracle(features):
    assert simhash(np.array(features, dtype=np.uint64)) == simhash_oracle(features)


@given(st.lists(st.tuples(u64, st.integers(1, 50)), min_size=1, max_size=40))
def test_weighted_simhash_matches_oracle(pairs):
    features, weights = zip(*pairs)
    got = simhash(np.array(features, dtype=np.uint64), np.array(weights, dtype=np.float64))
    assert got == simhash_oracle(list(features), [float(w) for w in weights])


def test_golden_fingerprints():
    # pinned values: a change here changes every stored index (bump the store format version)
    text = "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm windowsill"
    assert f"{simhash(shingles(tokenize(text), 3)):016x}" == GOLDEN[0]
    assert f"{simhash(shingles(tokenize('東京タワーは高い'), 3)):016x}" == GOLDEN[1]
    assert simhash(np.empty(0, np.uint64)) == 0


GOLDEN = ("6fa9446bb2ddcc90", "8c66332a0416300c")


@given(st.lists(u64, max_size=50), u64)
def test_hamming_many(values, fp):
    arr = np.array(values, dtype=np.uint64)
    assert hamming_many(arr, fp).tolist() == [(v ^ fp).bit_count() for v in values]


def test_sketch_is_bottom_k_distinct():
    feats = np.array([5, 3, 3, 9, 1], dtype=np.uint64)
    assert sketch(feats, 3).tolist() == [1, 3, 5]


@given(st.sets(st.integers(0, 400), max_size=60), st.sets(st.integers(0, 400), max_size=60))
def test_resemblance_is_exact_when_sets_fit_in_the_sketch(a, b):
    sa, sb = sketch(np.array(sorted(a), np.uint64)), sketch(np.array(sorted(b), np.uint64))
    if not a and not b:
        assert resemblance(sa, sb) == 1.0
    elif not a or not b:
        assert resemblance(sa, sb) == 0.0
    else:
        assert resemblance(sa, sb) == len(a & b) / len(a | b)


def test_resemblance_estimate_is_close_on_large_sets():
    rng = np.random.default_rng(3)
    universe = rng.integers(0, 2**63, size=6000, dtype=np.uint64)
    errors = []
    for overlap in (0.2, 0.5, 0.8, 0.95):
        n = 2000
        shared = int(n * overlap)
        a = universe[:n]
        b = np.concatenate([universe[:shared], universe[n : 2 * n - shared]])
        true = len(set(a.tolist()) & set(b.tolist())) / len(set(a.tolist()) | set(b.tolist()))
        errors.append(abs(resemblance(sketch(a), sketch(b)) - true))
    # bottom-128 estimate: standard error <= 0.045; 4 draws all within 3 sigma
    assert max(errors) < 0.135


@settings(max_examples=300, deadline=None)
@given(st.sets(st.integers(0, 2**64 - 1), max_size=200), st.sets(st.integers(0, 2**64 - 1), max_size=200),
       st.sets(st.integers(0, 2**64 - 1), max_size=150), st.integers(1, 160))
def test_resemblance_matches_the_set_definition(only_a, only_b, shared, size):
    """The merged-sort resemblance against its definition on Python sets: among the `size`
    smallest of A∪B (from the two bottom-k sketches), the share in both."""
    from crawler_dedup.core.page.sketch import resemblance

    a = np.array(sorted(only_a | shared)[:size], dtype=np.uint64)
    b = np.array(sorted(only_b | shared)[:size], dtype=np.uint64)
    if not a.size or not b.size:
        assert resemblance(a, b, size) == (1.0 if a.size == b.size else 0.0)
        return
    union = sorted(set(a.tolist()) | set(b.tolist()))[:size]
    both = sum(1 for x in union if x in set(a.tolist()) and x in set(b.tolist()))
    assert resemblance(a, b, size) == both / len(union)
