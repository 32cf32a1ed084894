"""`crawler-dedup scan --engine spark` on a real local Spark (Java 17): the same decisions as the
one-machine scan on JSON lines (read in parts) and WARC, stages that are not run again, the
components loop against union-find, and the messages a user meets."""

import json
import os
import random
import shutil

import pytest

from crawler_dedup.tools.scan import Options, Scan, ScanError
from crawler_dedup.tools.spark_scan.agree import agreement
from crawler_dedup.tools.spark_scan.candidates import bucket_pairs, union_find

from .conftest import cli
from .test_scan import cut_inputs, group_pages, records, whole_gzip, write_jsonl, write_warc

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("no Java for Spark (scripts/system_packages.sh installs openjdk-17-jre-headless)",
                allow_module_level=True)

from crawler_dedup.tools.spark_scan import SparkScan  # noqa: E402

MASTER = "local[2]"


@pytest.fixture(scope="module")
def pages(articles):
    from importlib import resources

    manifest = json.loads((resources.files("crawler_dedup.demo") / "pages" / "manifest.json").read_text("utf-8"))
    return group_pages(articles, [a["title"] for a in manifest["articles"]])


def groups_of(path):
    """The groups a clusters output holds (one file, or a folder of parts with a manifest)."""
    from crawler_dedup.droplog import jsonl_lines

    return [value for _, value, _ in jsonl_lines(path)]


def both(inputs, tmp_path, policy="longest", **kw):
    """The one-machine scan and the Spark scan of `inputs`: (local summary, spark summary, outs, lines said)."""
    said = []
    local, spark = tmp_path / "local", tmp_path / "spark"
    a = Scan(Options(inputs=[str(p) for p in inputs], out=str(local), policy=policy)).run()
    kw.setdefault("partitions", None if "spark_conf" in kw else 3)
    b = SparkScan(Options(inputs=[str(p) for p in inputs], out=str(spark), policy=policy), master=MASTER,
                  say=said.append, **kw).run()
    return a, b, (str(local), str(spark)), said


def test_jsonl_read_in_parts_decides_as_the_one_machine_scan(tmp_path, pages):
    order = list(range(len(pages)))
    random.Random(3).shuffle(order)
    path = write_jsonl(tmp_path / "crawl.jsonl", pages, order)
    a, b, (local, spark), said = both([path], tmp_path, split_bytes=200_000)  # several read tasks
    assert os.path.getsize(path) > 3 * 200_000
    agree = agreement(local, spark)
    assert a["dropped"] > 20 and agree["drops_a"] == a["dropped"]
    assert agree["differ_share"] <= 0.01, agree
    assert (b["pages"], b["kept"], b["dropped"]) == (a["pages"], a["kept"], a["dropped"])
    # every line went to one of the outputs, once
    with open(path, encoding="utf-8") as fh:
        lines = sorted(fh.read().splitlines())
    out = []
    for sub in ("kept", "dropped"):
        with open(os.path.join(spark, sub, "crawl.jsonl"), encoding="utf-8") as fh:
            out += fh.read().splitlines()
    assert sorted(out) == lines
    assert b["engine"] == "spark" and set(b["seconds"]) == {"signatures", "pairs", "components", "order", "sites", "decisions", "write"}
    assert any("signatures: running" in line for line in said)
    # the groups file too, positions numbered as the one-machine scan numbers records
    # (the Spark scan's are parts, in order, listed by a manifest)
    assert b["clusters"] == os.path.join(spark, "clusters") and os.path.isfile(os.path.join(spark, "clusters", "_manifest.json"))
    assert sorted(groups_of(os.path.join(local, "clusters.jsonl")), key=json.dumps) == sorted(
        groups_of(b["clusters"]), key=json.dumps)
    shown = cli("inspect", "--log", b["droplog"], "--json")  # a drop log in parts reads as one
    assert shown.returncode == 0 and json.loads(shown.stdout)["records"] == b["dropped"], shown.stderr
    # the decisions stage: one join over every page, of narrow rows (no extraction in any
    # exchange); each paired page's extraction read back from its part's file, the others' never
    from pyspark.sql import SparkSession

    from crawler_dedup.tools.spark_scan.decide import fetch, narrow_pages

    session = SparkSession.builder.master(MASTER).getOrCreate()
    try:
        work = os.path.join(spark, ".spark")
        pages_ = narrow_pages(session, work)
        plan = pages_._jdf.queryExecution().executedPlan().toString()
        assert "Exchange" in plan and "result" not in plan and "body" not in plan
        paired = pages_.where("unit IS NOT NULL").withColumn("place", pages_.seq).withColumn(
            "group", pages_.unit).withColumn("seed", pages_.unit.isNull())
        some = paired.where(paired.seq % 2 == 0)  # (here every page has a copy: half of them asked for)
        want = {r.seq for r in some.select("seq").collect()}
        got = fetch(some, os.path.join(work, "results"), 3).collect()
    finally:
        session.stop()
    assert {r.seq for r in got} == want and len(got) == len(want) > 10 and all(r.result is not None for r in got)


