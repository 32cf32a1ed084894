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


def both(inputs, tmp_path, policy="longest", **kw):
    """The one-machine scan and the Spark scan of `inputs`: (local summary, spark summary, outs, lines said)."""
    said = []
    local, spark = tmp_path / "local", tmp_path / "spark"
    a = Scan(Options(inputs=[str(p) for p in inputs], out=str(local), policy=policy)).run()
    b = SparkScan(Options(inputs=[str(p) for p in inputs], out=str(spark), policy=policy), master=MASTER,
                  say=said.append, partitions=3, **kw).run()
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
    with open(os.path.join(local, "clusters.jsonl"), encoding="utf-8") as fa, \
            open(os.path.join(spark, "clusters.jsonl"), encoding="utf-8") as fb:
        assert sorted(map(json.loads, fa), key=json.dumps) == sorted(map(json.loads, fb), key=json.dumps)


def test_warc_and_another_policy_decide_as_the_one_machine_scan(tmp_path, pages):
    half = len(pages) // 2
    w1 = write_warc(tmp_path / "a.warc.gz", pages[:half])
    w2 = write_warc(tmp_path / "b.warc.gz", pages[half:], revisit_of=pages[half][0])
    a, b, (local, spark), _ = both([w1, w2], tmp_path, policy="shortest-url")
    agree = agreement(local, spark)
    assert a["dropped"] > 20 and agree["differ_share"] <= 0.01, agree
    assert b["revisits"] == a["revisits"] and b["passed"] == a["passed"]
    for name in ("a.warc.gz", "b.warc.gz"):  # each record in one output (warcinfo in both)
        kept, dropped = records(os.path.join(spark, "kept", name)), records(os.path.join(spark, "dropped", name))
        assert len(kept) + len(dropped) == len(records(os.path.join(local, "kept", name))) + len(
            records(os.path.join(local, "dropped", name)))
    with open(os.path.join(spark, "clusters.jsonl"), encoding="utf-8") as fh:
        groups = [json.loads(line) for line in fh]
    with open(os.path.join(local, "clusters.jsonl"), encoding="utf-8") as fh:
        assert len(groups) == sum(1 for _ in fh)


def test_damaged_archives_are_scanned_to_the_damage_as_on_one_machine(tmp_path, pages):
    warc, jsonl, before_cut = cut_inputs(tmp_path, pages)
    a, b, (local, spark), _ = both([warc, jsonl], tmp_path)
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

    from crawler_dedup.tools.spark_scan.candidates import components_in_spark, pairs
    from crawler_dedup.tools.spark_scan.signatures import HEAD, KIND_SHIFT, PROBE, TABLE, URL

    rng = random.Random(5)
    edges = [(rng.randrange(300), rng.randrange(300)) for _ in range(260)]
    edges = [(min(a, b), max(a, b)) for a, b in edges if a != b]
    edges += [(i, i + 1) for i in range(400, 460)]  # a long path: several rounds
    # pages in buckets of each kind and size: all with all, neighbours only, over a kind's limit
    fps = {seq: rng.getrandbits(64) for seq in range(1, 700)}
    fps.update({seq: fps[1] ^ (1 << (seq % 64)) for seq in range(2, 40)})  # near the first one
    buckets = {(URL << KIND_SHIFT) | 1: range(1, 101), (TABLE << KIND_SHIFT) | 2: range(1, 60),
               (HEAD << KIND_SHIFT) | 3: range(200, 209), (HEAD << KIND_SHIFT) | 4: range(300, 308),
               (PROBE << KIND_SHIFT) | 5: range(400, 601), (PROBE << KIND_SHIFT) | 6: range(400, 470)}
    keys: dict[int, list[int]] = {}
    for key, members in buckets.items():
        for seq in members:
            keys.setdefault(seq, []).append(key)
    signed = {seq: fp - (1 << 64) if fp >= 1 << 63 else fp for seq, fp in fps.items()}
    want = {pair for key, members in buckets.items()
            for pair in bucket_pairs(key, [(s, signed[s]) for s in members], 3)}
    spark = SparkSession.builder.master(MASTER).appName("components test").getOrCreate()
    try:
        e = spark.createDataFrame(edges, ["a", "b"])
        got = {r.seq: r.unit for r in components_in_spark(e, str(tmp_path / "cp")).collect()}
        sig = spark.createDataFrame([(s, signed[s], ks) for s, ks in keys.items()], ["seq", "fp", "keys"])
        found = {(r.a, r.b) for r in pairs(sig, 3).collect()}
    finally:
        spark.stop()
    assert got == union_find(edges)
    assert found == want and len(want) > 1500


