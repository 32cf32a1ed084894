"""`longest` compares length classes: a copy whose template adds a few words to the same text does
not win for them; the policy's next key decides between pages of one class (core/decide/policy.py)."""

import json
import random

import pytest

from crawler_dedup.core.decide.policy import LENGTH_BOUNDS, POLICIES, Page, length_class, rank
from crawler_dedup.core.page.tokens import tokenize
from crawler_dedup.tools.scan import Options, Scan

LONGEST = POLICIES["longest"]  # longest, https-first, shortest-url


def test_length_classes():
    assert LENGTH_BOUNDS[:4] == (0, 20, 40, 60) and 400 in LENGTH_BOUNDS and 1001 in LENGTH_BOUNDS
    widths = [b - a for a, b in zip(LENGTH_BOUNDS, LENGTH_BOUNDS[1:])]
    assert all(w == max(20, a // 20) for a, w in zip(LENGTH_BOUNDS, widths))  # 20 words, or 5% past 400
    assert length_class(1001) == length_class(1050) != length_class(1051)
    assert length_class(0) == length_class(19) != length_class(20)


def test_a_copy_3_percent_longer_does_not_beat_its_original_on_the_next_key():
    original = Page(0, "https://news.example/story", 1010)
    copy = Page(1, "https://wire.example/republished/2024/story", 1040)  # 3% longer, a longer URL
    plain = Page(2, "http://news.example/story", 1012)  # http: https-first, the next key, puts it after
    assert length_class(original.words) == length_class(copy.words) == length_class(plain.words)
    for pages in ([original, copy, plain], [plain, copy, original], [copy, original, plain]):
        assert [p.url for p in rank(pages, LONGEST)] == [original.url, copy.url, plain.url]
    # 10% longer is not a tie: the longer page is first whatever its URL
    longer = Page(3, "http://wire.example/republished/2024/story", 1111)
    assert rank([original, longer], LONGEST)[0] is longer
    # two pages either side of a class bound are not a tie, however close (1000 | 1001)
    assert rank([Page(0, "https://a.example/", 1000), Page(1, "https://longer.example/x", 1001)],
                LONGEST)[0].words == 1001
    # the length key alone: a tie goes to the URL (then the time and the input position)
    assert rank([Page(0, "https://b.example/", 1040), Page(1, "https://a.example/", 1010)], ("longest",))[0].words == 1010


def test_the_order_is_total_and_does_not_depend_on_the_input_order():
    rng = random.Random(5)
    pages = [Page(i, f"http{'s' * rng.randint(0, 1)}://s{rng.randint(0, 9)}.example/{'x' * rng.randint(0, 9)}",
                  rng.choice([990, 1000, 1001, 1010, 1040, 1050, 1051, 1100]), time=float(rng.randint(0, 3)))
             for i in range(200)]
    first = rank(pages, LONGEST)
    for _ in range(5):
        rng.shuffle(pages)
        assert rank(pages, LONGEST) == first


def _with_heading(articles):
    """(original text, its copy with a republisher's heading of about 3% more words), both of one
    length class: the first bundled article for which they are."""
    for _, gold in articles:
        words = len(tokenize(gold))
        heading = " ".join(f"syndicated{i}" for i in range(max(2, words * 3 // 100)))
        copy = f"Republished by Example Wire. {heading}\n{gold}"
        if 400 <= words and length_class(words) == length_class(len(tokenize(copy))):
            return gold, copy
    pytest.fail("no bundled article of a length class its copy shares")


@pytest.mark.parametrize("copy_first", [True, False])
def test_scan_keeps_the_original_over_a_republished_copy_a_few_words_longer(tmp_path, articles, copy_first):
    gold, copy = _with_heading(articles)
    assert 1.02 < len(tokenize(copy)) / len(tokenize(gold)) < 1.05
    rows = [{"url": "https://news.example/2024/story", "text": gold},
            {"url": "https://wire-republisher.example/syndicated/2024/05/story-slug", "text": copy}]
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (rows[::-1] if copy_first else rows)), encoding="utf-8")
    summary = Scan(Options(inputs=[str(path)], out=str(tmp_path / "out"), jobs=1)).run()
    assert (summary["kept"], summary["dropped"]) == (1, 1)
    kept = [json.loads(line)["url"] for line in (tmp_path / "out" / "kept" / "items.jsonl").read_text().splitlines()]
    assert kept == ["https://news.example/2024/story"]


def test_the_spark_scans_order_is_the_policys(tmp_path):
    """sites.order computes the policy's order in Spark SQL: the same length classes, the same ties."""
    import os
    import shutil

    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java for Spark (scripts/system_packages.sh installs openjdk-17-jre-headless)")
    from pyspark.sql import SparkSession

    from crawler_dedup.tools.spark_scan.sites import order

    rng = random.Random(9)
    words = [0, 19, 20, 399, 400, 420, 421, 990, 1000, 1001, 1010, 1040, 1050, 1051, 2_000_000, 10**9]
    pages = [Page(seq, f"http{'s' * rng.randint(0, 1)}://s{rng.randint(0, 3)}.example/{'x' * rng.randint(0, 3)}",
                  rng.choice(words), time=float(rng.randint(0, 2)), score=float(rng.randint(0, 2))) for seq in range(300)]
    spark = (SparkSession.builder.master("local[1]").appName("policy order test")  # (a JVM: ~20 s, not 10)
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1").getOrCreate())
    try:
        spark.createDataFrame([("page", p.seq, p.url, p.words, p.time, p.score, None) for p in pages],
                              "kind string, seq long, url string, words long, time double, score double, "
                              "canonical_rank int").write.parquet(str(tmp_path / "signatures"))
        for keys in (LONGEST, ("score", "longest", "newest")):
            got = [r.seq for r in order(spark, str(tmp_path), keys).orderBy("place").collect()]
            assert got == [p.seq for p in rank(pages, keys)], keys
    finally:
        spark.stop()