def test_warc_and_another_policy_decide_as_the_one_machine_scan(tmp_path, pages):
    half = len(pages) // 2
    w1 = write_warc(tmp_path / "a.warc.gz", pages[:half])
    w2 = write_warc(tmp_path / "b.warc.gz", pages[half:], revisit_of=pages[half][0])
    a, b, (local, spark), _ = both([w1, w2], tmp_path, policy="shortest-url", split_bytes=100_000)
    assert os.path.getsize(w1) > 3 * 100_000  # (each .warc.gz read by several tasks, from member starts)
    agree = agreement(local, spark)
    assert a["dropped"] > 20 and agree["differ_share"] <= 0.01, agree
    assert b["revisits"] == a["revisits"] and b["passed"] == a["passed"]
    for name in ("a.warc.gz", "b.warc.gz"):  # each record in one output (warcinfo in both)
        kept, dropped = records(os.path.join(spark, "kept", name)), records(os.path.join(spark, "dropped", name))
        assert len(kept) + len(dropped) == len(records(os.path.join(local, "kept", name))) + len(
            records(os.path.join(local, "dropped", name)))
    assert len(list(groups_of(os.path.join(spark, "clusters")))) == len(list(groups_of(os.path.join(local, "clusters.jsonl"))))


def test_damaged_archives_are_scanned_to_the_damage_as_on_one_machine(tmp_path, pages):
    warc, jsonl, before_cut = cut_inputs(tmp_path, pages)
    # and a .warc.gz damaged in the middle, read in parts: those past the damage are not taken
    from warcio.archiveiterator import ArchiveIterator

    mid = write_warc(tmp_path / "mid.warc.gz", pages, extra=False)
    with open(mid, "rb") as fh:
        it = ArchiveIterator(fh)
        starts = [it.get_record_offset() for _ in it]
    data = bytearray(open(mid, "rb").read())
    at = starts[len(starts) // 3]
    data[at + 30:at + 60] = bytes(30)
    open(mid, "wb").write(bytes(data))
    assert len(data) > 3 * 100_000
    a, b, (local, spark), _ = both([warc, jsonl, mid], tmp_path, split_bytes=100_000)
    assert [f.get("damaged") for f in b["inputs"]] == [f.get("damaged") for f in a["inputs"]]
    assert all(f.get("damaged") for f in b["inputs"])
    assert (b["pages"], b["kept"], b["dropped"]) == (a["pages"], a["kept"], a["dropped"])
    for sub in ("kept", "dropped"):
        for name in ("cut.warc.gz", "cut.jsonl.gz"):
            assert whole_gzip(os.path.join(spark, sub, name))
    got = {url for sub in ("kept", "dropped") for kind, url, _ in records(os.path.join(spark, sub, "cut.warc.gz"))
           if kind == "response"}
    assert got == before_cut


def test_a_finished_stage_is_not_run_again(tmp_path, pages):
    path = write_jsonl(tmp_path / "crawl.jsonl", pages)
    out = tmp_path / "spark"
    opts = Options(inputs=[str(path)], out=str(out))
    first = SparkScan(opts, master=MASTER, say=lambda line: None).run()
    again: list[str] = []
    done = SparkScan(opts, master=MASTER, say=again.append).run()
    assert done["already_done"] and done["dropped"] == first["dropped"]
    # a job stopped after its pairs: the stages before are not run again
    job_file = out / ".spark" / "job.json"
    job = json.loads(job_file.read_text())
    job["done"] = ["signatures", "pairs"]
    job_file.write_text(json.dumps(job))
    shutil.rmtree(out / ".spark" / "decisions")
    said: list[str] = []
    resumed = SparkScan(opts, master=MASTER, say=said.append).run()
    assert "signatures: done before, not run again" in said and "pairs: done before, not run again" in said
    assert "components: running" in said and resumed["dropped"] == first["dropped"]
    with pytest.raises(ScanError, match="other policy"):
        SparkScan(Options(inputs=[str(path)], out=str(out), policy="first"), master=MASTER).run()
    with pytest.raises(ScanError, match="holds other files"):  # not the one-machine scan's folder
        Scan(opts).run()
    # an input that grew since a stopped job read it is refused, not half scanned
    job = json.loads(job_file.read_text())
    job["done"] = ["signatures"]
    job_file.write_text(json.dumps(job))
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"url": "https://late.example/", "html": "<p>late</p>"}) + "\n")
    with pytest.raises(ScanError, match="changed since this scan read it"):
        SparkScan(opts, master=MASTER).run()


