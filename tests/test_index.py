"""The index against a brute-force Hamming oracle, on both stores and several plans."""

import random
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawler_dedup.core.index.neardup import DocRecord, NearDupIndex
from crawler_dedup.core.index.tables import plan_for
from crawler_dedup.stores import LmdbStore, MemoryStore

PLANS = [(0, 1), (1, 2), (2, 3), (3, 4), (3, 5), (3, 6), (4, 6), (5, 7)]


def _index(kind, k, r, tmp):
    store = MemoryStore() if kind == "memory" else LmdbStore(tmp, map_size=64 * 1024**2, sync=False)
    return NearDupIndex.open(store, k, lambda: plan_for(k, r))


def _record(fp, i):
    return DocRecord(url=f"u{i}", fingerprint=fp, sketch=np.array([i], np.uint64), tokens=1, time=1.0)


def _cluster(seed, size, max_flip):
    rnd = random.Random(seed)
    fps = []
    for _ in range(size):
        if fps and rnd.random() < 0.7:
            base = rnd.choice(fps)
            for b in rnd.sample(range(64), rnd.randint(0, max_flip)):
                base ^= 1 << b
            fps.append(base)
        else:
            fps.append(rnd.getrandbits(64))
    return fps


@pytest.mark.parametrize("kind", ["memory", "lmdb"])
@pytest.mark.parametrize("k,r", PLANS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), size=st.integers(1, 60))
def test_candidates_equal_brute_force(kind, k, r, seed, size):
    stored = _cluster(seed, size, k + 3)
    queries = _cluster(seed + 1, 20, k + 3) + stored[:5]
    with tempfile.TemporaryDirectory() as tmp:
        index = _index(kind, k, r, tmp)
        try:
            index.write(lambda txn: [index.add(txn, _record(fp, i)) for i, fp in enumerate(stored)])
            for q in queries + [fp ^ 1 for fp in stored[:5]]:
                got = index.read(lambda txn: index.candidates(txn, q))
                want = sorted({fp for fp in stored if (fp ^ q).bit_count() <= k})
                assert sorted(fp for fp, _ in got) == want
                assert all(d == (fp ^ q).bit_count() for fp, d in got)
                assert [d for _, d in got] == sorted(d for _, d in got)  # nearest first
        finally:
            index.store.close()


def test_big_bucket_comes_back_whole_from_lmdb(tmp_path):
    # > one LMDB page of duplicates in one bucket: getmulti must return every one
    index = _index("lmdb", 3, 4, str(tmp_path))
    base = 0xABCD_0000_0000_0000
    fps = [base | (i << 20) for i in range(3000)]  # same top 16 bits: one bucket of table 0
    index.write(lambda txn: [index.add(txn, _record(fp, i)) for i, fp in enumerate(fps)])
    bucket = index.read(lambda txn: txn.bucket_union(index.plan.keys(base)[:1]))
    assert sorted(bucket.tolist()) == sorted(fps)
    assert {fp for fp, _ in index.read(lambda txn: index.candidates(txn, base))} == {
        fp for fp in fps if (fp ^ base).bit_count() <= 3}
    index.store.close()


def test_records_round_trip_and_docs_per_fingerprint(tmp_path):
    index = _index("lmdb", 3, 4, str(tmp_path))
    rec = DocRecord(url="https://ex.com/ä?x=1", fingerprint=2**64 - 1, sketch=np.array([1, 2**63], np.uint64),
                    tokens=99, time=12.5, run=7, title="Tïtle")
    twin = DocRecord(url="https://ex.com/b", fingerprint=2**64 - 1, sketch=np.array([3], np.uint64), tokens=5, time=1)
    ids = index.write(lambda txn: (index.add(txn, rec, b"d" * 16), index.add(txn, twin)))
    docs = index.read(lambda txn: index.docs(txn, 2**64 - 1))
    assert [d.doc_id for d in docs] == list(ids)
    got = docs[0]
    assert (got.url, got.fingerprint, got.sketch.tolist(), got.tokens, got.time, got.run, got.title) == (
        rec.url, rec.fingerprint, [1, 2**63], 99, 12.5, 7, "Tïtle")
    assert index.read(lambda txn: index.exact(txn, b"d" * 16)).url == rec.url
    index.store.close()