def test_a_huge_bucket_pairs_neighbours_only_and_a_keys_limit_none():
    from crawler_dedup.tools.spark_scan.signatures import HEAD, KIND_SHIFT, PROBE, SITE_HEAD, TABLE, URL

    members = [(i, i * 3) for i in range(1000)]  # one URL's 1,000 captures
    pairs = list(bucket_pairs((URL << KIND_SHIFT) | 7, members, 3))
    assert len(pairs) == 999 * 8 - sum(range(8))  # each page with its next 8, not 499,500 pairs
    # what the one-machine index stops filing past its limit pairs nothing: a site's name in 9
    # titles, a site's headline on 3 pages, a shingle among the smallest of 201 pages
    head, site, probe = HEAD << KIND_SHIFT, SITE_HEAD << KIND_SHIFT, PROBE << KIND_SHIFT
    assert list(bucket_pairs(head, members[:9], 3)) == [] and len(list(bucket_pairs(head, members[:8], 3))) == 28
    assert list(bucket_pairs(site, members[:3], 3)) == [] and list(bucket_pairs(site, members[:2], 3)) == [(0, 1)]
    assert list(bucket_pairs(probe, members[:201], 3)) == [] and list(bucket_pairs(probe, members[:200], 3))
    small = list(bucket_pairs(TABLE << KIND_SHIFT, [(1, 0b0), (2, 0b111), (3, 0b1111)], 3))
    assert small == [(1, 2), (2, 3)]  # the table's Hamming test: 1 and 3 are 4 bits apart


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


def test_inputs_and_outputs_on_an_object_store(tmp_path, pages, s3):
    """An S3 feed read and the outputs written back to S3 (a local S3-compatible server): the same
    drops and the same kept records as the one-machine scan of the same files here; an --out the
    job cannot write is said before any work."""
    s3.create_bucket(Bucket="crawl")
    path = write_jsonl(tmp_path / "crawl.jsonl", pages)
    half = len(pages) // 2
    warc = write_warc(tmp_path / "a.warc.gz", pages[:half])
    for local_path, key in ((path, "in/crawl.jsonl"), (warc, "in/a.warc.gz")):
        s3.upload_file(str(local_path), "crawl", key)
    local = Scan(Options(inputs=[str(path), str(warc)], out=str(tmp_path / "local"))).run()
    summary = SparkScan(Options(inputs=["s3://crawl/in/crawl.jsonl", "s3a://crawl/in/a.warc.gz"],
                                out="s3://crawl/out"), master=MASTER, say=lambda line: None).run()
    assert (summary["pages"], summary["kept"], summary["dropped"]) == (local["pages"], local["kept"], local["dropped"])
    got = {o["Key"] for o in s3.list_objects_v2(Bucket="crawl", Prefix="out/")["Contents"]}
    assert {"out/kept/crawl.jsonl", "out/dropped/a.warc.gz", "out/droplog.jsonl", "out/clusters.jsonl",
            "out/summary.json"} <= got and not any(".droplog-parts" in k for k in got)
    body = s3.get_object(Bucket="crawl", Key="out/kept/crawl.jsonl")["Body"].read().decode("utf-8")
    with open(tmp_path / "local" / "kept" / "crawl.jsonl", encoding="utf-8") as fh:
        assert sorted(body.splitlines()) == sorted(fh.read().splitlines())
    lines = s3.get_object(Bucket="crawl", Key="out/droplog.jsonl")["Body"].read().decode("utf-8").splitlines()
    assert len(lines) == local["dropped"] and all(json.loads(x)["source"]["file"].startswith("s3") for x in lines)
    with pytest.raises(ScanError, match="cannot be written"):
        SparkScan(Options(inputs=["s3://crawl/in/crawl.jsonl"], out="s3://no-such-bucket/out"), master=MASTER).run()
    with pytest.raises(ScanError, match="no such file"):
        SparkScan(Options(inputs=["s3://crawl/in/missing.jsonl"], out="s3://crawl/out2"), master=MASTER).run()
    with pytest.raises(ScanError, match="with --engine spark"):
        Scan(Options(inputs=["s3://crawl/in/crawl.jsonl"], out=str(tmp_path / "x"))).run()