def test_components_and_pairs_in_spark_are_the_python_references(tmp_path):
    from pyspark.sql import SparkSession

    from crawler_dedup.tools.spark_scan.candidates import components_in_spark, pairs, pairs_reference
    from crawler_dedup.tools.spark_scan.signatures import HEAD, KIND_SHIFT, PROBE, TABLE, URL

    rng = random.Random(5)
    edges = [(rng.randrange(300), rng.randrange(300)) for _ in range(260)]
    edges = [(min(a, b), max(a, b)) for a, b in edges if a != b]
    edges += [(i, i + 1) for i in range(400, 460)]  # a long path: several rounds
    # pages in buckets of each kind and size: all with all, neighbours only, over a kind's limit
    fps = {seq: rng.getrandbits(64) for seq in range(1, 700)}
    fps.update({seq: fps[1] ^ (1 << (seq % 64)) for seq in range(2, 40)})  # near the first one
    fps.update({seq: fps[50] for seq in range(51, 60)})  # the same fingerprint: a star
    buckets = {(URL << KIND_SHIFT) | 1: range(1, 101), (TABLE << KIND_SHIFT) | 2: range(1, 60),
               (HEAD << KIND_SHIFT) | 3: range(200, 209), (HEAD << KIND_SHIFT) | 4: range(300, 308),
               (PROBE << KIND_SHIFT) | 5: range(400, 601), (PROBE << KIND_SHIFT) | 6: range(400, 470),
               (TABLE << KIND_SHIFT) | 7: range(600, 700)}
    keys: dict[int, list[int]] = {}
    for key, members in buckets.items():
        for seq in members:
            keys.setdefault(seq, []).append(key)
    signed = {seq: fp - (1 << 64) if fp >= 1 << 63 else fp for seq, fp in fps.items()}
    # sketches: pages 400-439 share most of theirs (verified), the rest share none; pages 650-699
    # are exact copies of 640 (one row before pairing)
    draw = lambda n: [rng.getrandbits(62) - (1 << 61) for _ in range(n)]  # noqa: E731
    common = draw(100)
    sketch = {s: sorted(set(common + draw(28) if 400 <= s < 440 else draw(128))) for s in keys}
    digest = {s: 7 for s in [640, *range(650, 700)]}
    rows = [(s, signed[s], digest.get(s), ks, sketch[s], 500, 10_000 - s if s >= 640 else s)
            for s, ks in keys.items()]  # (places: the copies' first in the policy's order is 699)
    want = pairs_reference(rows, 3)
    spark = SparkSession.builder.master(MASTER).appName("components test").getOrCreate()
    try:
        e = spark.createDataFrame(edges, ["a", "b"])
        got = {r.seq: r.unit for r in components_in_spark(e, str(tmp_path / "cp")).collect()}
        sig = spark.createDataFrame(rows, "seq long, fp long, digest long, keys array<long>, sketch array<long>, "
                                          "shingles long, place long")
        found = {(r.a, r.b) for r in pairs(sig.drop("place"), sig.select("seq", "place"), 3).collect()}
    finally:
        spark.stop()
    assert got == union_find(edges)
    assert found == want and len(want) > 800
    assert {(a, b) for a, b in want if 400 <= a < 601} and all(b < 440 for a, b in want if 400 <= a < 601)
    assert {(640, 699), (650, 699)} <= want and (640, 650) not in want  # the copies: a star on their first