@pytest.mark.parametrize("kind", ["memory", "lmdb"])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), size=st.integers(2, 50))
def test_candidates_equal_brute_force_after_removals(kind, seed, size):
    stored = _cluster(seed, size, 5)
    rnd = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        index = _index(kind, 3, 4, tmp)
        try:
            ids = index.write(lambda txn: [index.add(txn, _record(fp, i), bytes([i % 256]) * 16, probes=1)
                                                 for i, fp in enumerate(stored)])
            gone = set(rnd.sample(range(size), size // 2))
            index.write(lambda txn: [index.remove(txn, ids[i]) for i in gone])
            live = [fp for i, fp in enumerate(stored) if i not in gone]
            for q in stored:
                got = index.read(lambda txn: index.candidates(txn, q))
                assert sorted(fp for fp, _ in got) == sorted({fp for fp in live if (fp ^ q).bit_count() <= 3})
            assert index.read(lambda t: t.doc_count()) == size - len(gone)
            assert index.read(lambda t: t.time_oldest(2**40, 10**6)) == sorted(
                (1, ids[i]) for i in range(size) if i not in gone)
        finally:
            index.store.close()


def _sketch(seed: int, shingles: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.unique(rng.integers(0, 2**63, shingles, dtype=np.uint64) * np.uint64(2))[:128]


@given(st.integers(0, 10**6), st.sampled_from([130, 1000, 10**4, 10**5]))
@settings(max_examples=40, deadline=None)
def test_a_short_record_keeps_each_hash_to_16_bits_past_its_leading_zeros(seed, shingles):
    """A coarse record (the Redis spread layout's) keeps 2 bytes a sketch hash: the 16 bits below
    the sketch's common leading zeros, so it holds 16 bits of each hash whatever the page's size;
    compared with a page's sketch cut to the same bits, resemblance is what the whole sketches give
    (within the cut's rounding); its posting hashes come back whole for removal; its extras'
    lengths are varints."""
    from crawler_dedup.core.decide.verify import coarsened
    from crawler_dedup.core.index.records import Extra, probe_hashes, probe_low_bits
    from crawler_dedup.core.page.sketch import kept_bits, resemblance

    sketch = _sketch(seed, shingles)
    record = DocRecord(url="https://a.example/x", fingerprint=7, sketch=sketch, tokens=300, time=1.0, shingles=shingles,
                       title="A title", extras={Extra.PROBE_LOW: probe_low_bits(sketch[:8]), Extra.DIGEST: b"d" * 16,
                                                "tx": b"t" * 300},
                       coarse=True)
    raw = record.encode()
    assert len(raw) < 130 + 2 * sketch.size + 400  # (8 bytes a hash: over 1,000)
    back = DocRecord.decode(raw, 5)
    assert back.coarse and back.bits >= 16 and back.extras == record.extras
    assert (back.sketch == (sketch & kept_bits(back.bits))).all()  # each hash's high bits, in order
    assert (probe_hashes(back, 8) == sketch[:8]).all()
    other = np.unique(np.concatenate([sketch[::2], _sketch(seed + 1, shingles)]))[:128]
    whole = resemblance(other, sketch)
    assert abs(resemblance(coarsened(other, back.bits), np.unique(back.sketch)) - whole) <= 0.05


@given(st.lists(st.integers(0, 2**64 - 1), max_size=200), st.integers(1, 64))
@settings(max_examples=200, deadline=None)
def test_a_coarse_comparison_cuts_as_np_unique_does(values, bits):
    """The page's sketch cut to a record's bits (kept on the page for its next candidate) and the
    record's without repeats: what np.unique gives, from a sorted sketch."""
    from types import SimpleNamespace

    from crawler_dedup.core.decide.verify import coarse_pair
    from crawler_dedup.core.page.sketch import kept_bits

    sketch = np.unique(np.array(values, dtype=np.uint64))
    fp = SimpleNamespace(sketch=sketch, measured={})
    doc = SimpleNamespace(sketch=sketch & kept_bits(bits), bits=bits)
    for _ in range(2):  # (the second from the page's memo)
        mine, theirs = coarse_pair(fp, doc)
        assert mine.tolist() == np.unique(sketch & kept_bits(bits)).tolist() == theirs.tolist()


def test_a_coarse_record_of_the_earlier_kind_still_reads():
    """Records the spread layout wrote before (each hash's high 24 bits, 5-byte posting tails,
    extras with 4-byte lengths) decode as they were: their sketch, and the posting hashes whole."""
    import struct

    from crawler_dedup.core.index.records import _COARSE, _HEAD, Extra, probe_hashes

    sketch = _sketch(3, 5000)
    low40 = (sketch[:8] & np.uint64((1 << 40) - 1)).astype(">u8").view(np.uint8).reshape(-1, 8)[:, 3:].tobytes()
    extras = {Extra.DIGEST: b"d" * 16, Extra.PROBE_LOW: low40, Extra.PROBES: bytes([8])}
    head = _HEAD.pack(7, 1.0, 300, 5000, 1, sketch.size, 1, 0 | _COARSE, 3)
    body = (sketch >> np.uint64(40)).astype(">u4").view(np.uint8).reshape(-1, 4)[:, 1:].tobytes()
    tail = b"".join(struct.pack(">BI", len(k), len(v)) + k.encode() + v for k, v in sorted(extras.items()))
    doc = DocRecord.decode(head + body + b"T" + b"u:x" + tail, 9)
    assert doc.coarse and doc.bits == 24 and doc.title == "T" and doc.url == "u:x" and doc.extras == extras
    assert (doc.sketch == (sketch & np.uint64(0xFFFFFF0000000000))).all()
    assert (probe_hashes(doc, 8) == sketch[:8]).all()
