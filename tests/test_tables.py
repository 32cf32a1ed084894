from itertools import combinations
from math import comb

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler_dedup.core.index.tables import Plan, choose_plan, plan_for, split_blocks


@pytest.mark.parametrize("r", [1, 2, 3, 4, 5, 6, 7, 10, 64])
def test_blocks_cover_64_bits_exactly(r):
    blocks = split_blocks(r)
    bits = set()
    for shift, width in blocks:
        span = set(range(shift, shift + width))
        assert not bits & span
        bits |= span
    assert bits == set(range(64))
    assert max(w for _, w in blocks) - min(w for _, w in blocks) <= 1


@pytest.mark.parametrize("k,r", [(0, 1), (1, 2), (2, 4), (3, 4), (3, 5), (3, 6), (4, 6), (6, 8)])
def test_plan_has_one_table_per_choice_of_matching_blocks(k, r):
    plan = plan_for(k, r)
    assert len(plan.tables) == comb(r, k)
    assert all(len(t) == r - k for t in plan.tables)
    assert Plan.from_json(plan.to_json()) == plan


def _flip(fp, bits):
    for b in bits:
        fp ^= 1 << b
    return fp


@pytest.mark.parametrize("k,r", [(1, 2), (2, 3), (3, 4), (3, 5), (4, 6)])
@given(fp=st.integers(0, 2**64 - 1), flips=st.sets(st.integers(0, 63), max_size=4))
def test_any_two_within_k_share_a_table_key(k, r, fp, flips):
    plan = plan_for(k, r)
    other = _flip(fp, list(flips)[:k])
    assert any(plan.key(t, fp) == plan.key(t, other) for t in range(len(plan.tables)))


def test_prefix_concatenates_the_chosen_blocks():
    plan = plan_for(2, 4)  # blocks of 16 bits
    fp = 0x1111_2222_3333_4444
    keys = {plan.tables[t]: plan.prefix(t, fp) for t in range(len(plan.tables))}
    assert keys[(0, 1)] == 0x1111_2222 and keys[(2, 3)] == 0x3333_4444 and keys[(1, 3)] == 0x2222_4444


def test_choose_plan_grows_prefixes_with_n():
    small, large = choose_plan(3, 10**4), choose_plan(3, 10**9)
    assert min(small.prefix_bits(t) for t in range(len(small.tables))) < min(
        large.prefix_bits(t) for t in range(len(large.tables)))
    for k in range(0, 9):
        for n in (10**5, 10**7):
            plan = choose_plan(k, n)
            assert plan.k == k and len(plan.tables) == comb(plan.r, k)
    assert choose_plan(0, 10**6).tables == ((0,),)


def test_every_choice_of_blocks_is_a_table():
    plan = plan_for(2, 5)
    assert set(plan.tables) == set(combinations(range(5), 3))


@pytest.mark.parametrize("k,r", [(0, 1), (1, 2), (2, 5), (3, 4), (3, 5), (3, 7), (6, 8), (8, 12)])
@given(fps=st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=20))
def test_fast_keys_and_batch_prefixes_equal_the_definition(k, r, fps):
    plan = plan_for(k, r)
    prefixes = plan.prefixes(np.array(fps, dtype=np.uint64))
    for i, fp in enumerate(fps):
        assert plan.keys(fp) == [plan.key(t, fp) for t in range(len(plan.tables))]
        assert [int(p) for p in prefixes[:, i]] == [plan.prefix(t, fp) for t in range(len(plan.tables))]


def test_chooser_trades_tables_against_candidates_and_disk():
    # k=3: four 16-bit tables while buckets stay small; ten 26-bit ones once 4 tables would read
    # thousands of entries a lookup
    assert len(choose_plan(3, 10**6).tables) == 4
    assert len(choose_plan(3, 10**7).tables) == 4
    big = choose_plan(3, 10**9)
    assert len(big.tables) == 10 and big.expected_entries(10**9) < 1000
    for k in range(1, 9):
        for n in (10**5, 10**7, 10**9):
            plan = choose_plan(k, n)
            others = [plan_for(k, r) for r in range(k + 1, k + 6)]
            assert plan.cost(n) <= min(o.cost(n) for o in others)
    # estimated table bytes fall as buckets fill (the key is shared by more entries)
    plan = plan_for(3, 4)
    assert plan.table_bytes(10**7) < plan.table_bytes(10**5) < 4 * 40


def test_two_level_designs_are_costed_and_rarely_win():
    from crawler_dedup.core.index.tables import plan_rows, two_level_best

    tables, cost = two_level_best(3, 10**7)
    # the cheapest two-level design for k=3 splits in 4, then the other 48 bits in 4: 16 tables
    assert tables == comb(4, 3) * comb(4, 3) and cost > choose_plan(3, 10**7).cost(10**7)
    rows = plan_rows(3)
    assert [r["pages"] for r in rows] == [10**5, 10**6, 10**7, 10**8, 10**9]
    assert all(r["table_bytes_per_page"] > 0 and r["two_level"][1] >= r["cost"] for r in rows)