def test_a_huge_bucket_pairs_neighbours_only_and_a_keys_limit_none():
    from crawler_dedup.tools.spark_scan.signatures import HEAD, KIND_SHIFT, PROBE, SITE_HEAD, TABLE, URL

    members = [(i, i * 3, i) for i in range(1000)]  # one URL's 1,000 captures
    pairs = set(bucket_pairs((URL << KIND_SHIFT) | 7, members, 3))
    # each page with its next 8 and with the first, not 499,500 pairs
    assert len(pairs) == 999 * 8 - sum(range(8)) + 999 - 8
    # what the one-machine index stops filing past its limit pairs nothing: a site's name in 9
    # titles, a site's headline on 3 pages, a shingle among the smallest of 201 pages
    head, site, probe = HEAD << KIND_SHIFT, SITE_HEAD << KIND_SHIFT, PROBE << KIND_SHIFT
    assert list(bucket_pairs(head, members[:9], 3)) == [] and len(list(bucket_pairs(head, members[:8], 3))) == 28
    assert list(bucket_pairs(site, members[:3], 3)) == [] and list(bucket_pairs(site, members[:2], 3)) == [(0, 1, True)]
    over = set(bucket_pairs(probe, members[:201], 3))  # past the limit: each page with the first only
    assert over == {(0, i, False) for i in range(1, 201)} and len(set(bucket_pairs(probe, members[:200], 3))) > 200
    assert all(not ok for _, _, ok in bucket_pairs(probe, members[:20], 3))  # a shingle's pairs: verified later
    small = list(bucket_pairs(TABLE << KIND_SHIFT, [(1, 0b0, 1), (2, 0b111, 2), (3, 0b1111, 3)], 3))
    assert small == [(1, 2, True), (2, 3, True)]  # the table's Hamming test: 1 and 3 are 4 bits apart
    # 5,000 pages of one fingerprint: a star on the first in the policy's order, 4,999 pairs
    flood = set(bucket_pairs(TABLE << KIND_SHIFT, [(i, 42, 5000 - i) for i in range(5000)], 3))
    assert len(flood) == 4999 and all(b == 4999 for _, b, _ in flood)


def test_the_command_line(tmp_path, pages):
    path = write_jsonl(tmp_path / "crawl.jsonl", pages)
    r = cli("scan", str(path), "--out", str(tmp_path / "o"), "--engine", "spark", "--master", MASTER, "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["engine"] == "spark" and summary["dropped"] > 20
    assert "decisions: running" in r.stderr
    # not on a terminal: the stage lines only, no progress bar, no start-up warnings, no web UI
    assert "[Stage" not in r.stderr and "\r" not in r.stderr and "WARN Utils" not in r.stderr, r.stderr[-2000:]
    assert "SparkUI" not in r.stderr and "4040" not in r.stderr
    r = cli("scan", str(path), "--out", str(tmp_path / "c"), "--engine", "spark", "--master", MASTER,
            "--spark-conf", "nonsense")
    assert r.returncode == 2 and "--spark-conf takes spark.NAME=VALUE" in r.stderr
    r = cli("scan", str(path), "--out", str(tmp_path / "r"), "--engine", "spark", "-s", "DEDUP_BACKEND=redis")
    assert r.returncode != 0 and "shared index" in r.stderr
    r = cli("scan", str(path), "--out", str(tmp_path / "m"), "--master", MASTER)  # without --engine spark
    assert r.returncode == 2 and "for --engine spark" in r.stderr and not os.path.exists(tmp_path / "m")


def test_spark_submit_runs_the_same_job(tmp_path, pages):
    import subprocess
    import sys

    from crawler_dedup.tools.spark_scan import submit

    submit_bin = os.path.join(os.path.dirname(sys.executable), "spark-submit")
    if not os.path.exists(submit_bin):
        pytest.skip("pyspark's spark-submit is not beside this Python")
    path = write_jsonl(tmp_path / "crawl.jsonl", pages)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    r = subprocess.run([submit_bin, "--master", MASTER, submit.__file__, "scan", str(path), "--out",
                        str(tmp_path / "o"), "--engine", "spark", "--json"], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads(r.stdout[r.stdout.index("{"):])
    local = Scan(Options(inputs=[str(path)], out=str(tmp_path / "local"))).run()
    assert summary["engine"] == "spark" and summary["dropped"] == local["dropped"] > 20


def test_a_decide_task_knows_what_other_components_filed_under_its_site(tmp_path):
    """A page whose text is its site's template beside a few words matches an article of the site
    whose text holds that template. Two other articles of the site (other components, decided
    before it) show the template too: the one-machine index knows them, so the site-boilerplate
    guard keeps the page. A decide task used to know only its component and dropped it; it is
    handed the other components' pages under the template's lines (sites.py) and keeps it."""
    import pickle
    import zlib
    from types import SimpleNamespace

    from crawler_dedup.config import DedupConfig
    from crawler_dedup.core.page.site import holder_of, lines_of
    from crawler_dedup.core.verdict import Step
    from crawler_dedup.tools.spark_scan.decide import decide_partition
    from crawler_dedup.tools.spark_scan.signatures import as_long

    from .crawl_model import article_text

    template = "\n".join(" ".join(article_text(700 + n, 12)) for n in range(16))
    article = "\n".join(" ".join(article_text(800 + n, 15)) for n in range(3)) + "\n" + template
    thin = " ".join(article_text(900, 6)) + "\n" + template
    config = DedupConfig.from_settings({"DEDUP_BACKEND": "memory"})

    def row(seq, url, text, place):
        return SimpleNamespace(seq=seq, url=url, words=len(text.split()), time=None, score=None, canonical=None,
                               file_no=0, body=None, place=place,
                               result=zlib.compress(pickle.dumps((Step.TEXT, text, None))))

    rows = [row(1, "https://s.example/article", article, 0), row(2, "https://s.example/thin", thin, 5)]
    alone = {r[0]: r for r in decide_partition(rows, config, ("longest",), frozenset({0}))}
    assert alone[2][2] == 1, alone[2]  # dropped: the task knew no other page of the site
    keys = [as_long(k) for k in lines_of(template, "https://s.example/x").filed]
    others = [SimpleNamespace(place=p, kind="l", key=k, holder=holder_of(u) - (1 << 64) if holder_of(u) >= 1 << 63
                              else holder_of(u), from_unit=9)
              for p, u in ((1, "https://s.example/other1"), (2, "https://s.example/other2")) for k in keys]
    told = {r[0]: r for r in decide_partition(rows, config, ("longest",), frozenset({0}), others)}
    assert told[2][2] == 0 and told[1][2] == 0, told[2]  # kept, as the one-machine scan keeps it


def test_template_heavy_sites_decide_as_the_one_machine_scan(tmp_path):
    """12 sites, each: a page that is mostly the site's template, a thin page that is the template
    and six words, three long articles in the template. The thin page matches the first one only;
    the articles (other components) show the template too, so the one-machine scan's guard keeps
    it. Spark used to know only the component (7 drops against none); the sites stage gives each
    task what the other components filed under its lines."""
    from .crawl_model import article_text

    rows = []
    for s in range(12):
        template = "\n".join(" ".join(article_text(s * 1000 + n, 12)) for n in range(16))
        pages = [("anchor", 3, s * 10_000 + 100)] + [(f"long{b}", 200, s * 10_000 + 1000 * (b + 1)) for b in range(3)]
        for name, lines, seed in pages:
            own = "\n".join(" ".join(article_text(seed + n, 15)) for n in range(lines))
            rows.append({"url": f"https://site{s}.example/{name}", "text": own + "\n" + template})
        rows.append({"url": f"https://site{s}.example/thin", "text": " ".join(article_text(s + 90_000, 6)) + "\n" + template})
    random.Random(3).shuffle(rows)
    path = tmp_path / "sites.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    a, b, (local, spark), said = both([path], tmp_path)
    assert a["dropped"] == b["dropped"] == 0, (a["by_reason"], b["by_reason"])
    assert b["largest_component"] >= 2 and any("groups of two or more" in line for line in said)


@pytest.fixture
def s3(monkeypatch, tmp_path):
    """A real S3-compatible server on 127.0.0.1 (moto's server mode), its environment set as a
    user's would be; yields a boto3 client."""
    import subprocess
    import sys
    import time

    boto3 = pytest.importorskip("boto3")
    server = os.path.join(os.path.dirname(sys.executable), "moto_server")
    if not os.path.exists(server):
        pytest.skip("moto's server is not installed (pip install 'moto[server]': the dev extra has it)")
    from .conftest import free_port

    port = free_port()
    proc = subprocess.Popen([server, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "test",
           "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # (the stages' data of an --out on S3)
    from crawler_dedup.tools import files

    files._fs.cache_clear()
    client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"])
    for _ in range(200):
        try:
            client.list_buckets()
            break
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.05)
    try:
        yield client
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        files._fs.cache_clear()


def test_a_component_past_the_limit_is_decided_in_pieces_as_on_one_machine(tmp_path, pages):
    """A flood (one article under 70 URLs, a parked page on 40 hosts, a short notice on 50 hosts
    that the score keeps apart) among the groups, decided in pieces of 16 pages: the drops are the
    one-machine scan's, and the summary says how large a piece was."""
    flood = [(f"https://m{i}.example/story", pages[0][1], pages[0][2]) for i in range(70)]
    parked = [(f"https://parked{i}.example/", (f"<html><body><p>parked{i}.example is for sale. The domain "
               f"parked{i}.example may be available. " + "Related searches: travel, insurance, loans, hotels, "
               "flights, credit cards, cheap tickets, best deals. " * 3 + "</p></body></html>").encode(), None)
              for i in range(40)]
    notice = [(f"https://s{i}.example/missing", "<html><body><p>Page not found. The page you are looking for "
               "does not exist, was moved or is temporarily unavailable. Please check the address or go back "
               "to the home page.</p></body></html>".encode(), None) for i in range(50)]
    mixed = pages + flood + parked + notice
    random.Random(7).shuffle(mixed)
    path = write_jsonl(tmp_path / "crawl.jsonl", mixed)
    a, b, (local, spark), _ = both([path], tmp_path, piece=16, spark_conf=[("spark.sql.shuffle.partitions", "5")])
    assert b["shuffle_partitions"] == 5  # the user's setting over the job's own (and --partitions unset here)
    agree = agreement(local, spark)
    assert a["dropped"] > 100 and agree["differ"] == 0, agree
    assert b["largest_component"] >= 70 and b["components_in_pieces"] >= 2 and b["largest_decided_in_one_task"] == 16


def test_a_job_stopped_after_the_drop_logs_parts_went_keeps_every_line(tmp_path, pages, monkeypatch):
    """--join-outputs: the job dies just after the parts of the joined drop log are removed; run
    again, it finishes with every line (never an empty or half file from parts no longer there)."""
    from crawler_dedup.tools import files

    path = write_jsonl(tmp_path / "crawl.jsonl", pages)
    local = Scan(Options(inputs=[str(path)], out=str(tmp_path / "local"))).run()
    out = tmp_path / "spark"
    opts = Options(inputs=[str(path)], out=str(out))
    real = files.remove

    def remove(p):
        real(p)
        if str(p).endswith(os.sep + "droplog") and os.path.isfile(str(p) + ".jsonl"):  # (the parts, once joined)
            raise RuntimeError("killed")

    monkeypatch.setattr(files, "remove", remove)
    with pytest.raises(RuntimeError, match="killed"):
        SparkScan(opts, master=MASTER, say=lambda line: None, join_outputs=True).run()
    assert not (out / "droplog").exists() and (out / "droplog.jsonl").is_file()
    monkeypatch.setattr(files, "remove", real)
    again = SparkScan(opts, master=MASTER, say=lambda line: None, join_outputs=True).run()
    assert again["droplog"] == str(out / "droplog.jsonl") and not (out / "droplog").exists()
    with open(out / "droplog.jsonl", encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    with open(tmp_path / "local" / "droplog.jsonl", encoding="utf-8") as fh:
        assert len(lines) == len(fh.read().splitlines()) and len(lines) >= local["dropped"] > 20
    assert agreement(str(tmp_path / "local"), str(out))["differ"] == 0


def test_inputs_and_outputs_on_an_object_store(tmp_path, pages, s3, monkeypatch):
    """An S3 feed read and the outputs written back to S3 (a local S3-compatible server): the same
    drops and the same kept records as the one-machine scan of the same files here; an --out the
    job cannot write is said before any work."""
    from crawler_dedup.tools import files

    s3.create_bucket(Bucket="crawl")
    path = write_jsonl(tmp_path / "crawl.jsonl", pages)
    half = len(pages) // 2
    warc = write_warc(tmp_path / "a.warc.gz", pages[:half])
    for local_path, key in ((path, "in/crawl.jsonl"), (warc, "in/a.warc.gz")):
        s3.upload_file(str(local_path), "crawl", key)
    local = Scan(Options(inputs=[str(path), str(warc)], out=str(tmp_path / "local"))).run()
    inputs = files.expand(["s3://crawl/in/*.jsonl", "s3a://crawl/in/a.warc.gz"])  # a glob: one listing
    assert inputs == ["s3://crawl/in/crawl.jsonl", "s3a://crawl/in/a.warc.gz"]
    summary = SparkScan(Options(inputs=inputs, out="s3://crawl/out"), master=MASTER, say=lambda line: None,
                        join_outputs=True).run()
    assert (summary["pages"], summary["kept"], summary["dropped"]) == (local["pages"], local["kept"], local["dropped"])
    assert summary["shuffle_partitions"] == 4  # nothing set: from the input's size, at least twice local[2]'s cores
    got = {o["Key"] for o in s3.list_objects_v2(Bucket="crawl", Prefix="out/")["Contents"]}
    assert {"out/kept/crawl.jsonl", "out/dropped/a.warc.gz", "out/droplog.jsonl", "out/clusters.jsonl",
            "out/summary.json"} <= got and not any(k.startswith(("out/droplog/", "out/clusters/")) for k in got)
    body = s3.get_object(Bucket="crawl", Key="out/kept/crawl.jsonl")["Body"].read().decode("utf-8")
    with open(tmp_path / "local" / "kept" / "crawl.jsonl", encoding="utf-8") as fh:
        assert sorted(body.splitlines()) == sorted(fh.read().splitlines())
    lines = s3.get_object(Bucket="crawl", Key="out/droplog.jsonl")["Body"].read().decode("utf-8").splitlines()
    assert len(lines) == local["dropped"] and all(json.loads(x)["source"]["file"].startswith("s3") for x in lines)
    with pytest.raises(ScanError, match="cannot be written"):
        SparkScan(Options(inputs=["s3://crawl/in/crawl.jsonl"], out="s3://no-such-bucket/out"), master=MASTER).run()
    with pytest.raises(ScanError, match="no such file"):
        SparkScan(Options(inputs=["s3://crawl/in/missing.jsonl"], out="s3://crawl/out2"), master=MASTER).run()
    # the one-machine scan reads and writes the same URLs (its state and index in this machine's cache)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    one = Scan(Options(inputs=inputs, out="s3://crawl/one")).run()
    assert (one["pages"], one["kept"], one["dropped"]) == (local["pages"], local["kept"], local["dropped"])
    assert one["droplog"] == "s3://crawl/one/droplog.jsonl" and one["staged"].startswith(str(tmp_path / "cache"))
    got = {o["Key"] for o in s3.list_objects_v2(Bucket="crawl", Prefix="one/")["Contents"]}
    assert {"one/kept/crawl.jsonl", "one/dropped/a.warc.gz", "one/droplog.jsonl", "one/clusters.jsonl",
            "one/summary.json"} <= got and not any(k.startswith(("one/.scan", "one/index")) for k in got)
    mine = s3.get_object(Bucket="crawl", Key="one/droplog.jsonl")["Body"].read().decode("utf-8").splitlines()
    assert len(mine) == len(lines)
    with pytest.raises(ScanError, match="cannot be written"):
        Scan(Options(inputs=inputs, out="s3://no-such-bucket/out")).run()
